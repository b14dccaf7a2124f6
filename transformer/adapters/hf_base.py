"""`HFAdapter`: what every Hugging Face adapter shares (`HFSeq2Seq`, `HFCausalLM`, `HFMaskedLM`): the tokenizer's
ids and pieces, the model's one lock, eval mode, the attention weights checked, the residual path and gradients."""
from __future__ import annotations

import threading
import weakref
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

import torch
from torch import Tensor, nn

from ..model import eval_mode
from .architectures import Architecture, architecture_of
from .errors import HFModelError
from .hf_capture import recording_hf
from .interface import Captured, InspectableModel
from .paths import ResidualPath
from .store_forward import StoreChunks

if TYPE_CHECKING:
    from transformers import PreTrainedModel  # its stubs are not followed (pyproject): Any to mypy

_LOCKS: "weakref.WeakKeyDictionary[nn.Module, threading.RLock]" = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def model_lock(model: nn.Module) -> threading.RLock:
    """The one lock of a shared model: whoever holds it may put temporary hooks on it."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(model, threading.RLock())


def attention_outputs(model: nn.Module) -> dict[str, list[nn.Module]]:
    """Per kind, each layer's attention output projection, as the model's architecture file places them."""
    return architecture_of(model).outputs(model)


def token_ids(value: Any) -> list[int]:
    """A config's token id or ids (None, one, or a list) as a list."""
    return [] if value is None else [int(v) for v in (value if isinstance(value, (list, tuple)) else [value])]


class HFAdapter(InspectableModel):
    """The base of the Hugging Face adapters: a loaded `transformers` model (`model`) and its tokenizer (`tokenizer`),
    with what reads the same for every family; each family's adapter sets its ids and limits in `__init__`."""

    source = "huggingface"
    model: PreTrainedModel
    architecture: Architecture  # its architecture file's declaration (`adopt` sets it, with the `studio` kernel)
    tokenizer: Any
    _lock: threading.RLock
    _n_tokens: int
    _banned_sequences: list[tuple[int, ...]]

    def token_to_id(self, token: str) -> int | None:
        i = self.tokenizer.convert_tokens_to_ids(token)
        unk = self.tokenizer.unk_token_id
        return None if i is None or (i == unk and token != self.tokenizer.unk_token) else int(i)

    def id_to_token(self, token_id: int) -> str:
        if not 0 <= int(token_id) < self._n_tokens:  # output rows beyond the tokenizer (T5 pads its vocabulary)
            return f"<id {int(token_id)}>"
        return self.tokenizer.convert_ids_to_tokens(int(token_id))

    def detokenize(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode([int(i) for i in ids if 0 <= int(i) < self._n_tokens], skip_special_tokens=True)

    def banned_after(self, decoder_ids: Sequence[int]) -> frozenset[int]:
        ids = [int(i) for i in decoder_ids]
        return frozenset(w[-1] for w in self._banned_sequences
                         if len(ids) >= len(w) - 1 and tuple(ids[len(ids) - len(w) + 1:]) == w[:-1])

    @contextmanager
    def _locked_eval(self, grad_mode: Callable[[], AbstractContextManager[Any]]) -> Iterator[None]:
        """Hold the model's lock in eval mode under `grad_mode` (inference or gradients); give the mode back."""
        with self._lock, eval_mode(self.model, grad_mode):
            yield

    def running(self) -> AbstractContextManager[None]:
        return self._locked_eval(torch.inference_mode)

    def _check(self, what: str, maps: Any, layers: int) -> tuple[Tensor, ...]:
        if not maps or len(maps) != layers or any(m is None or m.numel() == 0 for m in maps):
            raise HFModelError(f"{self.name} returned no {what} attention weights (needs eager attention)")
        return tuple(maps)

    def capturing(self, chunks: Mapping[str, list[StoreChunks]] | None = None) -> AbstractContextManager[Captured]:
        return recording_hf(self.model, self.architecture, chunks)

    def output_projections(self) -> dict[str, list[nn.Module]]:
        return self.architecture.outputs(self.model)

    def residual_path(self) -> ResidualPath:
        return self.architecture.path(self.model)

    @property
    def network(self) -> nn.Module:
        return self.model

    def output_path(self) -> str:
        names = {id(m): name for name, m in self.model.named_modules()}
        return names[id(self.model.get_output_embeddings())]

    def differentiable(self) -> AbstractContextManager[None]:
        return self._locked_eval(torch.enable_grad)
