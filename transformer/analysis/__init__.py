"""The analysis stage: numbers about a model's attention (alignment scores, per-head statistics)."""
from .alignment import accepted, alignment_scores, evaluate_alignment, gold_cells, summarize
from .compare import AttentionDifference, attention_difference, common_prefix, first_divergence
from .heads import head_stats

__all__ = ["AttentionDifference", "accepted", "alignment_scores", "attention_difference", "common_prefix",
           "evaluate_alignment", "first_divergence", "gold_cells", "head_stats", "summarize"]
