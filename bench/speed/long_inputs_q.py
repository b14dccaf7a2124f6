"""Long inputs on Q, the Qwen2-0.5B layout with 4 of its 24 layers (random weights from its config, saved to a
temporary folder), an 8,192-token document (see `bench.speed.long_inputs` for T and the CLI's measure):

- the CLI decode (`decode DIR - --max-steps 3 --trace-json q.json`, fresh process): peak memory less the memory
  before the decode, against the store plus 1.0 GB (the weights are loaded before it);
- the prefill with the store (`adapter.store_feed`) against Hugging Face's plain SDPA prefill (logits at the last
  position), same process, CPU and wall seconds;
- the streamed summaries of every head (`summarise`, the page's resolution) against that forward;
- a zoom to a 1,024 x 1,024 region: the tile recomputed, its cells (`zoom_frame`), the spec (`zoom_spec`) and
  the cells as the Arrow bytes Streamlit sends;
- a decode step with every head's row (the step's store forward, then each layer's row of every head from the
  step's query and every key) against a plain SDPA step, interleaved, medians;
- the Attention page (the app's script in AppTest, a fresh process): the document decoded by its job, its
  summaries computed, then a new session's run that draws the first map with both kept.

    python -m bench.speed.long_inputs_q [cli speed page] [--tokens 8192]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from bench.speed.long_inputs import MB, _child, _load, build_model, document

LONG = True
ZOOM = 1024


def _timed(fn):
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - start, time.process_time() - cpu


def speed_child(folder: str, doc: str) -> dict:
    """The forward, summaries, zoom and step measures, in this process."""
    from streamlit.dataframe_util import convert_anything_to_arrow_bytes
    from transformers.cache_utils import DynamicCache

    from transformer.adapters import build_store, store_chunks
    from transformer.analysis.source.streamed import summarise
    from transformer.charts import zoom_frame, zoom_spec
    from transformer.model import LayerStore
    from transformer.store import open_model
    adapter = open_model(folder)
    model, config = adapter.model, adapter.model.config
    prompt = adapter.decoder_prefix(adapter.tokenize_source(Path(doc).read_text(encoding="utf-8")))
    result: dict = {"tokens": len(prompt)}

    def plain(ids, cache):
        before = config._attn_implementation
        config._attn_implementation = "sdpa"
        try:
            with torch.no_grad():
                return model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits[:, -1]
        finally:
            config._attn_implementation = before

    def stored(ids, cache, chunks, first):
        with adapter.running():
            return adapter.store_feed(ids, cache, chunks, first)

    warm = torch.tensor([prompt[:256]])
    plain(warm, DynamicCache())
    stored(warm, adapter.start_cache(adapter.encode(torch.tensor([prompt[:0]]))), store_chunks(adapter), 255)
    ids = torch.tensor([prompt])
    plain_cache = DynamicCache()
    plain_logits, result["plain_s"], result["plain_cpu_s"] = _timed(lambda: plain(ids, plain_cache))
    chunks = store_chunks(adapter)
    with adapter.running():
        cache = adapter.start_cache(adapter.encode(torch.tensor([prompt[:0]])))
    logits, result["store_s"], result["store_cpu_s"] = _timed(lambda: stored(ids, cache, chunks, len(prompt) - 1))
    result["logits_max_abs_diff"] = float((logits - plain_logits).abs().max())
    store = build_store(chunks)
    result["store_bytes"] = store.nbytes()
    _, result["summaries_s"], result["summaries_cpu_s"] = _timed(lambda: summarise(store, "self", resolution=96))

    n = store.layer("self", 0).n_rows
    region = ((n - ZOOM, n), (n - ZOOM, n))
    zooms = []
    for head in range(3):  # what the server does: the tile, its cells, the spec and the cells as Arrow
        def zoom(head: int = head) -> bytes:
            frame, title, _ = zoom_frame(store, 0, head, *region)
            zoom_spec(title, *region)
            return convert_anything_to_arrow_bytes(frame)

        zooms.append(_timed(zoom)[1])
    result["zoom_s"] = zooms

    def step_rows() -> list:
        """Each layer's row of every head for the step just fed, from its query and every key so far."""
        rows = []
        for c in chunks["self"]:
            keys = torch.cat(c.keys, 1)
            one = LayerStore(c.queries[-1], keys, c.lse[-1], c.rules, c.groups)
            heads = torch.arange(one.n_heads)
            rows.append(one.weights(heads, torch.tensor([0]), torch.arange(keys.shape[1])))
        return rows

    token = int(logits[0].argmax())
    plain_steps, store_steps = [], []
    for _ in range(5):  # interleaved; each feeds the same token after its own cache
        step = torch.tensor([[token]])
        plain_steps.append(_timed(lambda step=step: plain(step, plain_cache))[1])
        store_steps.append(_timed(lambda step=step: (stored(step, cache, chunks, 0), step_rows()))[1])
    result["plain_step_s"], result["store_step_s"] = plain_steps, store_steps
    return result


def page_child(folder: str, doc: str) -> dict:
    """The Attention page in AppTest: the document decoded by its job and summarised, then a new session's first
    map with both kept (the run after the document is typed)."""
    from streamlit.testing.v1 import AppTest

    from tests.helpers.app_session import APP, charts, poll, texts
    from ui.models import MODEL_KEY
    name = Path(folder).name
    text = Path(doc).read_text(encoding="utf-8")

    def session():
        at = AppTest.from_file(str(APP), default_timeout=600)
        at.run()
        at.query_params.clear()
        at.selectbox(key=MODEL_KEY).set_value(f"hf:{name}").run()
        at.switch_page("pages/attention.py").run()
        return at

    result: dict = {}
    at = session()
    _, result["first_input_s"], _ = _timed(lambda: at.text_area(key="attention_text").input(text).run())
    start = time.perf_counter()
    at.button(key="document_job_run").click().run()
    kept = "from the same streamed pass"  # the layer's summaries of every head, kept for every session
    if not poll(at, lambda a: any(kept in t for t in texts(a.caption)), seconds=900, every=2.0):
        raise SystemExit("the document's decode and summaries did not finish")
    result["decode_and_summaries_s"] = time.perf_counter() - start
    again = session()
    _, result["first_map_s"], result["first_map_cpu_s"] = _timed(
        lambda: again.text_area(key="attention_text").input(text).run())
    drawn = charts(again)
    result["drawn"] = [c["title"] for c in drawn]
    result["widest"] = max(c["spec"].get("width", 0) for c in drawn)
    result["exceptions"] = [str(e.value) for e in again.exception]
    return result


def _q_child(*argv: str, env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.speed.long_inputs_q", "--child", *argv], capture_output=True,
                         text=True, env={**os.environ, **(env or {})})
    if out.returncode:
        raise SystemExit(f"child {argv[0]} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_q(root: Path, tokens: int, parts: list[str]) -> None:
    folder = build_model("Q", root / "hf" / "qwen2-0.5b-4-layers")
    doc = root / "q.txt"
    doc.write_text(document(folder, tokens), encoding="utf-8")
    print(f"Q built; load {_load()}", flush=True)
    if "cli" in parts:
        cli = _child("cli", str(folder), str(doc), str(root / "q.json"))
        budget = cli["weights_bytes"] + cli["store_bytes"] + 1024 * MB
        print(f"Q, {cli['prompt_tokens']:,} tokens + 3 steps, CLI decode: +{cli['memory_bytes'] / MB:,.0f} MB over "
              f"{cli['rss_before_decode'] / MB:,.0f} MB before the decode (the weights are memory-mapped: they come "
              f"in during it); peak {cli['rss_peak'] / MB:,.0f} MB = +{(cli['rss_peak'] - cli['rss_start']) / MB:,.0f}"
              f" MB over the process before the model (weights {cli['weights_bytes'] / MB:,.0f} MB + store "
              f"{cli['store_bytes'] / MB:,.1f} MB + 1,024 MB = {budget / MB:,.0f} MB: the target); decode + trace "
              f"{cli['decode_and_write_s']:.1f} s; load {_load()}", flush=True)
    if "speed" in parts:
        s = _q_child("speed", str(folder), str(doc))
        step = statistics.median(s["store_step_s"]) / statistics.median(s["plain_step_s"])
        print(f"Q, {s['tokens']:,} tokens: prefill with the store {s['store_s']:.1f} s ({s['store_cpu_s']:.1f} CPU-s)"
              f" vs plain SDPA {s['plain_s']:.1f} s ({s['plain_cpu_s']:.1f} CPU-s): **{s['store_s'] / s['plain_s']:.2f}"
              f"x** wall, {s['store_cpu_s'] / s['plain_cpu_s']:.2f}x CPU (target <= 1.3x; logits max |diff| "
              f"{s['logits_max_abs_diff']:.1e}); summaries of every head {s['summaries_s']:.1f} s "
              f"({s['summaries_cpu_s']:.1f} CPU-s) = **{s['summaries_s'] / s['plain_s']:.2f}x** the plain forward "
              f"(target <= 3x); zoom {ZOOM}x{ZOOM} tile + spec {', '.join(f'{z:.3f}' for z in s['zoom_s'])} s "
              f"(target <= 0.5 s); step with every head's row {statistics.median(s['store_step_s']):.3f} s vs plain "
              f"{statistics.median(s['plain_step_s']):.3f} s (medians of 5) = **{step:.2f}x** (target <= 1.3x); "
              f"store {s['store_bytes'] / MB:,.1f} MB; load {_load()}", flush=True)
    if "page" in parts:
        env = {"ATTENTION_STUDIO_HF_MODELS": str(root / "hf"), "ATTENTION_STUDIO_RUNS": str(root / "runs"),
               "ATTENTION_STUDIO_CHECKPOINTS": str(Path(__file__).resolve().parents[2] / "checkpoints")}
        p = _q_child("page", str(folder), str(doc), env=env)
        print(f"Q Attention page: document typed {p['first_input_s']:.1f} s; decode job + summaries "
              f"{p['decode_and_summaries_s']:.1f} s; a new session's first map with both kept **{p['first_map_s']:.2f}"
              f" s** ({p['first_map_cpu_s']:.2f} CPU-s; target <= 2 s); charts {p['drawn']}, widest {p['widest']} px;"
              f" exceptions {p['exceptions'] or 'none'}; load {_load()}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("parts", nargs="*", help="cli, speed, page (default all)")
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    if args.child:
        what, *rest = args.child
        print(json.dumps({"speed": speed_child, "page": page_child}[what](*rest)), flush=True)
        os._exit(0)  # not through the interpreter's exit: the app's worker threads abort it
    parts = args.parts or ["cli", "speed", "page"]
    if set(parts) - {"cli", "speed", "page"}:
        parser.error("parts: cli, speed, page")
    print(f"load {_load()}, torch threads {torch.get_num_threads()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="long_inputs_q_") as tmp:
        run_q(Path(tmp), args.tokens, parts)


if __name__ == "__main__":
    main()
