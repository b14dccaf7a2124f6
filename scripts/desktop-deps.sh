#!/usr/bin/env bash
# The Debian packages the desktop window (Qt 6 and QtWebEngine from PyQt6's wheels) needs, installed when missing.
# Extra package names given as arguments are installed too (CI adds xvfb and xauth for a virtual display).
set -euo pipefail
PACKAGES=(
  libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-randr0 libxcb-shape0
  libxcb-xkb1 libxcb-xfixes0 libxcb-sync1 libxcb-shm0 libxcb-glx0 libxcb-dri3-0 libxkbcommon0 libxkbcommon-x11-0
  libxkbfile1 libx11-xcb1 libxcomposite1 libxdamage1 libxrandr2 libxtst6 libxext6 libxfixes3 libxrender1
  libegl1 libgl1 libgbm1 libdrm2 libnss3 libnspr4 libasound2 libfontconfig1 libfreetype6 libdbus-1-3 fonts-dejavu-core
  "$@"
)
missing=()
for package in "${PACKAGES[@]}"; do
  for name in "$package" "${package}t64"; do  # Debian 13 renamed some libraries (libasound2t64)
    dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q "install ok installed" && continue 2
  done
  missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "the desktop window needs these Debian packages: ${missing[*]}; install them as root (apt-get install ...)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
if ! "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  for package in "${missing[@]}"; do  # one name this release lacks must not keep the others out
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "$package" >/dev/null \
      || echo "desktop-deps: $package could not be installed" >&2
  done
fi
