"""Training tokens/s at the reversal case-study configuration: ours vs a torch.nn.Transformer model.

Both models have the same sizes (d_model 128, 1+1 layers, 4 heads, feed-forward 128, dropout 0.1), see the
same batches (batch 256, lengths 10-19) and use the same loop and optimiser (Adam 1e-3, betas 0.9/0.98).
They are timed in alternating blocks so that load on the machine hits both alike.
"""
from __future__ import annotations

import math
import time

import torch
import torch.nn.functional as F
from torch import nn

from transformer.data import BucketSampler, make_task
from transformer.model import PRESETS, ModelConfig, Seq2SeqTransformer, sinusoidal_positions


class TorchTransformerBaseline(nn.Module):
    """The usual seq2seq model around nn.Transformer (embeddings, positions, masks, generator)."""

    def __init__(self, vocab: int, d_model: int = 128, heads: int = 4, layers: int = 1, d_ff: int = 128,
                 dropout: float = 0.1) -> None:
        super().__init__()
        self.src_embed = nn.Embedding(vocab, d_model, padding_idx=0)
        self.tgt_embed = nn.Embedding(vocab, d_model, padding_idx=0)
        self.register_buffer("pe", sinusoidal_positions(512, d_model), persistent=False)
        self.drop = nn.Dropout(dropout)
        self.transformer = nn.Transformer(d_model, heads, layers, layers, d_ff, dropout, batch_first=True)
        self.generator = nn.Linear(d_model, vocab)
        self.scale = math.sqrt(d_model)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        s = self.drop(self.src_embed(src) * self.scale + self.pe[: src.size(1)])
        t = self.drop(self.tgt_embed(tgt) * self.scale + self.pe[: tgt.size(1)])
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        out = self.transformer(s, t, tgt_mask=causal, src_key_padding_mask=src == 0,
                               tgt_key_padding_mask=tgt == 0, memory_key_padding_mask=src == 0, tgt_is_causal=True)
        return self.generator(out)


def _step(model: nn.Module, opt: torch.optim.Optimizer, batch) -> int:
    logits = model(batch.src, batch.tgt_in)
    loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=0)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return batch.n_target_tokens


def run(blocks: int = 6, steps_per_block: int = 10) -> dict:
    torch.manual_seed(0)
    task = make_task("reverse", n_train=20_000, n_valid=10)
    src = task.src_tokenizer.encode_many([e.source for e in task.train])
    tgt = task.tgt_tokenizer.encode_many([e.target for e in task.train])
    batches = iter(BucketSampler(src, tgt, 256, seed=0))
    preset = PRESETS["reversal case study"]["model"]
    ours = Seq2SeqTransformer(ModelConfig(src_vocab_size=30, tgt_vocab_size=30, **preset)).train()
    base = TorchTransformerBaseline(30).train()
    models = {"ours": ours, "nn.Transformer": base}
    opts = {k: torch.optim.Adam(m.parameters(), lr=1e-3, betas=(0.9, 0.98)) for k, m in models.items()}
    seconds = {k: 0.0 for k in models}
    tokens = {k: 0 for k in models}
    for block in range(blocks + 1):
        chunk = [next(batches) for _ in range(steps_per_block)]
        for name, model in models.items():
            start = time.perf_counter()
            n = sum(_step(model, opts[name], b) for b in chunk)
            if block:  # block 0 warms both up
                seconds[name] += time.perf_counter() - start
                tokens[name] += n
    rate = {k: tokens[k] / seconds[k] for k in models}
    return {"ours_tokens_per_s": rate["ours"], "torch_tokens_per_s": rate["nn.Transformer"],
            "ratio": rate["ours"] / rate["nn.Transformer"],
            "params": {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()}}


if __name__ == "__main__":
    torch.set_num_threads(2)
    print(run())
