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
)
from .aggregates import (
    AGGREGATES,
    aggregate_dict,
    aggregate_frame,
    aggregate_trace,
    cross_through_encoder,
    max_over_heads,
    rollout,
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
from .detectors import INDUCTION_LENGTH, Detection, detect_heads, induction_scores, previous_token_scores
from .groups import group_head_label, group_mean, group_of, grouped, n_groups
from .head_effects import attribute_in_chunks, checked_estimate, estimate_agreement, estimate_head_effects, sweep_heads
from .head_report import HeadReport, agreement_frames, average_agreement, average_drops, head_report, report_dict
from .head_sweep import BF16_TOLERANCE, Cancelled, Progress, bf16_bound
from .head_capture import (
    BatchMask,
    CapturedDecode,
    batch_mask,
    capture_decode,
    computation_at,
    contributions,
    decoder_ids,
    mask_matrix,
    trace_view,
)
from .head_json import contributions_dict, internals_dict
from .head_computation import (
    HeadComputation,
    HeadSelectionError,
    check_selection,
    contribution_maps,
    head_computation,
    head_contribution_map,
    head_slice,
    key_vectors,
    mean_contribution_map,
)
from .heads import head_stats
from .lens import (
    LENS_TOP_K,
    MAX_LENS_TOP_K,
    LayerPrediction,
    LensError,
    LensGrid,
    StepLens,
    every_step_lens,
    layer_label,
    lens_dict,
    lens_grid,
    lens_log_probs,
    residuals_of,
    step_lens,
)
from .patching import BARELY, PatchingSetup, metric_of, patched_metrics, prepare_patching
from .patching_estimate import ESTIMATE_COLUMNS, estimate_patching, preview_patching
from .patching_estimate import estimate_agreement as patching_agreement
from .patching_sites import ENCODER_OUTPUT, HEADS, RESIDUAL_STREAM, SITES, PatchingResult, patch_sites, residual_site
from .token_alignment import TokenAlignment, align_tokens, identity_alignment
from .patching_replay import find_site, patched_decode
from .patching_sites import HEAD_POSITIONS, Site, sites_of
from .edit_compare import (
    CHANGED,
    DELETED,
    INSERTED,
    SAME,
    AlignedDifference,
    EditComparison,
    aligned_difference,
    check_edit,
    compare_edit,
)
from .corpus_stats import JS_SENTENCES, STATISTICS as CORPUS_STATISTICS, CorpusStats, CorpusSums, average_linkage_order, corpus_statistics, corpus_sums, is_punctuation, merge_sums, snapshot_curves, stats_from_sums
from .head_examples import DECILES, DISTANCE_EDGES, TOP_ROWS, HeadExamples, distance_bin_labels
from .long_range import LENGTH, LongRange, long_range_dict, long_range_heads, retrieval_scores
from .head_finder import FINDER_COLUMNS, NOMINAL, finder_table, head_finder_frame
from .patterns import PATTERNS, THRESHOLDS, WINDOW, label_of, pattern_scores, window_induction
from .masked import SEGMENT_FILTERS, attention_change, mask_attribution, segment_filter
from .overview import OVERVIEW_COLUMNS, SIGNED_STATISTICS, STATISTICS, available_statistics, head_overview_frame
from .scores import corpus_scores

__all__ = ["DECILES", "DISTANCE_EDGES", "TOP_ROWS", "HeadExamples", "distance_bin_labels", "SEGMENT_FILTERS", "attention_change", "mask_attribution", "segment_filter", "AGGREGATES", "AttentionDifference", "Attribution", "BF16_TOLERANCE", "Cancelled", "Detection", "Head",
           "HeadError", "HeadReport", "IG_STEPS", "INDUCTION_LENGTH", "METHODS", "METHOD_TITLES",
           "OVERVIEW_COLUMNS", "Progress", "SIGNED_STATISTICS", "STATISTICS", "Sweep", "ablated_decode",
           "accepted", "aggregate_dict", "aggregate_frame", "aggregate_trace", "agreement_frame",
           "agreement_frames", "agreement_summary", "alignment_scores", "all_heads", "attention_difference",
           "attribute_in_chunks", "attribute_step", "attribute_steps", "available_statistics",
           "average_agreement", "average_drops", "baseline_score", "bf16_bound", "checked_estimate",
           "common_prefix", "comparison_frame", "corpus_scores", "cross_through_encoder", "detect_heads",
           "estimate_agreement", "estimate_head_effects", "evaluate_alignment", "first_divergence",
           "gold_cells", "group_head_label", "group_mean", "group_of", "grouped",
           "head_mask", "head_overview_frame", "head_report", "head_stats", "induction_scores",
           "max_over_heads", "n_groups", "output_ids", "parse_head", "previous_token_scores", "report_dict",
           "rollout", "spearman", "substituted", "summarize", "sweep_heads",
           "BARELY", "PatchingSetup", "metric_of", "patched_metrics", "prepare_patching", "ESTIMATE_COLUMNS",
           "estimate_patching", "preview_patching", "patching_agreement", "ENCODER_OUTPUT", "HEADS",
           "RESIDUAL_STREAM", "SITES", "PatchingResult", "patch_sites", "residual_site", "TokenAlignment",
           "align_tokens", "identity_alignment",
           "CHANGED", "DELETED", "INSERTED", "SAME", "AlignedDifference", "EditComparison", "aligned_difference",
           "compare_edit",
           "HeadComputation", "HeadSelectionError", "check_selection", "contribution_maps",
           "head_computation", "head_slice", "key_vectors", "mean_contribution_map",
           "CapturedDecode", "capture_decode", "computation_at", "contributions", "decoder_ids", "trace_view",
           "contributions_dict", "internals_dict", "head_contribution_map", "mask_matrix", "BatchMask", "batch_mask",
           "LENS_TOP_K", "MAX_LENS_TOP_K", "LayerPrediction", "LensError", "LensGrid", "StepLens", "every_step_lens", "layer_label",
           "lens_dict", "lens_grid", "lens_log_probs", "residuals_of", "step_lens"]
__all__ += ["snapshot_curves", "JS_SENTENCES", "CORPUS_STATISTICS", "CorpusStats", "CorpusSums", "average_linkage_order", "corpus_statistics",
            "corpus_sums", "is_punctuation", "merge_sums", "stats_from_sums"]
__all__ += ["find_site", "patched_decode"]
__all__ += ["HEAD_POSITIONS", "Site", "sites_of", "check_edit"]
__all__ += ["LENGTH", "LongRange", "long_range_dict", "long_range_heads", "retrieval_scores", "PATTERNS",
            "THRESHOLDS", "WINDOW", "label_of", "pattern_scores", "window_induction", "FINDER_COLUMNS", "NOMINAL",
            "finder_table", "head_finder_frame"]
from .residual_parts import (  # noqa: E402
    BIAS, EMBED, POS, Parts, PathCapture, capture_path, frozen_norm, mlp_label, reading_parts, residual_parts,
)
from .qk_attribution import QKTable, qk_attribution  # noqa: E402
from .path_decode import DecodeParts, decode_parts  # noqa: E402
from .composition import MODES as COMPOSITION_MODES, composition_scores, strongest  # noqa: E402
from .routes import (  # noqa: E402
    RESIDUAL, THRESHOLD as ROUTE_THRESHOLD, Edge, Inflow, Route, RouteGraph, node_label, proximity, route, route_dict,
    step_route,
)

__all__ += ["BIAS", "EMBED", "POS", "Parts", "PathCapture", "capture_path", "frozen_norm", "mlp_label", "reading_parts",
            "residual_parts", "QKTable", "qk_attribution", "DecodeParts", "decode_parts",
            "COMPOSITION_MODES", "composition_scores", "strongest", "RESIDUAL", "ROUTE_THRESHOLD", "Edge",
            "Inflow", "Route", "RouteGraph", "node_label", "proximity", "route", "route_dict", "step_route"]
from .reliance import Reliance, StepReliance, rank_corpus, reliance, text_reliance, wasserstein_to_uniform  # noqa: E402

__all__ += ["Reliance", "StepReliance", "rank_corpus", "reliance", "text_reliance", "wasserstein_to_uniform"]
from .circuit import INDUCTION, PREVIOUS_TOKEN, circuit_heads, known_circuit  # noqa: E402

__all__ += ["INDUCTION", "PREVIOUS_TOKEN", "circuit_heads", "known_circuit"]
