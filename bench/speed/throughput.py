"""Training tokens/s at the reversal case-study configuration: ours vs a torch.nn.Transformer model.

    PYTHONPATH=. .venv/bin/python -m bench.speed.throughput [--blocks 20] [--precision fp32|bf16|both]

Both models have the same sizes (d_model 128, 1+1 layers, 4 heads, feed-forward 128, dropout 0.1), see the
same batches (batch 256, lengths 10-19) and use the same loop and optimiser (Adam 1e-3, betas 0.9/0.98).
They are timed in alternating short blocks so that load on the machine hits both alike; the ratio is the median
of the blocks' ratios (robust to a burst of load in one block), beside the ratio of the totals.

The ceiling: the same blocks' matrix products alone (every mm/addmm/bmm of one training step of ours, recorded
with their arguments and replayed), timed in the same alternation. Both models do the same matrix products
(same shapes), so no implementation of this model can train faster than that replay; the baseline's step time
over it is the largest ratio any implementation could reach on this machine.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from bench.common.baselines import TorchTransformerBaseline
from transformer.data import BucketSampler, TaskSpec, make_task
from transformer.model import PRESETS, ModelConfig, Seq2SeqTransformer


def _step(model: nn.Module, opt: torch.optim.Optimizer, batch) -> int:
    logits = model(batch.src, batch.tgt_in)
    loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=0)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return batch.n_target_tokens


_MATMULS = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default)


class _RecordMatmuls(TorchDispatchMode):
    """Records every matrix product run under it, with copies of its arguments, to replay them later."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _MATMULS:
            copy = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
            self.calls.append((func, copy, dict(kwargs)))
        return func(*args, **kwargs)


def _matmuls_of_step(model: nn.Module, batch) -> list[tuple]:
    """The matrix products of one training step's forward and backward (the weights are not changed)."""
    recorder = _RecordMatmuls()
    with recorder:
        logits = model(batch.src, batch.tgt_in)
        F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=0).backward()
    model.zero_grad(set_to_none=True)
    return recorder.calls


def _replay(calls: list[tuple]) -> None:
    for func, args, kwargs in calls:
        func(*args, **kwargs)


def run(blocks: int = 20, steps_per_block: int = 3, precision: str = "fp32") -> dict:
    """Tokens/s of both models (and, in fp32, of our step's matrix products alone) over the same batches."""
    torch.manual_seed(0)
    task = make_task(TaskSpec(name="reverse", n_train=20_000, n_valid=10))
    src = task.src_tokenizer.encode_many([e.source for e in task.train])
    tgt = task.tgt_tokenizer.encode_many([e.target for e in task.train])
    batches = iter(BucketSampler(src, tgt, 256, seed=0))
    preset = PRESETS["reversal case study"]["model"]
    ours = Seq2SeqTransformer(ModelConfig(src_vocab_size=30, tgt_vocab_size=30, **preset)).train()
    base = TorchTransformerBaseline(30).train()
    models = {"ours": ours, "nn.Transformer": base}
    opts = {k: torch.optim.Adam(m.parameters(), lr=1e-3, betas=(0.9, 0.98)) for k, m in models.items()}
    rates: dict[str, list[float]] = {k: [] for k in (*models, "matmuls")}
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()
    for block in range(blocks + 1):
        chunk = [next(batches) for _ in range(steps_per_block)]
        n = sum(b.n_target_tokens for b in chunk)
        timed = {}
        for name, model in models.items():
            start = time.perf_counter()
            with autocast:
                for b in chunk:
                    _step(model, opts[name], b)
            timed[name] = time.perf_counter() - start
        if precision == "fp32":
            recorded = [_matmuls_of_step(ours, b) for b in chunk]
            start = time.perf_counter()
            for calls in recorded:
                _replay(calls)
            timed["matmuls"] = time.perf_counter() - start
        if block:  # block 0 warms everything up
            for name, seconds in timed.items():
                rates[name].append(n / seconds)
    total = {k: statistics.fmean(v) for k, v in rates.items() if v}
    ratios = [a / b for a, b in zip(rates["ours"], rates["nn.Transformer"], strict=True)]
    out = {"precision": precision, "ours_tokens_per_s": total["ours"], "torch_tokens_per_s": total["nn.Transformer"],
           "ratio": statistics.median(ratios), "ratio_of_means": total["ours"] / total["nn.Transformer"],
           "params": {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()}}
    if "matmuls" in total:
        ceilings = [a / b for a, b in zip(rates["matmuls"], rates["nn.Transformer"], strict=True)]
        out.update(matmuls_only_tokens_per_s=total["matmuls"], ceiling=statistics.median(ceilings),
                   ours_share_in_matmuls=statistics.median(
                       a / b for a, b in zip(rates["ours"], rates["matmuls"], strict=True)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=20, help="timed blocks of 3 steps per model")
    parser.add_argument("--precision", choices=("fp32", "bf16", "both"), default="fp32")
    args = parser.parse_args()
    torch.set_num_threads(2)
    for precision in ("fp32", "bf16") if args.precision == "both" else (args.precision,):
        load = os.getloadavg()[0]
        result = run(args.blocks, precision=precision)
        result["load_before_after"] = (round(load, 1), round(os.getloadavg()[0], 1))
        print({k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()})


if __name__ == "__main__":
    main()
