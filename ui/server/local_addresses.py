"""This machine's own addresses on every interface, read with the standard library: a browser that connects from any
of them is on the speaker's machine, whichever form the server hears it in (IPv4, IPv6, or IPv4 mapped into IPv6 by
a dual-stack listener: `::ffff:192.0.2.2`)."""
from __future__ import annotations

import ipaddress
import socket
import time
from pathlib import Path

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
FIB_TRIE = Path("/proc/net/fib_trie")  # Linux: every IPv4 route, this machine's own addresses marked "host LOCAL"
IF_INET6 = Path("/proc/net/if_inet6")  # Linux: every IPv6 address of every interface
_KEEP_S = 10.0  # interfaces come and go (Wi-Fi, a VPN): read again after this long
_found: tuple[float, frozenset[Address]] | None = None


def canonical(address: str) -> Address | None:
    """An address in one form: brackets and an IPv6 zone (`%eth0`) dropped, IPv4 mapped into IPv6 unwrapped; None
    for something that is not an address (a host name)."""
    text = address.strip().strip("[]").split("%", 1)[0]
    try:
        found = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def fib_trie_locals(text: str) -> set[str]:
    """The IPv4 addresses /proc/net/fib_trie marks as this machine's ("/32 host LOCAL" under "|-- 192.0.2.2")."""
    found, last = set(), None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|--"):
            last = stripped[3:].strip()
        elif last and stripped.endswith("host LOCAL"):
            found.add(last)
    return found


def if_inet6_addresses(text: str) -> set[str]:
    """The IPv6 addresses in /proc/net/if_inet6 (one a line, 32 hex digits first)."""
    found = set()
    for line in text.splitlines():
        fields = line.split()
        if fields and len(fields[0]) == 32:
            found.add(str(ipaddress.IPv6Address(int(fields[0], 16))))
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:  # not Linux, or /proc not mounted
        return ""


def _resolved() -> set[str]:
    """What the machine's own name resolves to: where there is no /proc (macOS, Windows), the interfaces the system
    lists for it."""
    try:
        return {str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)}
    except (OSError, UnicodeError):
        return set()


def machine_addresses() -> frozenset[Address]:
    """Every address of this machine, canonical (`canonical`): each interface's IPv4 and IPv6 addresses (/proc; else
    what the machine's name resolves to) and the route out; read again every few seconds."""
    global _found
    now = time.monotonic()
    if _found is not None and now - _found[0] < _KEEP_S:
        return _found[1]
    from streamlit import net_util

    texts = fib_trie_locals(_read(FIB_TRIE)) | if_inet6_addresses(_read(IF_INET6))
    texts |= _resolved() if not texts else set()  # a name lookup can wait on DNS: only where /proc says nothing
    texts.add(net_util.get_internal_ip() or "")
    addresses = frozenset(a for a in map(canonical, texts) if a is not None)
    _found = (now, addresses)
    return addresses


def forget_addresses() -> None:
    """Read the interfaces again on the next call (tests; a network that just changed)."""
    global _found
    _found = None


def is_this_machine(address: str) -> bool:
    """Whether a client address is one of this machine's own, in any form (loopback included)."""
    found = canonical(address)
    return found is not None and (found.is_loopback or found in machine_addresses())
