"""The demo as a video: a decode's step-through and a run's probe frames as H.264 MP4 and GIF at 1920x1080, a
second a frame, titled like the slides; from the library and the command line, bad input refused in one line."""
from __future__ import annotations

import io
from pathlib import Path

import av
import pytest
from PIL import Image

from transformer.charts import (
    SLIDE_HEIGHT,
    SLIDE_WIDTH,
    AnimationError,
    VideoError,
    animation_bytes,
    decode_slides,
    gif_bytes,
    mp4_bytes,
    training_slides,
    video_format,
)
from transformer.charts import animation as animation_module
from transformer.cli import main
from transformer.decode import greedy_decode
from transformer.store import load_checkpoint, open_model

TEXT = "abcd"


@pytest.fixture(scope="module")
def decoded(tiny_checkpoint_dir: Path):
    adapter = open_model(str(tiny_checkpoint_dir / "reverse"))
    return greedy_decode(adapter, TEXT, max_steps=4)


def mp4_frames(data: bytes) -> tuple[str, list[Image.Image], float]:
    """(codec, decoded frames, seconds) of an MP4."""
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.video[0]
        frames = [frame.to_image() for frame in container.decode(stream)]
        return stream.codec_context.name, frames, float(stream.duration * stream.time_base)


def gif_frames(data: bytes) -> tuple[int, tuple[int, int], list[int], int]:
    """(frames, size, each frame's milliseconds, loop) of a GIF."""
    image = Image.open(io.BytesIO(data))
    durations = []
    for i in range(image.n_frames):
        image.seek(i)
        durations.append(image.info["duration"])
    return image.n_frames, image.size, durations, image.info.get("loop")


@pytest.mark.slow  # draws and encodes 1920x1080 frames
def test_a_decode_animates_one_slide_a_step_as_h264_mp4(decoded) -> None:
    slides = decode_slides(decoded, model="reverse · weights of step 200")
    assert len(slides) == len(decoded.steps) == 4
    codec, frames, seconds = mp4_frames(animation_bytes(slides, "mp4"))
    assert codec == "h264" and len(frames) == 4 and seconds == pytest.approx(4.0)
    assert {frame.size for frame in frames} == {(SLIDE_WIDTH, SLIDE_HEIGHT)}
    assert frames[0].getpixel((5, 5)) == pytest.approx((255, 255, 255), abs=3)  # the slide's white margin


@pytest.mark.slow  # draws and encodes 1920x1080 frames
def test_a_decode_animates_as_a_looping_gif_a_second_a_frame(decoded) -> None:
    data = animation_bytes(decode_slides(decoded, model="reverse"), "gif")
    count, size, durations, loop = gif_frames(data)
    assert count == 4 and size == (SLIDE_WIDTH, SLIDE_HEIGHT) and durations == [1000] * 4 and loop == 0
    assert Image.open(io.BytesIO(data)).convert("RGB").getpixel((5, 5)) == (255, 255, 255)  # white stays white


def test_the_slides_carry_the_slides_export_titles(decoded) -> None:
    slides = decode_slides(decoded, model="reverse · weights of step 200", layer=1, head=0, reference="dcba")
    first, last = slides[0].title_lines, slides[-1].title_lines
    assert first[0] == "Cross-attention · layer 2 · h1 · step 1 of 4"
    assert first[1].startswith("Step 1: ‹<s>› → ") and f"Input: {TEXT}" in first
    assert "Decoder fed the reference: dcba" in first and first[-1] == "reverse · weights of step 200"
    assert last[0].endswith("step 4 of 4")


@pytest.mark.slow  # draws and encodes 1920x1080 frames
def test_a_run_animates_its_probe_frames(decoded) -> None:
    frames = [(0, decoded.trace), (50, decoded.trace), (100, decoded.trace)]
    slides = training_slides(frames, model="rev · reverse · trained 100 steps")
    assert [s.title_lines[0] for s in slides][-1] == "Cross-attention · layer 1 · mean · training step 100 (3 of 3)"
    assert slides[0].title_lines[1].startswith("Probe: a b c d")
    codec, video, _ = mp4_frames(animation_bytes(slides, "mp4"))
    assert codec == "h264" and len(video) == 3 and video[0].size == (SLIDE_WIDTH, SLIDE_HEIGHT)


@pytest.mark.parametrize("make, message", [
    (lambda r: training_slides([], model="m"), "no probe frames"),
    (lambda r: decode_slides(r, model="m", layer=5), "layer 6 is not there"),
    (lambda r: decode_slides(r, model="m", head=9), "head 10 is not there"),
    (lambda r: decode_slides(r, model="m", kind="cross_lm"), "no cross_lm attention"),
])
def test_an_animation_of_what_is_not_there_is_refused(decoded, make, message: str) -> None:
    with pytest.raises(AnimationError, match=message):
        make(decoded)


def test_an_animation_longer_than_the_bound_is_refused(decoded, monkeypatch) -> None:
    monkeypatch.setattr(animation_module, "MAX_ANIMATION_FRAMES", 3)
    with pytest.raises(AnimationError, match="at most 3 frames"):
        decode_slides(decoded, model="m")


def test_video_formats_come_from_the_file_name() -> None:
    assert video_format("talk/demo.MP4") == "mp4" and video_format("demo.gif") == "gif"
    for name in ("demo.avi", "demo"):
        with pytest.raises(VideoError, match="as .mp4 .H.264. or .gif"):
            video_format(name)


@pytest.mark.parametrize("encode", [mp4_bytes, gif_bytes])
def test_the_encoders_refuse_no_frames_and_mixed_sizes(encode) -> None:
    with pytest.raises(VideoError, match="no frames"):
        encode([])
    with pytest.raises(VideoError, match="differ in size"):
        encode([Image.new("RGB", (64, 48), "white"), Image.new("RGB", (32, 48), "white")])


# -- the command line ---------------------------------------------------------------------------------------------
@pytest.mark.slow  # draws and encodes 1920x1080 frames
def test_decode_writes_the_step_through_as_mp4_and_gif(tiny_checkpoint_dir: Path, tmp_path: Path, capsys) -> None:
    model = str(tiny_checkpoint_dir / "reverse")
    assert main(["decode", model, TEXT, "--max-steps", "3", "--video", str(tmp_path / "steps.mp4"),
                 "--video-layer", "2", "--video-head", "1"]) == 0
    codec, frames, _ = mp4_frames((tmp_path / "steps.mp4").read_bytes())
    assert codec == "h264" and len(frames) == 3 and frames[0].size == (SLIDE_WIDTH, SLIDE_HEIGHT)
    assert main(["decode", model, TEXT, "--max-steps", "3", "--video", str(tmp_path / "steps.gif")]) == 0
    assert gif_frames((tmp_path / "steps.gif").read_bytes())[:2] == (3, (SLIDE_WIDTH, SLIDE_HEIGHT))
    assert "wrote" in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [
    (["--video", "steps.avi"], "error: steps.avi: a video is written as .mp4 (H.264) or .gif, not .avi"),
    (["--video", "steps.mp4", "--video-head", "two"], "error: a head is a number from 1 or 'mean', not 'two'"),
    (["--video", "steps.mp4", "--video-layer", "7"], "error: layer 7 is not there: the model has 2 layer(s)"),
])
def test_decode_refuses_a_bad_video_in_one_line(tiny_checkpoint_dir: Path, tmp_path: Path, monkeypatch, capsys,
                                                extra: list[str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["decode", str(tiny_checkpoint_dir / "reverse"), TEXT, "--max-steps", "2", *extra]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == message and "Traceback" not in err


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("animate") / "rev"
    assert main(["train", "--task", "reverse", "--d-model", "16", "--heads", "2", "--d-ff", "32", "--batch-size", "16",
                 "--n-train", "200", "--n-valid", "10", "--eval-examples", "10", "--warmup", "2", "--steps", "12",
                 "--probe", "abcde", "--probe-frames", "4", "--out", str(out)]) == 0
    return out


@pytest.mark.slow  # draws and encodes 1920x1080 frames
def test_train_records_the_probe_and_animate_replays_it(trained_run: Path, tmp_path: Path, capsys) -> None:
    frames = load_checkpoint(trained_run).frames
    assert [step for step, _ in frames] == [0, 3, 6, 9, 12]
    assert frames[0][1].source_tokens[:5] == tuple("abcde")
    assert main(["animate", str(trained_run), "--out", str(tmp_path / "run.gif")]) == 0
    assert gif_frames((tmp_path / "run.gif").read_bytes())[:2] == (5, (SLIDE_WIDTH, SLIDE_HEIGHT))
    assert main(["animate", str(trained_run), "--out", str(tmp_path / "run.mp4"), "--head", "2"]) == 0
    codec, video, seconds = mp4_frames((tmp_path / "run.mp4").read_bytes())
    assert codec == "h264" and len(video) == 5 and seconds == pytest.approx(5.0)
    assert "steps 0 to 12" in capsys.readouterr().out


def test_resuming_keeps_the_earlier_frames(trained_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "more"
    assert main(["train", "--resume", str(trained_run), "--steps", "16", "--probe-frames", "2", "--out", str(out)]) == 0
    assert [step for step, _ in load_checkpoint(out).frames] == [0, 3, 6, 9, 12, 14, 16]


@pytest.mark.parametrize("args, message", [
    (["animate", "{shipped}", "--out", "run.mp4"], "has no probe frames"),
    (["animate", "{run}", "--out", "run.webm"], "a video is written as .mp4 (H.264) or .gif, not .webm"),
    (["animate", "{tmp}", "--out", "run.mp4"], "is not a checkpoint directory"),
    (["animate", "{run}", "--out", "nowhere/run.gif"], "cannot write nowhere/run.gif: its folder does not exist"),
    (["train", "--task", "reverse", "--steps", "1", "--probe-frames", "0", "--probe", "ab", "--out", "x"],
     "--probe needs --probe-frames above 0"),
])
def test_animate_refuses_bad_input_in_one_line(trained_run: Path, tiny_checkpoint_dir: Path, tmp_path: Path,
                                               monkeypatch, capsys, args: list[str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    paths = {"shipped": str(tiny_checkpoint_dir / "reverse"), "run": str(trained_run), "tmp": str(tmp_path)}
    assert main([a.format(**paths) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
