"""Greedy decoding with a key/value cache, producing a DecodeResult with a typed attention trace."""
from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import torch
from torch import Tensor, nn

from ..data import END_ID, START_ID, Tokenizer, pad, source_ids
from ..model import HeadMask, Seq2SeqTransformer
from .trace import AttentionTrace

MAX_INPUT_CHARS = 10_000


class InputError(ValueError):
    """Text a user typed cannot be decoded (empty, too long for the model)."""


@dataclass(frozen=True)
class Step:
    """One decoder position: the token chosen there, its probability and the top-k candidates."""

    token: str
    token_id: int
    prob: float
    top_k: tuple[tuple[str, float], ...]
    forced: bool = False


@dataclass(frozen=True)
class DecodeResult:
    """Output of greedy (or teacher-forced) decoding plus the attention trace the model produced."""

    source_text: str
    steps: tuple[Step, ...]
    trace: AttentionTrace
    mode: str  # "greedy" or "teacher-forced"
    finished: bool  # the model produced </s> within the step limit
    output_text: str
    unknown_tokens: tuple[str, ...] = field(default=())

    @property
    def output_tokens(self) -> tuple[str, ...]:
        return tuple(s.token for s in self.steps)

    def to_dict(self) -> dict:
        """The documented trace JSON (see README, "Trace format")."""
        return {
            "source_tokens": list(self.trace.source_tokens),
            "target_tokens": list(self.trace.decoder_input_tokens),
            "output_tokens": list(self.output_tokens),
            "steps": [{"token": s.token, "prob": s.prob, "top_k": [[t, p] for t, p in s.top_k]} for s in self.steps],
            "attention": self.trace.attention_dict(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())


@contextmanager
def eval_mode(model: nn.Module) -> Iterator[None]:
    """Run with dropout off and no gradients; restores the previous mode."""
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            yield
    finally:
        model.train(was_training)


def encode_source(model: Seq2SeqTransformer, tokenizer: Tokenizer, text: str) -> tuple[list[int], list[str]]:
    """Source ids (with </s>) for `text`, and the tokens the vocabulary does not know; raises InputError."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("The input is empty: type a sentence to decode.")
    if len(text) > MAX_INPUT_CHARS:
        raise InputError(f"The input has {len(text):,} characters; the limit is {MAX_INPUT_CHARS:,}.")
    ids = tokenizer.encode(text)
    if not ids:
        raise InputError("The input has no tokens this model can read.")
    limit = model.cfg.max_len - 1
    if len(ids) > limit:
        raise InputError(f"The input has {len(ids):,} tokens; this model reads at most {limit}.")
    unknown = [tok for tok, i in zip(tokenizer.split(text), ids) if i == tokenizer.unk_id]
    return source_ids(ids), unknown


def _top_k(probs: Tensor, k: int, tokenizer: Tokenizer) -> tuple[tuple[str, float], ...]:
    p, i = probs.topk(min(k, probs.numel()))
    return tuple((tokenizer.id_to_token(int(t)), float(v)) for v, t in zip(p, i))


def _target_ids(tokenizer: Tokenizer, tokens: Sequence[str] | str) -> list[int]:
    if isinstance(tokens, str):
        return tokenizer.encode(tokens)
    return [tokenizer.token_to_id(t) if tokenizer.token_to_id(t) is not None else tokenizer.unk_id for t in tokens]


def greedy_decode(model: Seq2SeqTransformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer, text: str, *,
                  top_k: int = 5, max_steps: int | None = None, forced: Sequence[str] | str = (),
                  stop_at_end: bool = True, head_mask: HeadMask | None = None) -> DecodeResult:
    """Greedy decoding with the KV cache and a full trace; `forced` target tokens are fed first.

    At a forced position the step records the forced token (its probability under the model and the model's
    own top-k); decoding then continues greedily from there ("what if it had chosen X at step t").
    """
    src, unknown = encode_source(model, src_tokenizer, text)
    forced_ids = _target_ids(tgt_tokenizer, forced)
    limit = model.cfg.max_len
    n_max = min(limit, max_steps if max_steps is not None else 2 * len(src) + 10)
    n_max = max(n_max, min(limit, len(forced_ids) + 1))
    with eval_mode(model):
        src_t = torch.tensor([src])
        memory, mask, enc_maps = model._encode(src_t, True, head_mask)
        cache = model.start_cache(memory)
        token, steps, self_rows, cross_rows, inputs = START_ID, [], [], [], [START_ID]
        finished = False
        for t in range(n_max):
            logits, ws, wc = model.decode_step(torch.tensor([[token]]), cache, mask, need_weights=True,
                                               head_mask=head_mask)
            probs = logits[0].float().softmax(-1)
            self_rows.append([w[0, :, 0] for w in ws])  # per layer (H, t+1)
            cross_rows.append([w[0, :, 0] for w in wc])  # per layer (H, S)
            is_forced = t < len(forced_ids)
            token = forced_ids[t] if is_forced else int(probs.argmax())
            steps.append(Step(tgt_tokenizer.id_to_token(token), token, float(probs[token]),
                              _top_k(probs, top_k, tgt_tokenizer), is_forced))
            if token == END_ID and stop_at_end:
                finished = True
                break
            if t + 1 < n_max:
                inputs.append(token)
    trace = _assemble(src_tokenizer.ids_to_tokens(src), tgt_tokenizer.ids_to_tokens(inputs[: len(steps)]),
                      enc_maps, self_rows, cross_rows)
    text_out = tgt_tokenizer.decode([s.token_id for s in steps])
    return DecodeResult(text, tuple(steps), trace, "greedy", finished, text_out, tuple(unknown))


def _assemble(source_tokens: list[str], decoder_input_tokens: list[str], enc_maps: list[Tensor],
              self_rows: list[list[Tensor]], cross_rows: list[list[Tensor]]) -> AttentionTrace:
    """Stack per-step rows into (L, H, T, T) and (L, H, T, S); future positions stay exactly 0."""
    n_layers, n_heads = len(self_rows[0]), self_rows[0][0].shape[0]
    t_len = len(self_rows)
    dec = torch.zeros(n_layers, n_heads, t_len, t_len)
    for t, rows in enumerate(self_rows):
        for layer, row in enumerate(rows):
            dec[layer, :, t, : t + 1] = row
    cross = torch.stack([torch.stack(rows) for rows in cross_rows], dim=2)  # (L, H, T, S)
    enc = torch.stack([w[0] for w in enc_maps])  # (L, H, S, S)
    return AttentionTrace(tuple(source_tokens), tuple(decoder_input_tokens), enc, dec, cross)


def teacher_forced(model: Seq2SeqTransformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer, text: str,
                   reference: str, *, top_k: int = 5, head_mask: HeadMask | None = None) -> DecodeResult:
    """One forward pass on the reference target: the decoder axis shows the reference, steps the predictions."""
    src, unknown = encode_source(model, src_tokenizer, text)
    ref = tgt_tokenizer.encode(reference) if reference else []
    if len(ref) + 1 > model.cfg.max_len:
        raise InputError(f"The reference has {len(ref):,} tokens; this model reads at most {model.cfg.max_len - 1}.")
    inputs = [START_ID, *ref]
    with eval_mode(model):
        logits, maps = model.forward_with_attention(torch.tensor([src]), torch.tensor([inputs]), head_mask)
        probs = logits[0].float().softmax(-1)  # (T, V)
    steps = []
    for row in probs:
        token = int(row.argmax())
        steps.append(Step(tgt_tokenizer.id_to_token(token), token, float(row[token]), _top_k(row, top_k, tgt_tokenizer)))
    trace = AttentionTrace(tuple(src_tokenizer.ids_to_tokens(src)), tuple(tgt_tokenizer.ids_to_tokens(inputs)),
                           torch.stack([w[0] for w in maps.encoder_self]),
                           torch.stack([w[0] for w in maps.decoder_self]),
                           torch.stack([w[0] for w in maps.cross]))
    finished = bool(steps) and steps[-1].token_id == END_ID
    text_out = tgt_tokenizer.decode([s.token_id for s in steps])
    return DecodeResult(text, tuple(steps), trace, "teacher-forced", finished, text_out, tuple(unknown))


def greedy_batch(model: Seq2SeqTransformer, src: Tensor, max_steps: int) -> list[list[int]]:
    """Greedy output ids (without </s>) for a padded source batch (B, S); fast path, no weights."""
    with eval_mode(model):
        memory, mask = model.encode(src)
        cache = model.start_cache(memory)
        b = src.size(0)
        token = torch.full((b, 1), START_ID, dtype=torch.long)
        done = torch.zeros(b, dtype=torch.bool)
        out = []
        for _ in range(min(max_steps, model.cfg.max_len)):
            logits, _, _ = model.decode_step(token, cache, mask)
            token = logits.argmax(-1, keepdim=True)  # (B, 1)
            out.append(token[:, 0])
            done |= token[:, 0] == END_ID
            if bool(done.all()):
                break
    rows = torch.stack(out, 1).tolist() if out else [[] for _ in range(b)]
    return [r[: r.index(END_ID)] if END_ID in r else r for r in rows]


def decode_texts(model: Seq2SeqTransformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer,
                 texts: Sequence[str], batch_size: int = 256) -> list[str]:
    """Greedy translations of many texts, batched (sources longer than the model allows are cut)."""
    outputs: list[str] = []
    limit = model.cfg.max_len - 1
    for i in range(0, len(texts), batch_size):
        ids = [source_ids(src_tokenizer.encode(t)[:limit]) for t in texts[i: i + batch_size]]
        longest = max(len(s) for s in ids)
        for row in greedy_batch(model, pad(ids), max_steps=2 * longest + 10):
            outputs.append(tgt_tokenizer.decode(row))
    return outputs
