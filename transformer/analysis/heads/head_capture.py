"""The insides of one decode: a teacher-forced forward over exactly the tokens a `DecodeResult`'s trace shows, its
captures kept with the decode so a new head, layer or query is a lookup. Rows and columns line up with the trace:
the trace's decoder row r is the capture's row r + `first` (an encoder-decoder's trace starts at its last start
token)."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ...adapters import InspectableModel
from ...decode import DecodeResult, read_source
from ...model import SOURCE, TARGET, Insides
from .head_computation import (
    HeadComputation,
    HeadSelectionError,
    check_selection,
    head_computation,
    head_slice,
)
from .head_computation import mean_contribution_map as _mean_map


@dataclass(frozen=True)
class CapturedDecode:
    """A decode's insides with every token's label: `source_tokens` (the encoder's input; a decoder-only model's
    prompt) and `decoder_tokens` (every decoder input the capture read, start tokens included)."""

    model: str
    insides: Insides
    source_tokens: tuple[str, ...]
    decoder_tokens: tuple[str, ...]
    first: int  # the capture's decoder row of the trace's first decoder row
    axes: dict[str, tuple[str, str]]  # kind -> (query axis, key axis), SOURCE or TARGET

    def tokens(self, kind: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(query tokens, key tokens) of `kind`, as the capture holds them."""
        q_axis, k_axis = self.axes[kind]
        pick = {SOURCE: self.source_tokens, TARGET: self.decoder_tokens}
        return pick[q_axis], pick[k_axis]

    def query_of_row(self, kind: str, row: int) -> int:
        """The capture's query position of the trace's row `row` of `kind`."""
        return row + (self.first if self.axes[kind][0] != SOURCE else 0)

    def nbytes(self) -> int:
        return self.insides.nbytes()


def decoder_ids(adapter: InspectableModel, result: DecodeResult, reference: str | None = None) -> tuple[list[int],
                                                                                                    list[int], int]:
    """(source ids, decoder inputs, first) of the forward that reproduces `result`'s trace: the reference after the
    start tokens for a teacher-forced decode, else the chosen tokens; `first` as in `CapturedDecode`."""
    source = read_source(adapter, result.source_text)
    if not adapter.family.decodes:  # an encoder-only model: its one forward pass reads the input alone
        return list(source.ids), [], 0
    start = adapter.decoder_prefix(source)
    first = 0 if adapter.family.prompt_in_decoder else len(start) - 1
    assert adapter.family.decoder_kind is not None  # it decodes (the encoder-only case returned above)
    rows = result.trace.axis_sizes(adapter.family.decoder_kind)[0]
    if result.mode == "teacher-forced" and reference is not None:
        rest = adapter.target_ids(reference) if reference else []
    else:
        rest = [s.token_id for s in result.steps]
    return list(source.ids), [*start, *rest][: first + rows], first


def capture_decode(adapter: InspectableModel, result: DecodeResult, reference: str | None = None) -> CapturedDecode:
    """One teacher-forced forward over `result`'s tokens with every insides kept (eval mode, nothing left on the
    model); `reference` is what a teacher-forced result was fed."""
    if not adapter.family.decodes:  # encoder-only: one forward over the text as the model read it
        return _capture_encoder_only(adapter, result)
    src, tgt, first = decoder_ids(adapter, result, reference)
    source = read_source(adapter, result.source_text)
    insides = adapter.insides(torch.tensor([src]), torch.tensor([tgt]))
    n_start = len(adapter.decoder_prefix(source))
    labels = (*adapter.prefix_tokens(source), *adapter.ids_to_tokens(tgt[n_start:]))[: len(tgt)]
    return CapturedDecode(adapter.name, insides, tuple(source.tokens), tuple(labels), first, dict(adapter.family.axes))


def _capture_encoder_only(adapter: InspectableModel, result: DecodeResult) -> CapturedDecode:
    source = adapter.tokenize_source(result.source_text)
    if tuple(source.tokens) != tuple(result.trace.source_tokens):
        raise HeadSelectionError("the head computation reads the text as typed; this view masked or paired it, so its "
                                 "tokens differ: type the masks into the text to see them here")
    insides = adapter.insides(torch.tensor([source.ids]), None)  # type: ignore[arg-type]  # encoder-only: no target
    return CapturedDecode(adapter.name, insides, tuple(source.tokens), (), 0, dict(adapter.family.axes))


def computation_at(adapter: InspectableModel, captured: CapturedDecode, kind: str, layer: int, head: int, row: int
                   ) -> HeadComputation:
    """The head computation for the trace's row `row` of `kind` (HeadSelectionError when out of range)."""
    return head_computation(adapter, captured.insides, kind, layer, head, captured.query_of_row(kind, row))


def contributions(adapter: InspectableModel, captured: CapturedDecode, kind: str, layer: int, head: int | None
                  ) -> Tensor:
    """The contribution map ||alpha_ij W_O^h v_j|| of one head (None: the norm of the mean of the heads' vectors)
    over the capture's rows and keys, (Tq, Tk)."""
    inputs = check_selection(captured.insides, kind, layer, 0 if head is None else head)
    weight, _ = adapter.output_projection(kind, layer)
    if head is None:
        return _mean_map(inputs, weight)[0]
    # the weights as the model computed them (head_contribution_map recomputes the same softmax from q, k and the
    # terms): fewer small tensor ops, each of which can wait for a pool thread on a busy machine
    alpha = captured.insides.attentions[kind][layer][0, head].float()  # (Tq, Tk)
    values = inputs.values[0, inputs.groups[head]].float()  # (Tk, Dv)
    return alpha * (values @ head_slice(weight.detach().float(), head, inputs.n_heads).T).norm(dim=-1)


def trace_view(captured: CapturedDecode, kind: str, matrix: Tensor) -> Tensor:
    """A capture-sized (Tq, Tk) matrix cut to the rows and keys the trace shows."""
    q_axis, k_axis = captured.axes[kind]
    rows = slice(captured.first, None) if q_axis != SOURCE else slice(None)
    cols = slice(captured.first, None) if k_axis != SOURCE else slice(None)
    return matrix[rows, cols]


def mask_matrix(captured: CapturedDecode, kind: str) -> Tensor | None:
    """The mask the model added to `kind`'s scores (layer 1, head 1), (Tq, Tk): 0 where a query may look, -inf (or the
    dtype's minimum, as the model builds it) where not; None when the model added none (a single input's encoder)."""
    inputs = check_selection(captured.insides, kind, 0, 0)
    term = inputs.terms.get("mask")
    if term is None:
        return None
    n_q, n_k = inputs.queries.shape[2], inputs.keys.shape[2]
    t = term.float()
    while t.dim() > 2:
        t = t[0]
    return t.expand(n_q, n_k)


@dataclass(frozen=True)
class BatchMask:
    """The mask a model adds to its input stack's scores (layer 1, head 1) for one input padded beside a longer one in
    a batch, as in training: `mask` (Tq, Tk) is 0 where a query may look and -inf (or the dtype's minimum) where not;
    the keys `padding` (start, stop) are the padding."""

    kind: str
    mask: Tensor
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    padding: tuple[int, int]


PAD_LABEL = "<pad>"


def batch_mask(adapter: InspectableModel, text: str, other: str) -> BatchMask:
    """`text` and the longer `other` as one padded batch (`InspectableModel.padded_insides`): the mask the model
    added for `text`'s row (HeadSelectionError when `other` is not longer, or the model added no mask)."""
    first, second = adapter.tokenize_source(text), adapter.tokenize_source(other)
    if len(second.ids) <= len(first.ids):
        raise HeadSelectionError(f"the second input must be longer than the first ({len(second.ids)} tokens against "
                                 f"{len(first.ids)}) for the first to be padded")
    kind = adapter.family.output_kind if adapter.family.encoder_kind is None else adapter.family.encoder_kind
    inputs = check_selection(adapter.padded_insides([list(first.ids), list(second.ids)]), kind, 0, 0)
    term = inputs.terms.get("mask")
    if term is None:
        raise HeadSelectionError(f"{adapter.name} added no mask to its {kind} scores in a padded batch")
    t = term.float()
    t = t[0] if t.dim() == 4 else t  # row 0: (H|1, Tq|1, Tk) or (Tq|1, Tk)
    t = t[0] if t.dim() == 3 else t
    n_q, n_k = inputs.queries.shape[2], inputs.keys.shape[2]
    labels = [*first.tokens, *[PAD_LABEL] * (len(second.ids) - len(first.ids))]
    labels += adapter.ids_to_tokens(list(adapter.start_ids))[: max(n_k - len(labels), 0)]  # a decoder-only start
    return BatchMask(kind, t.expand(n_q, n_k), tuple(labels[:n_q]), tuple(labels[:n_k]),
                     (len(first.ids), len(second.ids)))
