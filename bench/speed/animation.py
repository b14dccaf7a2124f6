"""The demo as a video: the shipped Multi30k model's 20-step decode made into an animation at 1920x1080 (a slide a
step, the map beside the top-k), as H.264 MP4 and as GIF: the time to make each and its size, against the baseline
of the same run, the 20 slides drawn as PNGs one after another (what the slides export would take for them).
Targets: at most 30 s to make, at most 10 MB as MP4 and 20 MB as GIF. Beside the wall time, the CPU time
of the process (every thread, vl-convert's and x264's included): on a busy machine the wall time grows with the
load while the CPU time does not, and on an idle 2-core machine the wall time is at most the CPU time.

`python -m bench.speed.animation [--repeats N]` (needs checkpoints/multi30k-en-de).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import time

import torch

from transformer.charts import animation_bytes, decode_slides, slide_png
from transformer.decode import greedy_decode
from transformer.store import open_model

TEXT = ("A man in a blue shirt and a woman in a red dress are riding their bikes down a busy street next to a large "
        "old building.")
TARGETS = {"mp4": (30.0, 10e6), "gif": (30.0, 20e6)}


def frames_of(data: bytes, fmt: str) -> tuple[int, tuple[int, int]]:
    """(frames, (width, height)) of an MP4 or a GIF, read back."""
    if fmt == "gif":
        from PIL import Image
        image = Image.open(io.BytesIO(data))
        return image.n_frames, image.size
    import av
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.video[0]
        return sum(1 for _ in container.decode(stream)), (stream.width, stream.height)


def run(repeats: int) -> dict:
    adapter = open_model("checkpoints/multi30k-en-de")
    result = greedy_decode(adapter, TEXT, max_steps=20)
    model = f"{adapter.name} · weights of step 6,684 (last)"
    out: dict = {"steps": len(result.steps), "rounds": []}
    for _ in range(repeats):
        began, cpu = time.perf_counter(), time.process_time()
        for slide in decode_slides(result, model=model):
            slide_png(slide.chart, slide.title_lines)
        row = {"baseline_pngs_s": round(time.perf_counter() - began, 2),
               "baseline_cpu_s": round(time.process_time() - cpu, 2)}
        for fmt in ("mp4", "gif"):
            began, cpu = time.perf_counter(), time.process_time()
            data = animation_bytes(decode_slides(result, model=model), fmt)
            seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
            frames, size = frames_of(data, fmt)
            row[fmt] = {"s": round(seconds, 2), "cpu_s": round(cpu, 2), "mb": round(len(data) / 1e6, 2),
                        "frames": frames,
                        "size": f"{size[0]}x{size[1]}", "vs_baseline": round(seconds / row["baseline_pngs_s"], 2),
                        "meets_target": seconds <= TARGETS[fmt][0] and len(data) <= TARGETS[fmt][1]}
        row["load_1min"] = round(os.getloadavg()[0], 1)
        out["rounds"].append(row)
        print(json.dumps(row), flush=True)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    torch.set_num_threads(2)
    print(json.dumps(run(parser.parse_args().repeats), indent=1))
