"""AppTest: in a talk, a session from another machine is the audience. It looks at every view and picks heads, and is
told why training, uploading a bundle, loading a model by name and long analyses are the speaker's; the speaker's own
session keeps every control. The QR code a speaker's localhost page shows opens the view at the machine's network
address, without presenter mode."""
from __future__ import annotations

from types import SimpleNamespace
from urllib.parse import parse_qsl, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.app_session import APP, assert_no_exception, charts, open_app, qr_text, texts
from ui.server import AUDIENCE_ENV, PUBLIC_URL_ENV, REFUSALS
from ui.train import LIVE_RUN_KEY

NETWORK = "203.0.113.7"  # the speaker's laptop on the room's network (a documentation address)
PHONE = "198.51.100.23"  # a phone in the room
TEXT = "abcdefg"


@pytest.fixture
def room(studio_env, monkeypatch):
    """The app on the tiny checkpoint, on a machine whose network address is NETWORK; no audience setting made."""
    monkeypatch.setattr("streamlit.net_util.get_internal_ip", lambda: NETWORK)
    monkeypatch.delenv(PUBLIC_URL_ENV, raising=False)
    monkeypatch.delenv(AUDIENCE_ENV, raising=False)
    return studio_env


def connect_from(monkeypatch, address: str | None) -> None:
    """Every session's browser connects from `address`, the websocket's peer that st.context.ip_address reads
    (AppTest.context cannot seed it)."""
    client = SimpleNamespace(remote_ip=address, headers={}, cookies={})
    monkeypatch.setattr("streamlit.runtime.context._get_client_context", lambda: client)


def infos(at: AppTest) -> list[str]:
    return texts(at.info) + texts(at.sidebar.info)


def keys(elements) -> set[str]:
    return {e.key for e in elements}


def test_an_audience_session_sees_the_train_page_but_cannot_start_stop_resume_or_save(room, monkeypatch):
    connect_from(monkeypatch, PHONE)
    at = open_app("train")
    assert REFUSALS["train"] in infos(at)
    start = at.button(key="train_start")
    assert start.disabled
    for key in ("train_stop", "train_resume", "train_save"):
        assert at.button(key=key).disabled and at.button(key=key).help == REFUSALS["train"]
    assert "train_continue" not in keys(at.button)  # "Continue training" the picked checkpoint: not offered
    assert LIVE_RUN_KEY not in at.session_state
    assert at.selectbox(key="train_task").value  # the form is there to read


def test_an_audience_session_cannot_upload_a_bundle_or_load_a_model_by_name(room, monkeypatch):
    connect_from(monkeypatch, PHONE)
    at = open_app("decode")
    shown = texts(at.sidebar.info)
    assert REFUSALS["upload"] in shown and REFUSALS["load"] in shown
    assert not at.sidebar.get("file_uploader")
    assert "sidebar_hf_name" not in keys(at.sidebar.text_input) and "sidebar_hf_load" not in keys(at.sidebar.button)
    assert "sidebar_hf_prefix" in keys(at.sidebar.text_input)  # the current model's options stay
    assert at.sidebar.selectbox(key="sidebar_model").value  # and so does the model picker


def test_an_audience_session_looks_at_every_view_but_cannot_start_a_sweep(room, monkeypatch):
    connect_from(monkeypatch, PHONE)
    at = open_app("attention")
    at.text_input(key="attention_text").input(TEXT).run()
    at.selectbox(key="attention_head").set_value(1).run()
    assert_no_exception(at)
    assert any("head 2" in c["title"] for c in charts(at))  # picking a head is the audience's
    assert REFUSALS["sweep"] in infos(at) and REFUSALS["agreement"] in infos(at)
    assert "attention_sweep_run" not in keys(at.button)
    assert "attention_agreement_on" not in keys(at.toggle)
    decode = open_app("decode")
    decode.text_input(key="decode_text").input(TEXT).run()
    decode.button(key="decode_next").click().run()  # stepping is the audience's too
    assert_no_exception(decode)
    assert decode.session_state["decode_step"] == 2


@pytest.mark.parametrize("address", [None, "127.0.0.1", NETWORK])  # None: Streamlit's own reading of localhost
def test_the_speakers_own_session_keeps_every_control(room, monkeypatch, address):
    connect_from(monkeypatch, address)
    at = open_app("attention")
    at.text_input(key="attention_text").input(TEXT).run()
    assert_no_exception(at)
    assert not [m for m in infos(at) if m in REFUSALS.values()]
    assert "attention_sweep_run" in keys(at.button) and "attention_agreement_on" in keys(at.toggle)
    assert at.sidebar.get("file_uploader")
    assert "sidebar_hf_name" in keys(at.sidebar.text_input) and "sidebar_hf_load" in keys(at.sidebar.button)
    train = open_app("train")
    assert not train.button(key="train_start").disabled and not train.button(key="train_stop").help


def test_the_server_setting_makes_everyone_or_no_one_audience(room, monkeypatch):
    connect_from(monkeypatch, None)
    monkeypatch.setenv(AUDIENCE_ENV, "all")  # a public server: the local session is audience too
    assert open_app("train").button(key="train_start").disabled
    connect_from(monkeypatch, PHONE)
    monkeypatch.setenv(AUDIENCE_ENV, "none")  # a workshop: everyone trains
    assert not open_app("train").button(key="train_start").disabled


def open_link(page: str, params: dict[str, str], url: str) -> AppTest:
    """A new session opening `url` + page with these query parameters."""
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.context = {"url": url + page}
    at.switch_page(f"pages/{page}.py")
    at.query_params = dict(params)
    at.run()
    assert_no_exception(at)
    return at


def copied_link(at: AppTest) -> str:
    """The link "Copy link" shows."""
    at.session_state["studio_share"] = True
    at.run()
    assert_no_exception(at)
    links = [c.value for c in at.code if "://" in c.value]
    at.session_state["studio_share"] = False
    assert len(links) == 1
    return links[0]


def test_a_qr_code_made_on_localhost_opens_the_view_at_the_network_address_without_presenter_mode(room, monkeypatch):
    connect_from(monkeypatch, None)
    at = open_link("decode", {"text": TEXT, "present": "1", "step": "2"}, url="http://localhost:8501/")
    link = qr_text(at)
    parts = urlsplit(link)
    assert (parts.scheme, parts.netloc, parts.path) == ("http", f"{NETWORK}:8501", "/decode")
    params = dict(parse_qsl(parts.query))
    assert "present" not in params and params["text"] == TEXT and params["step"] == "2"
    assert link == copied_link(at)
    assert f"{NETWORK}:8501" in texts(at.caption)  # the presenter sees which address the code holds
    connect_from(monkeypatch, PHONE)  # a phone opens it: the same view, not presenter mode
    phone = open_link("decode", params, url=f"http://{NETWORK}:8501/")
    assert phone.session_state["decode_step"] == 2 and phone.session_state["decode_text"] == TEXT
    assert not [h for h in phone.get("html") if "presenter mode" in str(h.proto.body)]
    assert qr_text(phone) is None


def test_a_public_address_goes_into_the_qr_code_and_no_network_is_said(room, monkeypatch):
    connect_from(monkeypatch, None)
    monkeypatch.setenv(PUBLIC_URL_ENV, "https://talk.example.org")
    at = open_link("attention", {"text": TEXT, "present": "1"}, url="http://localhost:8501/")
    assert qr_text(at).startswith("https://talk.example.org/attention?") and "talk.example.org" in texts(at.caption)
    monkeypatch.delenv(PUBLIC_URL_ENV)
    monkeypatch.setattr("streamlit.net_util.get_internal_ip", lambda: "127.0.0.1")  # no network on this machine
    at = open_link("attention", {"text": TEXT, "present": "1"}, url="http://localhost:8501/")
    assert qr_text(at).startswith("http://localhost:8501/attention?")
    assert "localhost:8501: this machine only (no network found)" in texts(at.caption)
    at.session_state["studio_share"] = True  # "Copy link" says how to give the room an address
    at.run()
    assert any("Only this machine can open it" in c and PUBLIC_URL_ENV in c for c in texts(at.caption))


def _renderers(at: AppTest) -> tuple[list, list]:
    """The popovers that make files (slides, animations) and the chart image buttons a page drew."""
    popovers = [p for p in at.get("popover") if p.key and p.key.endswith("_slides")]
    images = [b for b in at.get("download_button") if b.key and b.key.endswith(("_png", "_svg", "_replay"))]
    return popovers, images


@pytest.mark.parametrize("page", ["decode", "attention"])
def test_an_audience_session_cannot_render_animations_slides_or_images(room, monkeypatch, page):
    """Each MP4 or slide costs the speaker's machine seconds of CPU: the audience's buttons are switched off with the
    reason, and nothing is there to render behind them; the speaker keeps them."""
    from tests.helpers.app_session import capture_downloads, open_link

    downloads = capture_downloads(monkeypatch)
    connect_from(monkeypatch, PHONE)
    at = open_link(page, {"text": TEXT})
    assert_no_exception(at)
    popovers, images = _renderers(at)
    assert popovers and all(p.proto.popover.disabled and p.proto.popover.help == REFUSALS["render"] for p in popovers)
    assert all(b.disabled and b.help == REFUSALS["render"] for b in images)
    assert page != "decode" or any(b.key == "decode_replay" for b in images)
    assert not [name for name in downloads if name.endswith((".mp4", ".gif", ".pdf", ".png", ".svg", ".html"))]
    connect_from(monkeypatch, None)  # the speaker
    at = open_link(page, {"text": TEXT})
    popovers, images = _renderers(at)
    assert popovers and not any(p.proto.popover.disabled for p in popovers) and not any(b.disabled for b in images)
    assert any(name.endswith((".mp4", ".png")) for name in downloads)
