"""Circuits (docs/circuits.md): which heads and connections carry a behaviour. Every edge — from the embeddings, a
head or an MLP into a later head's query, key or value, an MLP or the logits — is scored by edge attribution (EAP,
EAP-IG) on clean/corrupted pairs and the circuits of the top edges are checked by real edge patching (a faithfulness
curve) and compared with exact single-edge patching (`agreement`). Also the heads of a known circuit named from the
detectors (`known_circuit`)."""
from .agreement import FLOOR, TOP, Agreement, ShrunkPair, agreement, shrunk
from .faithfulness import (
    FRACTIONS,
    GOAL,
    Baseline,
    Faithfulness,
    baseline,
    edge_effects,
    faithfulness,
    patched_metric,
    top_edges,
)
from .finder import CircuitResult, EdgeScore, find_circuit
from .forward import GraphRun, Mixing, Plan, graph_forward, make_plan
from .graph import INPUTS, LOGITS, CircuitGraph, Input, build_graph, emb_label, kv_label
from .known import INDUCTION, PREVIOUS_TOKEN, circuit_heads, known_circuit
from .scores import EAP, EAP_IG, IG_STEPS, METHODS, edge_scores, pair_scores
from .target import KL, LOGIT_DIFF, LOGPROB, METRICS, Pair, metric, pair_from_ids, pair_from_text

__all__ = ["EAP", "EAP_IG", "FLOOR", "FRACTIONS", "GOAL", "IG_STEPS", "INDUCTION", "INPUTS", "KL", "LOGITS",
           "LOGIT_DIFF", "LOGPROB", "METHODS", "METRICS", "PREVIOUS_TOKEN", "TOP", "Agreement", "Baseline",
           "CircuitGraph", "CircuitResult", "EdgeScore", "Faithfulness", "GraphRun", "Input", "Mixing", "Pair", "Plan",
           "ShrunkPair", "agreement", "baseline", "build_graph", "circuit_heads", "edge_effects", "edge_scores",
           "emb_label", "faithfulness", "find_circuit", "graph_forward", "known_circuit", "kv_label", "make_plan",
           "metric", "pair_from_ids", "pair_from_text", "pair_scores", "patched_metric", "shrunk", "top_edges"]
