"""`NativeAdapter`: what the adapters of our own models share (`NativeSeq2Seq`, `NativeDecoderOnly`,
`NativeEncoderOnly`): the tokenizers, the special ids, eval mode, the residual path, batched greedy translation."""
from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any, Iterator, Mapping, Sequence

import torch
from torch import Tensor, nn

from ..data import END_ID, START_ID, Tokenizer, pad, source_ids
from ..data.batching import PAD_ID
from ..model import DecoderOnlyTransformer, EncoderOnlyTransformer, Seq2SeqTransformer, eval_mode
from .capture import recording_native
from .interface import Captured, InspectableModel, SourceText
from .paths import ResidualPath, native_path
from .store_forward import StoreChunks, storing_native

UNEMITTABLE = (PAD_ID, START_ID)  # never chosen, never in top-k, never forced: the model cannot output them


def ban(logits: Tensor, ids: Sequence[int] | Tensor) -> Tensor:
    """A copy of `logits` (..., V) with the given ids set to -inf (one op with a tensor of ids)."""
    if not isinstance(ids, Tensor):
        ids = torch.tensor(list(ids), dtype=torch.long, device=logits.device)
    return logits.index_fill(-1, ids, float("-inf"))


_UNEMITTABLE_IDS = torch.tensor(UNEMITTABLE)  # `ban`'s index, built once: constrain runs at every decoder step


class NativeAdapter(InspectableModel):
    """The base of our models' adapters: the network (`model`), the source and target tokenizers and the name;
    each family's adapter adds its network's calls."""

    source = "checkpoint"
    start_ids: tuple[int, ...] = (START_ID,)
    end_ids = frozenset({END_ID})
    pad_id = PAD_ID
    unemittable_ids = frozenset(UNEMITTABLE)
    model: Seq2SeqTransformer | DecoderOnlyTransformer | EncoderOnlyTransformer  # each family's adapter narrows it

    def __init__(self, model: Seq2SeqTransformer | DecoderOnlyTransformer | EncoderOnlyTransformer,
                 src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer,
                 name: str = "checkpoint", *, answer_steps: int | None = None) -> None:
        self.model, self.src_tokenizer, self.tgt_tokenizer, self.name = model, src_tokenizer, tgt_tokenizer, name
        self.max_source_len = self.max_target_len = model.cfg.max_len
        self.vocab_size = tgt_tokenizer.vocab_size
        self.answer_steps = answer_steps  # its task's answer length (`data.answer_steps`), else None

    def default_max_steps(self, n_source: int) -> int:
        """The task's answer length where it has one (a recall stream's value), else twice the source and 10."""
        return self.answer_steps if self.answer_steps is not None else super().default_max_steps(n_source)

    def tokenize_source(self, text: str) -> SourceText:
        ids = self.src_tokenizer.encode(text)
        unk = self.src_tokenizer.unk_id
        unknown = tuple(tok for tok, i in zip(self.src_tokenizer.split(text), ids, strict=True) if i == unk)
        full = source_ids(ids) if ids else []
        return SourceText(tuple(full), tuple(self.src_tokenizer.ids_to_tokens(full)), unknown, len(full) - len(ids))

    def target_ids(self, text: str) -> list[int]:
        return self.tgt_tokenizer.encode(text)

    def token_to_id(self, token: str) -> int | None:
        return self.tgt_tokenizer.token_to_id(token)

    def id_to_token(self, token_id: int) -> str:
        return self.tgt_tokenizer.id_to_token(token_id)

    def detokenize(self, ids: Sequence[int]) -> str:
        return self.tgt_tokenizer.decode(ids)

    def running(self) -> AbstractContextManager[None]:
        return eval_mode(self.model)

    def residual_path(self) -> ResidualPath:
        return native_path(self.model)

    def attention_modules(self) -> dict[str, list[Any]]:
        """Per kind, each layer's attention module (`MultiHeadAttention`)."""
        raise NotImplementedError(f"{type(self).__name__} does not name its attention modules")

    @contextmanager
    def capturing(self, chunks: Mapping[str, list[StoreChunks]] | None = None) -> Iterator[Captured]:
        """Our attention read with forward hooks (`capture.recording_native`); with `chunks`, the store's rows, the
        log-sum-exp computed in blocks from the queries and keys (`store_forward.storing_native`)."""
        modules = self.attention_modules()
        if chunks is None:
            with recording_native(modules) as found:
                yield found
            return
        with ExitStack() as undo:
            for kind, layers in chunks.items():
                undo.enter_context(storing_native(modules[kind], layers))
            yield {}

    def constrain(self, decoder_ids: Sequence[int], logits: Tensor, max_length: int) -> Tensor:
        return ban(logits, _UNEMITTABLE_IDS.to(logits.device))

    def translate(self, texts: Sequence[str]) -> list[str]:
        assert not isinstance(self.model, EncoderOnlyTransformer), "an encoder-only adapter does not translate"
        return decode_texts(self.model, self.src_tokenizer, self.tgt_tokenizer, texts)

    @property
    def network(self) -> nn.Module:
        return self.model

    def output_path(self) -> str:
        return "generator"

    def differentiable(self) -> AbstractContextManager[None]:
        return eval_mode(self.model, torch.enable_grad)


def greedy_batch(model: Seq2SeqTransformer | DecoderOnlyTransformer, src: Tensor, max_steps: int) -> list[list[int]]:
    """Greedy output ids (without </s>) for a padded source batch (B, S); fast path, no weights."""
    with eval_mode(model):
        memory, mask = model.encode(src)
        cache: Any = model.start_cache(memory)  # each architecture's own cache
        b = src.size(0)
        token = torch.full((b, 1), START_ID, dtype=torch.long, device=src.device)
        done = torch.zeros(b, dtype=torch.bool, device=src.device)
        out = []
        for _ in range(min(max_steps, model.max_new_tokens(src.size(1)))):
            logits = ban(model.decode_step(token, cache, mask).logits, UNEMITTABLE)
            token = logits.argmax(-1, keepdim=True)  # (B, 1)
            out.append(token[:, 0])
            done |= token[:, 0] == END_ID
            if bool(done.all()):
                break
    rows = torch.stack(out, 1).tolist() if out else [[] for _ in range(b)]
    return [r[: r.index(END_ID)] if END_ID in r else r for r in rows]


def decode_texts(model: Seq2SeqTransformer | DecoderOnlyTransformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer,
                 texts: Sequence[str], batch_size: int = 256) -> list[str]:
    """Greedy translations of many texts, batched (sources longer than the model allows are cut)."""
    outputs: list[str] = []
    limit = model.cfg.max_len - 1
    device = next(model.parameters()).device
    for i in range(0, len(texts), batch_size):
        ids = [source_ids(src_tokenizer.encode(t)[:limit]) for t in texts[i: i + batch_size]]
        longest = max(len(s) for s in ids)
        for row in greedy_batch(model, pad(ids).to(device), max_steps=2 * longest + 10):
            outputs.append(tgt_tokenizer.decode(row))
    return outputs
