"""The analysis stage: numbers about a model's attention, in rooms by question: `source` (reading attention at any
length), `heads` (what each head does), `patching` (what changes the output), `attribution` (which inputs it depends
on), `why` (why a head looks where it looks), `corpus` (heads over a corpus), `compare` (two decodes), `circuits`.
This face holds every public name; callers import from it."""
from .attribution.agreement import agreement_frame, agreement_summary, spearman
from .attribution.attribution import (
    IG_STEPS,
    METHOD_TITLES,
    METHODS,
    Attribution,
    attribute_step,
    attribute_steps,
    baseline_score,
    substituted,
)
from .attribution.head_report import (
    HeadReport,
    agreement_frames,
    average_agreement,
    average_drops,
    head_report,
    report_dict,
)
from .circuits import (
    EAP,
    EAP_IG,
    INDUCTION,
    LOGIT_DIFF,
    PREVIOUS_TOKEN,
    CircuitResult,
    circuit_heads,
    find_circuit,
    known_circuit,
    pair_from_text,
    patched_metric,
    top_edges,
)
from .circuits import IG_STEPS as CIRCUIT_IG_STEPS
from .circuits import METRICS as CIRCUIT_METRICS
from .circuits import Pair as CircuitPair
from .circuits import baseline as circuit_baseline
from .compare.decodes import AttentionDifference, attention_difference, common_prefix, first_divergence
from .compare.edit_compare import (
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
from .compare.token_alignment import TokenAlignment, align_tokens, identity_alignment
from .corpus.corpus_estimate import ESTIMATE_SENTENCES, CorpusEstimate, corpus_estimate, sentence_output
from .corpus.corpus_stats import (
    JS_SENTENCES,
    CorpusStats,
    CorpusSums,
    average_linkage_order,
    corpus_statistics,
    corpus_sums,
    is_punctuation,
    merge_sums,
    snapshot_curves,
    stats_from_sums,
)
from .corpus.corpus_stats import STATISTICS as CORPUS_STATISTICS
from .corpus.head_estimate import HeadEstimate, head_estimate
from .corpus.head_examples import DECILES, DISTANCE_EDGES, TOP_ROWS, HeadExamples, distance_bin_labels
from .corpus.head_finder import FINDER_COLUMNS, NOMINAL, finder_table, head_finder_frame
from .corpus.scores import corpus_scores
from .heads.aggregates import (
    AGGREGATES,
    aggregate_dict,
    aggregate_frame,
    aggregate_trace,
    cross_through_encoder,
    max_over_heads,
    rollout,
)
from .heads.alignment import accepted, alignment_scores, evaluate_alignment, gold_cells, summarize
from .heads.detectors import INDUCTION_LENGTH, Detection, detect_heads, induction_scores, previous_token_scores
from .heads.groups import group_head_label, group_mean, group_of, grouped, n_groups
from .heads.head_capture import (
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
from .heads.head_computation import (
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
from .heads.head_json import contributions_dict, internals_dict
from .heads.head_row import HeadRow, head_row
from .heads.layer_positions import model_positions, positions_summary, rotating_layers
from .heads.long_range import LENGTH, LongRange, long_range_dict, long_range_heads, retrieval_scores
from .heads.masked import SEGMENT_FILTERS, attention_change, mask_attribution, segment_filter
from .heads.overview import OVERVIEW_COLUMNS, SIGNED_STATISTICS, STATISTICS, available_statistics, head_overview_frame
from .heads.patterns import PATTERNS, THRESHOLDS, WINDOW, label_of, pattern_scores, window_induction
from .heads.statistics import STATS_COLUMNS, head_stats, stats_frame
from .patching.ablation import (
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
from .patching.head_effects import (
    attribute_in_chunks,
    checked_estimate,
    estimate_agreement,
    estimate_head_effects,
    sweep_heads,
)
from .patching.head_sweep import BF16_TOLERANCE, Cancelled, Progress, bf16_bound
from .patching.patching_estimate import (
    ESTIMATE_COLUMNS,
    PatchingEstimate,
    StepRuns,
    estimate_patching,
    preview_patching,
)
from .patching.patching_estimate import estimate_agreement as patching_agreement
from .patching.patching_replay import find_site, patched_decode
from .patching.patching_sites import (
    ENCODER_OUTPUT,
    HEAD_POSITIONS,
    HEADS,
    RESIDUAL_STREAM,
    SITES,
    PatchingResult,
    Site,
    patch_sites,
    residual_site,
    sites_of,
)
from .patching.runs import BARELY, PatchingSetup, metric_of, patched_metrics, prepare_patching
from .source.attention_source import (
    WHOLE_MAP_FEATURES,
    WINDOW_TOKENS,
    AttentionSource,
    MapsNeeded,
    MapsSource,
    ScoreRow,
    StoreSource,
    attention_source,
    refused_features,
    whole_maps,
)
from .source.decode_cost import estimate_decode, free_memory, machine_rate
from .source.pooling import STRIP_BINS, TILE_SIDE, bin_starts, pool_row, pool_tile
from .source.streamed import LayerSummaries, summarise, summarise_layer
from .why.composition import MODES as COMPOSITION_MODES
from .why.composition import composition_scores, pair_composition, strongest
from .why.lens import (
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
from .why.path_decode import DecodeParts, decode_parts
from .why.qk_attribution import QKTable, qk_attribution
from .why.reliance import Reliance, StepReliance, rank_corpus, reliance, text_reliance, wasserstein_to_uniform
from .why.residual_parts import (
    BIAS,
    EMBED,
    POS,
    Parts,
    PathCapture,
    capture_path,
    frozen_norm,
    mlp_label,
    reading_parts,
    residual_parts,
)
from .why.routes import (
    RESIDUAL,
    Edge,
    Inflow,
    Route,
    RouteGraph,
    node_label,
    proximity,
    route,
    route_dict,
    step_route,
)
from .why.routes import (
    THRESHOLD as ROUTE_THRESHOLD,
)

__all__ = ["AGGREGATES", "BARELY", "BF16_TOLERANCE", "BIAS", "CHANGED", "COMPOSITION_MODES", "CORPUS_STATISTICS",
           "DECILES", "DELETED", "DISTANCE_EDGES", "EMBED", "ENCODER_OUTPUT", "ESTIMATE_COLUMNS", "FINDER_COLUMNS",
           "HEADS", "HEAD_POSITIONS", "IG_STEPS", "INDUCTION", "INDUCTION_LENGTH", "INSERTED", "JS_SENTENCES", "LENGTH",
           "LENS_TOP_K", "MAX_LENS_TOP_K", "METHODS", "METHOD_TITLES", "NOMINAL", "OVERVIEW_COLUMNS", "PATTERNS", "POS",
           "PREVIOUS_TOKEN", "RESIDUAL", "RESIDUAL_STREAM", "ROUTE_THRESHOLD", "SAME", "SEGMENT_FILTERS",
           "SIGNED_STATISTICS", "SITES", "STATISTICS", "THRESHOLDS", "TOP_ROWS", "WINDOW", "AlignedDifference",
           "AttentionDifference", "Attribution", "BatchMask", "Cancelled", "CapturedDecode", "CorpusStats",
           "CorpusSums", "DecodeParts", "Detection", "Edge", "EditComparison", "Head", "HeadComputation", "HeadError",
           "HeadExamples", "HeadReport", "HeadSelectionError", "Inflow", "LayerPrediction", "LensError", "LensGrid",
           "LongRange", "Parts", "PatchingResult", "PatchingSetup", "PathCapture", "Progress", "QKTable", "Reliance",
           "Route", "RouteGraph", "Site", "StepLens", "StepReliance", "Sweep", "TokenAlignment", "ablated_decode",
           "accepted", "aggregate_dict", "aggregate_frame", "aggregate_trace", "agreement_frame", "agreement_frames",
           "agreement_summary", "align_tokens", "aligned_difference", "alignment_scores", "all_heads",
           "attention_change", "attention_difference", "attribute_in_chunks", "attribute_step", "attribute_steps",
           "available_statistics", "average_agreement", "average_drops", "average_linkage_order", "baseline_score",
           "batch_mask", "bf16_bound", "capture_decode", "capture_path", "check_edit", "check_selection",
           "checked_estimate", "circuit_heads", "common_prefix", "compare_edit", "comparison_frame",
           "composition_scores", "computation_at", "contribution_maps", "contributions", "contributions_dict",
           "corpus_scores", "corpus_statistics", "corpus_sums", "cross_through_encoder", "decode_parts", "decoder_ids",
           "detect_heads", "distance_bin_labels", "estimate_agreement", "estimate_head_effects", "estimate_patching",
           "evaluate_alignment", "every_step_lens", "find_site", "finder_table", "first_divergence", "frozen_norm",
           "gold_cells", "group_head_label", "group_mean", "group_of", "grouped", "head_computation",
           "head_contribution_map", "head_finder_frame", "head_mask", "head_overview_frame", "head_report",
           "head_slice", "head_stats", "identity_alignment", "induction_scores", "internals_dict", "is_punctuation",
           "key_vectors", "known_circuit", "label_of", "layer_label", "lens_dict", "lens_grid", "lens_log_probs",
           "long_range_dict", "long_range_heads", "mask_attribution", "mask_matrix", "max_over_heads",
           "mean_contribution_map", "merge_sums", "metric_of", "mlp_label", "n_groups", "node_label", "output_ids",
           "parse_head", "patch_sites", "patched_decode", "patched_metrics", "patching_agreement", "pattern_scores",
           "prepare_patching", "preview_patching", "previous_token_scores", "proximity", "qk_attribution",
           "rank_corpus", "reading_parts", "reliance", "report_dict", "residual_parts", "residual_site", "residuals_of",
           "retrieval_scores", "rollout", "route", "route_dict", "segment_filter", "sites_of", "snapshot_curves",
           "spearman", "stats_from_sums", "step_lens", "step_route", "strongest", "substituted", "summarize",
           "sweep_heads", "text_reliance", "trace_view", "wasserstein_to_uniform", "window_induction"]

__all__ += ["LayerSummaries", "summarise", "summarise_layer"]
__all__ += ["pair_composition"]
__all__ += ["HeadRow", "PatchingEstimate", "StepRuns", "head_row"]
__all__ += ["STRIP_BINS", "TILE_SIDE", "bin_starts", "pool_row", "pool_tile"]
__all__ += ["WHOLE_MAP_FEATURES", "WINDOW_TOKENS", "AttentionSource", "MapsNeeded", "MapsSource", "ScoreRow",
            "StoreSource", "attention_source", "refused_features", "whole_maps"]
__all__ += ["STATS_COLUMNS", "stats_frame"]
__all__ += ["estimate_decode", "free_memory", "machine_rate"]
__all__ += ["ESTIMATE_SENTENCES", "CorpusEstimate", "corpus_estimate", "sentence_output"]
__all__ += ["HeadEstimate", "head_estimate"]
__all__ += ["model_positions", "positions_summary", "rotating_layers"]
__all__ += ["CIRCUIT_IG_STEPS", "CIRCUIT_METRICS", "EAP", "EAP_IG", "LOGIT_DIFF", "CircuitResult", "find_circuit",
            "pair_from_text"]
__all__ += ["CircuitPair", "circuit_baseline", "patched_metric", "top_edges"]
