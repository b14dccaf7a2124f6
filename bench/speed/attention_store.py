"""The attention store against dense maps at long inputs (random models built from configs, nothing downloaded).

G: GPT-2 small's layout with `n_positions` 2,048, a 2,000-token prompt and 3 decode steps: memory (peak resident
set during the decode less the resident set just before it) with the store (`greedy_decode(..., keep="store")`)
against today's dense capture (eager prefill and steps with their maps stitched into a trace) in the same run,
each in a fresh process.
T: a 2-layer, 4-head, d_model-64 Qwen2-style toy with a 500-token vocabulary and a 131,072-token context: at 8k
and 32k tokens, the store forward (prefill + 3 steps) and the streamed summaries of every head, wall time.

    python -m bench.speed.attention_store            # everything (several minutes on 2 cores)
    python -m bench.speed.attention_store --only T --lengths 8192
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

import torch

STEPS = 3
LONG = True  # the dense measure alone takes ~8 GB and over a minute


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakRSS:
    """The resident set's peak while the block runs, sampled every 5 ms, less the resident set before it."""

    def __enter__(self) -> "PeakRSS":
        self.before = self.peak = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, _rss())

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())
        self.used = self.peak - self.before


def _adapter(model):
    from tests.helpers.hf_causal_models import lines, tokenizer
    from transformer.adapters import adapter_for
    model.generation_config.eos_token_id = None
    return adapter_for(model.eval(), tokenizer("gpt2", lines(50)), name="bench")


def gpt2_2k():
    from transformers import GPT2Config, GPT2LMHeadModel
    return _adapter(GPT2LMHeadModel(GPT2Config(vocab_size=50257, n_positions=2048, n_embd=768, n_layer=12, n_head=12,
                                               bos_token_id=0, eos_token_id=0, attn_implementation="eager")))


def toy_t():
    from transformers import Qwen2Config, Qwen2ForCausalLM
    return _adapter(Qwen2ForCausalLM(Qwen2Config(vocab_size=500, hidden_size=64, intermediate_size=128,
                                                 num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                 max_position_embeddings=131072, attn_implementation="eager")))


def dense_decode(adapter, prompt: list[int]):
    """Today's capture: the eager prefill and steps with every weight, stitched into the trace's maps."""
    from transformer.decode import AttentionTrace
    from transformer.model import AttentionMaps
    outputs, token = [], None
    with adapter.running():
        encoded = adapter.encode(torch.tensor([prompt]))
        cache = adapter.start_cache(encoded)
        for t in range(STEPS):
            out = adapter.prefill(prompt, encoded, cache) if t == 0 else adapter.step(torch.tensor([[token]]), encoded,
                                                                                      cache)
            outputs.append(out)
            token = int(out.logits[0].argmax())
    maps = AttentionMaps.from_steps((), outputs, adapter.family)
    n = maps["self"][0].shape[2]
    return AttentionTrace.from_maps(["x"] * len(prompt), ["x"] * n, maps, adapter.family, adapter.head_groups(),
                                    len(prompt) - 1)


def plain_forward(adapter, prompt: list[int]) -> None:
    """The baseline: Hugging Face's own SDPA prefill (logits at the last position) and steps, nothing kept."""
    from transformers.cache_utils import DynamicCache
    config, before = adapter.model.config, adapter.model.config._attn_implementation
    config._attn_implementation = "sdpa"
    try:
        with torch.no_grad():
            cache, ids = DynamicCache(), torch.tensor([prompt])
            for _ in range(STEPS):
                out = adapter.model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
                ids = out.logits[:, -1].argmax(-1, keepdim=True)
    finally:
        config._attn_implementation = before


def measure(what: str, length: int) -> dict:
    """One measure in this process."""
    from transformer.adapters import SourceText
    from transformer.decode import greedy_decode
    torch.manual_seed(0)
    adapter = gpt2_2k() if what.endswith("G") else toy_t()
    prompt = torch.randint(5, 490, (length,), generator=torch.Generator().manual_seed(1)).tolist()
    result: dict = {"what": what, "tokens": length}
    if what == "store-T":
        start, cpu = time.perf_counter(), time.process_time()
        plain_forward(adapter, prompt)
        result["plain_s"], result["plain_cpu_s"] = time.perf_counter() - start, time.process_time() - cpu
    with PeakRSS() as rss:
        start, cpu = time.perf_counter(), time.process_time()
        if what == "dense-G":
            trace = dense_decode(adapter, prompt)
            result["maps_bytes"] = sum(w.numel() * 4 for w in trace.maps.values())
        else:
            source = SourceText(tuple(prompt), tuple(f"<{i}>" for i in prompt))
            store = greedy_decode(adapter, source, max_steps=STEPS, keep="store").trace.store
            result["store_bytes"] = store.nbytes()
            result["dense_bytes"] = store.dense_nbytes()
        result["forward_s"] = time.perf_counter() - start
        result["forward_cpu_s"] = time.process_time() - cpu
    result["memory_bytes"] = rss.used
    if what == "store-T":
        from transformer.analysis.source.streamed import summarise
        start, cpu = time.perf_counter(), time.process_time()
        with PeakRSS() as rss:
            summarise(store, "self", resolution=512)
        result["summaries_s"] = time.perf_counter() - start
        result["summaries_cpu_s"] = time.process_time() - cpu
        result["summaries_memory_bytes"] = rss.used
    return result


def _child(what: str, length: int) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.speed.attention_store", "--child", what, str(length)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["G", "T"])
    parser.add_argument("--lengths", type=int, nargs="*", default=[8192, 32768])
    parser.add_argument("--child", nargs=2)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child[0], int(args.child[1]))))
        return
    mb = 1 << 20
    if args.only in (None, "G"):
        dense, store = _child("dense-G", 2000), _child("store-G", 2000)
        print(f"G, 2,000 tokens + {STEPS} steps: dense capture {dense['memory_bytes'] / mb:,.0f} MB "
              f"({dense['forward_s']:.1f} s), store {store['memory_bytes'] / mb:,.0f} MB ({store['forward_s']:.1f} s)"
              f" -> {store['memory_bytes'] / dense['memory_bytes']:.2f}x (target <= 0.3x); the store holds "
              f"{store['store_bytes'] / mb:,.0f} MB for {store['dense_bytes'] / mb:,.0f} MB of maps")
    if args.only in (None, "T"):
        for n in args.lengths:
            t = _child("store-T", n)
            print(f"T, {n:,} tokens + {STEPS} steps: store forward {t['forward_s']:.1f} s "
                  f"({t['forward_cpu_s']:.1f} CPU-s; plain SDPA forward {t['plain_s']:.1f} s, "
                  f"{t['plain_cpu_s']:.1f} CPU-s: {t['forward_cpu_s'] / t['plain_cpu_s']:.2f}x in CPU time), "
                  f"{t['memory_bytes'] / mb:,.0f} MB; summaries of every head "
                  f"{t['summaries_s']:.1f} s ({t['summaries_cpu_s']:.1f} CPU-s) "
                  f"(+{t['summaries_memory_bytes'] / mb:,.0f} MB); store {t['store_bytes'] / mb:,.1f} MB for "
                  f"{t['dense_bytes'] / mb:,.0f} MB of maps")


if __name__ == "__main__":
    main()
