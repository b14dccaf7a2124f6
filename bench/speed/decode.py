"""Greedy decoding of 100 tokens with the full trace: KV cache vs recomputing the prefix at every step."""
from __future__ import annotations

import time

import torch

from transformer.adapters import UNEMITTABLE, adapter_for, ban
from transformer.data import TaskSpec, make_task
from transformer.decode import greedy_decode
from transformer.model import Seq2SeqTransformer, default_configs, eval_mode

STEPS = 100


def recompute_prefix(model: Seq2SeqTransformer, src: torch.Tensor, steps: int) -> list[int]:
    """The uncached baseline: run the whole decoder on the prefix at every step, capturing attention."""
    tokens = [1]
    with eval_mode(model):
        for _ in range(steps):
            logits, _maps = model.forward_with_attention(src, torch.tensor([tokens]))
            tokens.append(int(ban(logits[0, -1], UNEMITTABLE).argmax()))
    return tokens[1:]


def run(repeats: int = 5) -> dict:
    task = make_task(TaskSpec(name="reverse", n_train=10, n_valid=2))
    cfg, _ = default_configs("reverse", 30, 30, model_overrides=dict(
        d_model=128, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=512, max_len=128))
    torch.manual_seed(0)
    model = Seq2SeqTransformer(cfg).eval()
    text = "thequickbrownfoxjumps"
    src = torch.tensor([task.src_tokenizer.encode(text) + [2]])
    adapter = adapter_for(model, task.src_tokenizer, task.tgt_tokenizer)
    greedy_decode(adapter, text, max_steps=STEPS, stop_at_end=False)
    recompute_prefix(model, src, 5)
    cached, uncached, cached_cpu, uncached_cpu = [], [], [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        result = greedy_decode(adapter, text, max_steps=STEPS, stop_at_end=False)
        cached.append(time.perf_counter() - start)
        cached_cpu.append(time.process_time() - cpu)
        start, cpu = time.perf_counter(), time.process_time()
        tokens = recompute_prefix(model, src, STEPS)
        uncached.append(time.perf_counter() - start)
        uncached_cpu.append(time.process_time() - cpu)
    assert [s.token_id for s in result.steps] == tokens, "cached and uncached decoding disagree"
    c, u = sorted(cached)[repeats // 2], sorted(uncached)[repeats // 2]
    # CPU time as well: on a shared machine the wall time of tiny ops mostly measures waiting for a core
    cc, uc = sorted(cached_cpu)[repeats // 2], sorted(uncached_cpu)[repeats // 2]
    return {"tokens": STEPS, "threads": torch.get_num_threads(), "cached_s": round(c, 4), "recompute_s": round(u, 4),
            "speedup": round(u / c, 2), "cached_cpu_s": round(cc, 4), "recompute_cpu_s": round(uc, 4),
            "speedup_cpu": round(uc / cc, 2)}


if __name__ == "__main__":
    import sys
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)  # `python -m bench.speed.decode 1`: 1 thread
    print(run())
