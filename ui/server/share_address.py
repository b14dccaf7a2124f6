"""The address a room can open: share links and presenter mode's QR code name the studio by an address other machines
reach (a public address if one is set, else the machine's network address), never the loopback one a speaker's
browser used."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from .settings import public_url

ANY_ADDRESS = ("", "0.0.0.0", "::")  # Streamlit's server.address when it listens on every interface


@dataclass(frozen=True)
class ShareAddress:
    """A page's address as others open it (no query), how the presenter is shown it, and whether others can."""

    url: str
    shown: str  # host[:port] (and a public address's path), what the caption under the QR code says
    reachable: bool  # False: a loopback address only this machine opens (no network address was found)


def is_loopback(host: str) -> bool:
    """Whether a host name or address means this machine only: localhost, 127.0.0.0/8, ::1, 0.0.0.0."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def network_address() -> str | None:
    """This machine's address on its network, the one Streamlit prints as "Network URL"; None when there is none or
    the server listens on a loopback address only."""
    from streamlit import config, net_util

    bound = str(config.get_option("server.address") or "").strip()
    if bound not in ANY_ADDRESS:
        return None if bound.startswith("unix:") or is_loopback(bound) else bound
    found = net_util.get_internal_ip()  # the address of the route out (127.0.0.1 when there is none)
    return None if not found or is_loopback(found) else found


def _page_path(path: str) -> str:
    """The page's path under the server's base path (server.baseUrlPath), e.g. "/decode"."""
    from streamlit import config

    base = str(config.get_option("server.baseUrlPath") or "").strip("/")
    if base and (path == f"/{base}" or path.startswith(f"/{base}/")):
        return path[len(base) + 1:]
    return path


def share_address(page_url: str) -> ShareAddress:
    """The address of the page at `page_url` (the one the browser used) as the room opens it: under
    $ATTENTION_STUDIO_PUBLIC_URL if set; else, for a loopback host, the same scheme, port and path on the machine's
    network address; else `page_url` itself."""
    page = urlsplit(page_url)
    public = public_url()
    if public is not None:
        base = urlsplit(public if "://" in public else f"http://{public}")
        prefix = base.path.rstrip("/")
        return ShareAddress(urlunsplit((base.scheme, base.netloc, prefix + _page_path(page.path), "", "")),
                            base.netloc + prefix, True)
    if not page.hostname or not is_loopback(page.hostname):
        return ShareAddress(page_url, page.netloc, True)
    found = network_address()
    if found is None:
        return ShareAddress(page_url, page.netloc, False)
    netloc = f"[{found}]" if ":" in found else found
    if page.port is not None:
        netloc += f":{page.port}"
    return ShareAddress(urlunsplit((page.scheme, netloc, page.path, "", "")), netloc, True)
