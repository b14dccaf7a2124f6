"""AppTest: "Download animation" on the Decode page (the step-through) and on the Train page (the probe's timeline)
gives an H.264 MP4 and a GIF at 1920x1080, a frame a step or recording; a saved run keeps its frames."""
from __future__ import annotations

import io

import av
from PIL import Image

from tests.helpers.app_session import assert_no_exception, capture_downloads, open_app, open_link, poll
from transformer.charts import SLIDE_HEIGHT, SLIDE_WIDTH
from transformer.store import load_checkpoint
from ui.train import LIVE_RUN_KEY

TEXT = "stressed"
TINY_FORM = dict(train_d_model=16, train_n_heads=2, train_n_encoder_layers=1, train_n_decoder_layers=1,
                 train_d_ff=32, train_batch_size=16, train_n_train=300, train_max_steps=12, train_eval_every=1000,
                 train_eval_examples=10, train_probe_every=4, train_max_seconds=120.0, train_warmup_steps=0)


def mp4_frames(data: bytes) -> tuple[str, list[tuple[int, int]]]:
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.video[0]
        return stream.codec_context.name, [frame.to_image().size for frame in container.decode(stream)]


def gif_frames(data: bytes) -> tuple[int, tuple[int, int]]:
    image = Image.open(io.BytesIO(data))
    return image.n_frames, image.size


def test_decode_downloads_its_step_through_as_mp4_and_gif(studio_env, monkeypatch):
    downloads = capture_downloads(monkeypatch)
    at = open_link("decode", {"text": TEXT, "layer": "2", "head": "1"})
    steps = int(at.subheader[0].value.split(" of ")[1].split(":")[0])
    codec, sizes = mp4_frames(downloads["animation_reverse_greedy_layer2_head1.mp4"]())
    assert codec == "h264" and sizes == [(SLIDE_WIDTH, SLIDE_HEIGHT)] * steps
    assert gif_frames(downloads["animation_reverse_greedy_layer2_head1.gif"]()) == (steps, (SLIDE_WIDTH, SLIDE_HEIGHT))
    assert any(p.key == "decode_animation_slides" for p in at.get("popover"))  # presenter mode hides *_slides


def test_the_train_page_downloads_the_timeline_and_a_saved_run_keeps_it(studio_env, monkeypatch):
    downloads = capture_downloads(monkeypatch)
    at = open_app("train")
    at.selectbox(key="train_preset").set_value("tiny").run()
    for key, value in TINY_FORM.items():
        at.number_input(key=key).set_value(value)
    at.button(key="train_start").click().run()
    run = at.session_state[LIVE_RUN_KEY]
    try:
        assert poll(at, lambda a: not run.active, seconds=90), "the run did not end"
        at.run()
        assert_no_exception(at)
        recorded = [step for step, _ in run.timeline()]
        assert recorded[0] == 0 and recorded[-1] == 12 and len(recorded) >= 3
        name = next(n for n in downloads if n.startswith("training_") and n.endswith(".mp4"))
        codec, sizes = mp4_frames(downloads[name]())
        assert codec == "h264" and sizes == [(SLIDE_WIDTH, SLIDE_HEIGHT)] * len(recorded)
        assert gif_frames(downloads[name[:-4] + ".gif"]()) == (len(recorded), (SLIDE_WIDTH, SLIDE_HEIGHT))
        at.text_input(key="train_save_name").input("filmed").run()
        at.button(key="train_save").click().run()
        assert_no_exception(at)
        assert [step for step, _ in load_checkpoint(studio_env / "filmed").frames] == recorded
    finally:
        run.job.stop()
        run.job.join(20)
