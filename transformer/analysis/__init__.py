"""The analysis stage: numbers about a model's attention (alignment scores, per-head statistics, head ablation,
gradient attribution and its agreement with attention)."""
from .ablation import (
    Head,
    HeadError,
    Sweep,
    ablated_decode,
    all_heads,
    comparison_frame,
    head_mask,
    output_ids,
    parse_head,
    sweep_heads,
)
from .agreement import agreement_frame, agreement_summary, spearman
from .alignment import accepted, alignment_scores, evaluate_alignment, gold_cells, summarize
from .attribution import (
    IG_STEPS,
    METHOD_TITLES,
    METHODS,
    Attribution,
    attribute_step,
    attribute_steps,
    baseline_score,
    substituted,
)
from .compare import AttentionDifference, attention_difference, common_prefix, first_divergence
from .head_report import HeadReport, agreement_frames, average_agreement, average_drops, head_report, report_dict
from .detectors import INDUCTION_LENGTH, Detection, detect_heads, induction_scores, previous_token_scores
from .groups import group_head_label, group_mean, group_members, group_of, grouped, n_groups
from .heads import head_stats
from .scores import corpus_scores

__all__ = ["Detection", "INDUCTION_LENGTH", "detect_heads", "induction_scores", "previous_token_scores",
           "group_head_label", "group_mean", "group_members", "group_of", "grouped", "n_groups", "AttentionDifference", "Attribution", "Head", "HeadError", "HeadReport", "IG_STEPS", "METHODS",
           "METHOD_TITLES", "Sweep", "ablated_decode", "accepted", "agreement_frame", "agreement_frames",
           "agreement_summary", "alignment_scores", "all_heads", "attention_difference", "attribute_step",
           "attribute_steps", "average_agreement", "average_drops", "baseline_score", "common_prefix",
           "comparison_frame", "corpus_scores", "evaluate_alignment", "first_divergence", "gold_cells",
           "head_mask", "head_report", "head_stats", "output_ids", "parse_head", "report_dict", "spearman",
           "substituted", "summarize", "sweep_heads"]
