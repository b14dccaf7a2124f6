"""What the heads of the two one-stack architectures attend to on a pair with a gold alignment (the toy sentences,
reverse, copy, sort), scored as `alignment.py` scores cross-attention: the fraction of tokens whose highest weight
among the other sentence's tokens is on their gold counterpart.

- Encoder-only (masked LM over `A </s> B </s>`): the rows are the masked tokens of one sentence, the keys the other
  sentence's tokens; a masked B token's counterpart is its gold source, a masked A token's the B tokens aligned to
  it (any of them). This is where the model reads what it must predict.
- Decoder-only (prefix LM over `A </s> <s> B`): the rows are the queries that predict each B token (the <s> row
  and those of B's earlier tokens), the keys A's tokens: what cross-attention does in an encoder-decoder, done by
  the one causal stack.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import torch

from ...data import END_ID, GoldSource, make_batch
from ...data.masking import MaskedExample, masked_batch
from ...model import DecoderOnlyTransformer, EncoderOnlyTransformer, eval_mode
from .alignment import accepted, alignment_hits, scores_frame, summarize


def _inverse(gold: Sequence[GoldSource], n_source: int) -> list[GoldSource]:
    """For each source token, the target tokens aligned to it (None where none is)."""
    found: list[list[int]] = [[] for _ in range(n_source)]
    for j, entry in enumerate(gold):
        for i in accepted(entry):
            if i < n_source:
                found[i].append(j)
    return [tuple(js) if js else None for js in found]


def _add(total: Any, hits: torch.Tensor) -> torch.Tensor:
    return hits if total is None else total + hits


def masked_pair_alignment(model: EncoderOnlyTransformer, examples: Sequence[MaskedExample],
                          golds: Sequence[Sequence[GoldSource] | None], batch_size: int = 128
                          ) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """Per head of an encoder-only model, how often a masked token's highest weight in the other sentence is on its
    gold counterpart; None when no example has a gold alignment."""
    total_hits, total = None, 0
    with eval_mode(model):
        for start in range(0, len(examples), batch_size):
            chunk = examples[start: start + batch_size]
            maps = torch.stack(model.forward_with_attention(masked_batch(chunk).src).attentions.encoder_self, 1)
            for row, (example, gold) in enumerate(zip(chunk, golds[start: start + batch_size], strict=True)):
                if gold is None or example.ids.count(END_ID) < 2:
                    continue
                n_a = example.ids.index(END_ID)
                b0, n_b = n_a + 1, len(example.ids) - n_a - 2
                masked = {i for i, label in enumerate(example.labels) if label}
                weights = maps[row].cpu()  # (L, H, S, S)
                if any(i >= b0 for i in masked):  # B masked: rows B, keys A
                    block = weights[:, :, b0: b0 + n_b, :n_a]
                    want = [gold[j] if b0 + j in masked and j < len(gold) else None for j in range(n_b)]
                else:  # A masked: rows A, keys B
                    block = weights[:, :, :n_a, b0: b0 + n_b]
                    inverse = _inverse(gold, n_a)
                    want = [inverse[i] if i in masked else None for i in range(n_a)]
                want = [g if g is not None and all(i < block.shape[-1] for i in accepted(g)) else None for g in want]
                hits, n = alignment_hits(block, want)
                total_hits, total = _add(total_hits, hits), total + n
    if not total or total_hits is None:
        return None
    frame = scores_frame(total_hits, total)
    return frame, summarize(frame)


def prefix_alignment(model: DecoderOnlyTransformer, examples: Sequence, src_tokenizer, tgt_tokenizer,
                     batch_size: int = 128) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """Per head of a decoder-only model (a prefix LM), how often the query that predicts a target token puts its
    highest weight among the source tokens on that token's gold source; None when no example has one."""
    aligned = [e for e in examples if e.alignment is not None]
    if not aligned:
        return None
    limit = model.cfg.max_len // 2 - 2
    total_hits, total = None, 0
    with eval_mode(model):
        for start in range(0, len(aligned), batch_size):
            chunk = aligned[start: start + batch_size]
            srcs = [src_tokenizer.encode(e.source)[:limit] for e in chunk]
            batch = make_batch(srcs, [tgt_tokenizer.encode(e.target)[:limit] for e in chunk])
            _, maps = model.full(batch.src, batch.tgt_in, True)
            weights = torch.stack(maps, 1).cpu()  # (B, L, H, S + T, S + T)
            n_src = batch.src.size(1)
            for row, (example, ids) in enumerate(zip(chunk, srcs, strict=True)):
                n_t = len(tgt_tokenizer.encode(example.target)[:limit])
                block = weights[row, :, :, n_src: n_src + n_t, : len(ids)]  # rows predicting target j, keys source
                want = [g if g is not None and all(i < len(ids) for i in accepted(g)) else None
                        for g in example.alignment[:n_t]]
                hits, n = alignment_hits(block, want)
                total_hits, total = _add(total_hits, hits), total + n
    if not total or total_hits is None:
        return None
    frame = scores_frame(total_hits, total)
    return frame, summarize(frame)
