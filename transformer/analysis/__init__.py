"""The analysis stage: numbers about a model's attention (alignment scores, per-head statistics)."""
from .alignment import accepted, alignment_scores, evaluate_alignment, gold_cells, summarize
from .heads import head_stats
from .scores import corpus_scores

__all__ = ["accepted", "alignment_scores", "corpus_scores", "evaluate_alignment", "gold_cells", "head_stats", "summarize"]
