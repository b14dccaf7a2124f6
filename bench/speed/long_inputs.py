"""Long inputs end to end (random models built from configs, saved to a temporary folder; nothing downloaded).

T: a 2-layer, 4-head, d_model-64 Qwen2-style toy with a 500-token vocabulary and a 131,072-token context; a
32,768-token document through the CLI (`python -m transformer decode DIR - --max-steps 3 --trace-json t.json` with
the document on standard input): peak memory (peak resident set during the decode and the trace's writing less the
resident set just before the decode), the command's wall time, and the trace's side file checked: its step rows
equal Hugging Face's (an SDPA prefill, then eager one-query steps with their weights).
Q (the Qwen2-0.5B layout with 4 layers, 8k tokens) is `bench.speed.long_inputs_q`, which builds on this module.

    python -m bench.speed.long_inputs [--tokens 32768]   # a few minutes on 2 shared cores
"""
from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from bench.common.long_models import build_model, document
from bench.common.long_models import load_average as _load
from bench.speed.attention_store import PeakRSS, _rss

LONG = True  # minutes: a 32k-token decode, an 8k-token forward of a 0.8 GB model, the app's page
STEPS = 3
MB = 1 << 20


def cli_child(folder: str, doc: str, trace: str) -> dict:
    """`decode DIR - --max-steps 3 --trace-json TRACE` with the document on standard input, in this process: the
    resident set just before the decode and its peak until the command returns (the trace written)."""
    from transformer.cli import decode as cli_decode
    from transformer.cli import main
    found: dict = {"rss_start": _rss()}  # torch and the library imported, no model yet
    original = cli_decode.long_decode

    def watched(adapter, text, args):
        found["weights_bytes"] = sum(p.numel() * p.element_size() for p in adapter.model.parameters())
        found["rss_before_decode"] = _rss()
        found["watch"] = PeakRSS().__enter__()
        found["decode_start"] = time.perf_counter()
        result = original(adapter, text, args)
        found["decode_s"] = time.perf_counter() - found["decode_start"]
        found["store_bytes"] = result.trace.store.nbytes()
        found["dense_bytes"] = result.trace.store.dense_nbytes()
        found["prompt_tokens"] = result.trace.step_offset + 1
        return result

    cli_decode.long_decode = watched
    sys.stdin = io.TextIOWrapper(io.BytesIO(Path(doc).read_bytes()), encoding="utf-8")
    out = io.StringIO()
    start = time.perf_counter()
    stdout, sys.stdout = sys.stdout, out
    try:
        code = main(["decode", folder, "-", "--max-steps", str(STEPS), "--trace-json", trace])
    finally:
        sys.stdout = stdout
    watch = found.pop("watch")
    watch.__exit__(None, None, None)
    return {**{k: v for k, v in found.items() if k != "decode_start"}, "code": code, "output": out.getvalue(),
            "command_in_process_s": time.perf_counter() - start,
            "decode_and_write_s": time.perf_counter() - found["decode_start"], "memory_bytes": watch.used,
            "rss_peak": watch.peak}


def check_child(folder: str, doc: str, trace: str) -> dict:
    """The trace's step rows against Hugging Face's own: an SDPA prefill of all but the prompt's last token, then
    eager one-query steps (the prompt's last token and each fed step) with their weights."""
    from transformers.cache_utils import DynamicCache

    from transformer.decode import load_trace_json
    from transformer.store import open_model
    back = load_trace_json(trace)
    adapter = open_model(folder)
    prompt = adapter.decoder_prefix(adapter.tokenize_source(Path(doc).read_text(encoding="utf-8")))
    fed = [*prompt, *(s.token_id for s in back.steps[:-1])]
    model, config = adapter.model, adapter.model.config
    before, worst, tokens = config._attn_implementation, 0.0, []
    try:
        with torch.no_grad():
            config._attn_implementation = "sdpa"
            cache = DynamicCache()
            model(input_ids=torch.tensor([prompt[:-1]]), past_key_values=cache, use_cache=True, logits_to_keep=1)
            config._attn_implementation = "eager"
            store = back.trace.store
            for position in range(len(prompt) - 1, len(fed)):
                out = model(input_ids=torch.tensor([[fed[position]]]), past_key_values=cache, use_cache=True,
                            output_attentions=True)
                tokens.append(int(out.logits[0, -1].argmax()))
                for layer, weights in enumerate(out.attentions):
                    for head in range(weights.shape[1]):
                        mine = store.tile("self", layer, head, [position], slice(None))[0]
                        seen = weights.shape[-1]  # the keys up to the row's position; the later ones weigh 0
                        worst = max(worst, float((mine[:seen] - weights[0, head, 0].float()).abs().max()),
                                    float(mine[seen:].abs().sum()))
    finally:
        config._attn_implementation = before
    return {"steps_equal": tokens == [s.token_id for s in back.steps], "rows_max_abs_diff": worst,
            "rows": len(fed) - len(prompt) + 1, "side_file": (Path(trace).parent / json.loads(
                Path(trace).read_text())["store"]["file"]).stat().st_size}


def _child(*argv: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.speed.long_inputs", "--child", *argv], capture_output=True,
                         text=True)
    if out.returncode:
        raise SystemExit(f"child {argv[0]} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_t(root: Path, tokens: int) -> None:
    folder = build_model("T", root / "T")
    doc = root / "t.txt"
    doc.write_text(document(folder, tokens), encoding="utf-8")
    print(f"T built; load {_load()}", flush=True)
    start = time.perf_counter()
    cli = _child("cli", str(folder), str(doc), str(root / "t.json"))
    wall = time.perf_counter() - start
    print(f"T, {cli['prompt_tokens']:,} prompt tokens + {STEPS} steps, CLI: whole command {wall:.1f} s wall "
          f"(decode + trace written {cli['decode_and_write_s']:.1f} s, decode {cli['decode_s']:.1f} s); peak memory "
          f"{cli['memory_bytes'] / MB:,.0f} MB over {cli['rss_before_decode'] / MB:,.0f} MB before the decode "
          f"(targets <= 2.0 GB, <= 120 s); store {cli['store_bytes'] / MB:,.1f} MB for "
          f"{cli['dense_bytes'] / MB:,.0f} MB of maps; load {_load()}", flush=True)
    check = _child("check", str(folder), str(doc), str(root / "t.json"))
    print(f"T trace: side file {check['side_file'] / MB:,.1f} MB; {check['rows']} step rows x every head against "
          f"Hugging Face's (SDPA prefill, eager steps): max |diff| {check['rows_max_abs_diff']:.2e}, tokens equal "
          f"{check['steps_equal']}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=32768, help="prompt tokens")
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    if args.child:
        what, *rest = args.child
        print(json.dumps({"cli": cli_child, "check": check_child}[what](*rest)))
        return
    print(f"load {_load()}, torch threads {torch.get_num_threads()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="long_inputs_") as tmp:
        run_t(Path(tmp), args.tokens)


if __name__ == "__main__":
    main()
