"""Beam search of our own checkpoints as text hypotheses (`beam_search`, `eval --beam`'s `beam_texts`): the beam
tree's search by GNMT's rule (`beam_tree.search_tree`: width, length penalty ((5 + n) / 6) ** alpha), its final
hypotheses without the tree. A hypothesis is never extended with the pad or start token. Width 1 picks the most
probable token at every step, which is greedy decoding. Greedy decoding stays what the app steps through."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..adapters import InspectableModel, SourceText, adapter_for
from ..data import Tokenizer, source_ids
from ..model import Seq2SeqTransformer
from .beam_tree import MAX_BEAM, search_tree
from .greedy import InputError, read_source


@dataclass(frozen=True)
class Hypothesis:
    """One finished (or cut-off) beam hypothesis: output ids without specials, text, scores."""

    token_ids: tuple[int, ...]
    text: str
    log_prob: float  # sum of the token log-probabilities (</s> included when finished)
    score: float  # log_prob divided by the length penalty; hypotheses are ranked by it
    finished: bool  # ended with </s> within the step limit


def _check(width: int, alpha: float) -> None:
    """Raise InputError for a beam width or length penalty that cannot be used."""
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= MAX_BEAM:
        raise InputError(f"The beam width must be an integer between 1 and {MAX_BEAM}, got {width!r}.")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 5.0:
        raise InputError(f"The length penalty must be a number between 0 and 5, got {alpha!r}.")


def _hypotheses(adapter: InspectableModel, tgt_tokenizer: Tokenizer, source: SourceText, width: int, alpha: float,
                max_steps: int | None) -> list[Hypothesis]:
    """The search's final hypotheses, best first; at most 2 x source + 10 steps (or `max_steps`), and one step
    fewer than the decoder reads, as eval --beam has always searched."""
    steps = min(max_steps or 2 * len(source.ids) + 10, adapter.max_target_len - 1)
    tree = search_tree(adapter, source, width, max_steps=steps, alpha=alpha)
    out = []
    for h in tree.hypotheses:
        ids = h.token_ids[:-1] if h.finished else h.token_ids
        out.append(Hypothesis(ids, tgt_tokenizer.decode(list(ids)), h.log_prob, h.score, h.finished))
    return out


def beam_search(model: Seq2SeqTransformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer, text: str,
                width: int = 4, alpha: float = 0.6, max_steps: int | None = None) -> list[Hypothesis]:
    """Beam search for `text`: up to `width` hypotheses, best first; raises InputError for bad input."""
    _check(width, alpha)
    adapter = adapter_for(model, src_tokenizer, tgt_tokenizer)
    return _hypotheses(adapter, tgt_tokenizer, read_source(adapter, text), width, alpha, max_steps)


def beam_texts(model: Seq2SeqTransformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer,
               texts: Sequence[str], width: int = 4, alpha: float = 0.6) -> list[str]:
    """The best beam hypothesis for each text (sources longer than the model allows are cut)."""
    _check(width, alpha)
    adapter = adapter_for(model, src_tokenizer, tgt_tokenizer)
    limit = model.cfg.max_len - 1
    outputs = []
    for text in texts:
        ids = source_ids(src_tokenizer.encode(text)[:limit])
        source = SourceText(tuple(ids), tuple(src_tokenizer.ids_to_tokens(ids)))
        best = _hypotheses(adapter, tgt_tokenizer, source, width, alpha, None)
        outputs.append(best[0].text if best else "")
    return outputs
