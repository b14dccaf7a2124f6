"""Who is audience and which address the room opens, without a page: the client address as st.context reads it, the
server's setting, a public address, the machine's network address in place of a loopback one."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from ui.server import (
    AUDIENCE_ENV,
    PUBLIC_URL_ENV,
    client_address,
    is_audience,
    is_local,
    is_loopback,
    network_address,
    share_address,
    speaker_only,
)

NETWORK = "203.0.113.7"  # the speaker's laptop on the room's network (a documentation address)
PHONE = "198.51.100.23"  # a phone in the room


@pytest.fixture
def room(monkeypatch):
    """The machine's network address is NETWORK (what Streamlit prints as "Network URL"); no setting is made."""
    monkeypatch.setattr("streamlit.net_util.get_internal_ip", lambda: NETWORK)
    monkeypatch.delenv(PUBLIC_URL_ENV, raising=False)
    monkeypatch.delenv(AUDIENCE_ENV, raising=False)


def connect_from(monkeypatch, address: str | None) -> None:
    """The session's browser connects from `address` (the websocket's peer, which st.context.ip_address reads)."""
    client = SimpleNamespace(remote_ip=address, headers={}, cookies={})
    monkeypatch.setattr("streamlit.runtime.context._get_client_context", lambda: client)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "0.0.0.0",
                                  "::ffff:127.0.0.1", "app.localhost"])
def test_loopback_hosts_are_this_machine_only(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", [NETWORK, PHONE, "fe80::1", "studio.example", "10.0.0.4"])
def test_other_hosts_are_not_loopback(host):
    assert not is_loopback(host)


def test_the_client_address_is_what_st_context_reads_and_loopback_reads_as_none(room, monkeypatch):
    connect_from(monkeypatch, PHONE)
    assert client_address() == PHONE
    connect_from(monkeypatch, "127.0.0.1")  # Streamlit itself says None for its own machine
    assert client_address() is None
    monkeypatch.setattr("streamlit.runtime.context._get_client_context", lambda: None)  # no browser at all
    assert client_address() is None


def test_sessions_from_other_machines_are_audience_and_this_machine_is_the_speaker(room, monkeypatch):
    for address, audience in ((PHONE, True), ("fe80::1", True), ("127.0.0.1", False), ("::1", False),
                              (NETWORK, False), (None, False)):  # NETWORK: the speaker opened the Network URL
        connect_from(monkeypatch, address)
        assert is_audience() is audience, address
    assert is_local(None) and is_local(NETWORK) and not is_local(PHONE)


def test_a_speakers_callback_does_nothing_in_an_audience_session(room, monkeypatch):
    """Behind every refused control: its callback, were a forged click to reach it, does nothing."""
    calls = []
    start = speaker_only(lambda: calls.append("started"))
    connect_from(monkeypatch, PHONE)
    start()
    connect_from(monkeypatch, None)
    start()
    assert calls == ["started"]


@pytest.mark.parametrize(("setting", "phone", "speaker"), [("remote", True, False), ("none", False, False),
                                                            ("all", True, True), ("garbled", True, False)])
def test_the_server_setting_decides_who_is_audience(room, monkeypatch, setting, phone, speaker):
    monkeypatch.setenv(AUDIENCE_ENV, setting)
    connect_from(monkeypatch, PHONE)
    assert is_audience() is phone
    connect_from(monkeypatch, None)
    assert is_audience() is speaker


def test_a_page_opened_on_localhost_is_shared_at_the_machines_network_address(room):
    for page in ("http://localhost:8501/decode", "http://127.0.0.1:8501/decode", "http://[::1]:8501/decode"):
        address = share_address(page)
        assert address.url == f"http://{NETWORK}:8501/decode" and address.shown == f"{NETWORK}:8501"
        assert address.reachable
    assert network_address() == NETWORK


def test_a_page_opened_on_a_reachable_address_is_shared_as_it_is(room):
    assert share_address("http://studio.example:8501/attention").url == "http://studio.example:8501/attention"
    assert share_address(f"http://{NETWORK}:8501/").url == f"http://{NETWORK}:8501/"


def test_a_public_address_overrides_every_other(room, monkeypatch):
    monkeypatch.setenv(PUBLIC_URL_ENV, "https://talk.example.org/studio/")
    address = share_address("http://localhost:8501/decode")
    assert (address.url, address.shown, address.reachable) == ("https://talk.example.org/studio/decode",
                                                               "talk.example.org/studio", True)
    monkeypatch.setenv(PUBLIC_URL_ENV, "10.1.2.3:8600")  # no scheme: http
    assert share_address("http://studio.example:8501/attention").url == "http://10.1.2.3:8600/attention"


def test_without_a_network_the_link_stays_loopback_and_says_so(room, monkeypatch):
    monkeypatch.setattr("streamlit.net_util.get_internal_ip", lambda: "127.0.0.1")  # Streamlit's answer offline
    address = share_address("http://localhost:8501/decode")
    assert (address.url, address.reachable) == ("http://localhost:8501/decode", False)
    assert network_address() is None


def test_a_server_listening_on_loopback_only_has_no_network_address(room, monkeypatch):
    from streamlit import config

    options = config.get_option
    monkeypatch.setattr(config, "get_option", lambda key: "127.0.0.1" if key == "server.address" else options(key))
    assert network_address() is None and not share_address("http://127.0.0.1:8501/").reachable


def test_this_machines_own_network_address_is_not_loopback():
    """The real reading (no stand-in): Streamlit's "Network URL" address, where this machine has one."""
    found = network_address()
    if found is None:
        pytest.skip("this machine has no network address")
    assert not is_loopback(found)


FIB_TRIE = """Main:
  +-- 0.0.0.0/0 3 0 5
     +-- 127.0.0.0/8 2 0 2
           |-- 127.0.0.1
              /32 host LOCAL
     +-- 192.0.2.0/24 2 0 2
           |-- 192.0.2.0
              /24 link UNICAST
           |-- 192.0.2.2
              /32 host LOCAL
        |-- 192.0.2.255
           /32 link BROADCAST
     +-- 10.8.0.0/24 2 0 2
           |-- 10.8.0.5
              /32 host LOCAL
"""
IF_INET6 = """20010db8000000000000000000000005 02 40 00 80     wlan0
fe800000000000000000000000000005 02 40 20 80     wlan0
00000000000000000000000000000001 01 80 10 80       lo
"""


@pytest.fixture
def two_interfaces(monkeypatch, tmp_path):
    """A laptop on Wi-Fi (192.0.2.2, 2001:db8::5, fe80::5; the route out) and a VPN (10.8.0.5), served dual-stack."""
    from ui.server import forget_addresses, local_addresses

    (tmp_path / "fib_trie").write_text(FIB_TRIE)
    (tmp_path / "if_inet6").write_text(IF_INET6)
    monkeypatch.setattr(local_addresses, "FIB_TRIE", tmp_path / "fib_trie")
    monkeypatch.setattr(local_addresses, "IF_INET6", tmp_path / "if_inet6")
    monkeypatch.setattr("streamlit.net_util.get_internal_ip", lambda: "192.0.2.2")
    monkeypatch.delenv(AUDIENCE_ENV, raising=False)
    forget_addresses()
    yield
    forget_addresses()


@pytest.mark.parametrize("address", ["192.0.2.2", "::ffff:192.0.2.2", "[::ffff:192.0.2.2]", "10.8.0.5",
                                     "::ffff:10.8.0.5", "2001:db8::5", "[2001:db8::5]", "fe80::5%wlan0",
                                     "::ffff:127.0.0.1"])
def test_the_speaker_is_recognised_on_every_interface_address_in_every_form(two_interfaces, monkeypatch, address):
    """A dual-stack server hears the speaker's second screen as ::ffff:192.0.2.2, a VPN's address, or IPv6."""
    assert is_local(address)
    connect_from(monkeypatch, address)
    assert not is_audience()


@pytest.mark.parametrize("address", ["192.0.2.77", "::ffff:192.0.2.77", "10.8.0.6", "2001:db8::77", "fe80::77%wlan0",
                                     "studio.example"])
def test_other_machines_on_the_same_networks_are_the_audience(two_interfaces, monkeypatch, address):
    assert not is_local(address)
    connect_from(monkeypatch, address)
    assert is_audience()


def test_this_machines_interface_addresses_are_its_own():
    """The real reading: every IPv4 address found can be bound to here (only a machine's own addresses can), and the
    route out, where there is one, is among them."""
    import ipaddress
    import socket

    from ui.server import forget_addresses, machine_addresses

    forget_addresses()
    found = machine_addresses()
    assert ipaddress.ip_address("127.0.0.1") in found
    for address in found:
        if isinstance(address, ipaddress.IPv4Address):
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                sock.bind((str(address), 0))  # EADDRNOTAVAIL for an address that is not this machine's
    network = network_address()
    if network is not None:
        assert ipaddress.ip_address(network) in found
