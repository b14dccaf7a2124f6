"""AppTest: uploading and downloading checkpoint bundles from the shared sidebar."""
from __future__ import annotations

import io
import zipfile

from tests.helpers.app_session import assert_no_exception, open_app, texts
from transformer.charts import text_width
from transformer.store import bundle_bytes
from ui.models import PICKER_FONT_PX, PICKER_LABEL_PX
from ui.views import md


def _upload(at, name: str, data: bytes):
    at.sidebar.file_uploader[0].set_value((name, data, "application/zip"))
    at.run()
    assert_no_exception(at)
    return at


def test_uploaded_bundle_becomes_the_current_model_of_this_session_only(studio_env, tiny_checkpoint_dir):
    at = _upload(open_app("decode"), "my-model.zip", bundle_bytes(tiny_checkpoint_dir / "reverse"))
    assert any("Loaded my-model" in m for m in texts(at.sidebar.success))
    picker = at.sidebar.selectbox(key="sidebar_model")
    assert picker.value.startswith("upload:")
    assert "my-model  ·  Uploaded" in picker.options
    assert at.subheader[0].value.startswith("Step 1 of")  # the Decode page runs on the uploaded model
    other_session = open_app()
    assert not any(o.endswith("Uploaded") for o in other_session.sidebar.selectbox(key="sidebar_model").options)


def test_a_bad_bundle_is_refused_with_a_message(studio_env, tiny_checkpoint_dir):
    at = _upload(open_app(), "junk.zip", b"this is not a zip file")
    assert any("junk.zip is not a usable checkpoint bundle" in e for e in texts(at.sidebar.error))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("../../escape/config.json", "{}")
    at = _upload(at, "sneaky.zip", buffer.getvalue())
    assert any("sneaky.zip is not a usable checkpoint bundle" in e for e in texts(at.sidebar.error))
    assert at.sidebar.selectbox(key="sidebar_model").value == "shipped:reverse"


def test_the_current_model_can_be_downloaded_as_a_bundle(studio_env):
    at = open_app()
    button = at.get("download_button")
    assert [b.key for b in button if b.key == "sidebar_download"] == ["sidebar_download"]


def test_a_long_model_name_is_shortened_in_the_picker_but_keeps_its_source(studio_env, tiny_checkpoint_dir):
    long_name = "reverse-longer-experiment-name-2026-11-23"
    at = _upload(open_app(), f"{long_name}.zip", bundle_bytes(tiny_checkpoint_dir / "reverse"))
    picker = at.sidebar.selectbox(key="sidebar_model")
    shown = picker.format_func(picker.value)
    assert shown.endswith("  ·  Uploaded") and "…" in shown  # the source whole, the name cut in its middle
    assert shown.startswith("reverse") and shown.split("  ·  ")[0].endswith("11-23")
    assert text_width(shown, PICKER_FONT_PX) <= PICKER_LABEL_PX
    assert "reverse  ·  Shipped" in picker.options  # a short name stays whole
    assert any(f"**Model** {md(long_name)}" in m for m in texts(at.sidebar.markdown))  # the whole name in the card


def test_the_model_is_resolved_once_per_run_and_again_at_the_next(studio_env, monkeypatch):
    """The frame, the sidebar, the links and the page all ask for the current model; the model folders are scanned
    and the model resolved once per script run (not once per caller), and again at the next run."""
    from ui.models import catalog
    calls = []
    resolve = catalog._resolve_current
    monkeypatch.setattr(catalog, "_resolve_current", lambda: calls.append(1) or resolve())
    at = open_app("decode")
    runs = len(calls)
    assert runs == 2  # app.py's first run, then the switch to Decode: one each
    at.text_input(key="decode_text").input("abc").run()
    assert len(calls) == runs + 1
