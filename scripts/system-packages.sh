#!/usr/bin/env bash
# The Debian packages a make target needs, installed with apt-get when missing (one dpkg query when none is):
#   venv     Python's venv module (Debian ships it as python3-venv), and python3 itself where there is none
#   browser  Chromium, which the browser tests drive (/usr/bin/chromium)
#   display  Xvfb and xauth: a virtual display for the desktop window's tests
#   qt       Qt 6's system libraries for the desktop window (PyQt6 and QtWebEngine come from their wheels)
# Installing needs root (or sudo without a password) and apt-get. Where that is impossible it says in one line what
# is missing and exits 0: the tests that need it skip with a reason, and fail under CI=true (tests/conftest.py).
set -uo pipefail

QT=(
  libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-randr0 libxcb-shape0
  libxcb-xkb1 libxcb-xfixes0 libxcb-sync1 libxcb-shm0 libxcb-glx0 libxcb-dri3-0 libxkbcommon0 libxkbcommon-x11-0
  libxkbfile1 libx11-xcb1 libxcomposite1 libxdamage1 libxrandr2 libxtst6 libxext6 libxfixes3 libxrender1
  libegl1 libgl1 libgbm1 libdrm2 libnss3 libnspr4 libasound2 libfontconfig1 libfreetype6 libdbus-1-3 fonts-dejavu-core
)
plain=()       # installed without their recommended packages
recommended=() # installed with them, as a user's `apt-get install chromium` would (fonts among them)
for group in "$@"; do
  case "$group" in
    venv)
      python=${PYTHON:-$(command -v python3.11 || command -v python3 || true)}
      if [ -z "$python" ]; then
        plain+=(python3 python3-venv)
      elif ! "$python" -c "import ensurepip, venv" 2>/dev/null; then
        case "$(readlink -f "$python")" in
          /usr/bin/*) plain+=(python3-venv "python$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv") ;;
          *) echo "system-packages: $python has no venv module, and it is not Debian's Python" >&2 ;;
        esac
      fi ;;
    browser) recommended+=(chromium) ;;
    display) plain+=(xvfb xauth) ;;
    qt) plain+=("${QT[@]}") ;;
    *) echo "system-packages: unknown group '$group' (venv, browser, display, qt)" >&2; exit 2 ;;
  esac
done
wanted=("${plain[@]}" "${recommended[@]}")
[ ${#wanted[@]} -eq 0 ] && exit 0

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "system-packages: not a Debian system; tests that need these skip until they are installed: ${wanted[*]}" >&2
  exit 0
fi
declare -A installed=()
while read -r name; do installed[$name]=1; done < <(
  # Debian 13 renamed some libraries (libasound2 -> libasound2t64): either name counts.
  dpkg-query -W -f='${Status} ${Package}\n' "${wanted[@]}" "${wanted[@]/%/t64}" 2>/dev/null \
    | awk '$3 == "installed" {print $4}')
missing() {
  local package
  for package in "$@"; do
    [ -n "${installed[$package]:-}${installed[${package}t64]:-}" ] || printf '%s\n' "$package"
  done
}
mapfile -t plain < <(missing "${plain[@]}")
mapfile -t recommended < <(missing "${recommended[@]}")
missing=("${plain[@]}" "${recommended[@]}")
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  echo "system-packages: not installed (apt-get needs root): ${missing[*]}; the tests that need them will skip" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "system-packages: no apt-get to install ${missing[*]}; the tests that need them will skip" >&2
  exit 0
fi
echo "system-packages: installing ${missing[*]} with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt_get() {  # quiet, waiting for another apt to finish; errors shown, debconf's note on apt-utils not
  "${as_root[@]}" apt-get -y -qq -o DPkg::Lock::Timeout=300 "$@" > /dev/null 2> >(grep -v "^debconf: delaying" >&2)
}
apt_get update || echo "system-packages: apt-get update failed; installing from the lists there are" >&2
install() {  # install [--no-install-recommends] PACKAGE...: all at once, else one by one
  local options=() package
  [ "${1:-}" = --no-install-recommends ] && { options=("$1"); shift; }
  [ $# -eq 0 ] && return
  apt_get install "${options[@]}" "$@" && return
  for package in "$@"; do  # one name this release lacks must not keep the others out
    apt_get install "${options[@]}" "$package" || echo "system-packages: $package could not be installed" >&2
  done
}
install --no-install-recommends "${plain[@]}"
install "${recommended[@]}"
exit 0
