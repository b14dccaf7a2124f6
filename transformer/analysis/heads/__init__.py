"""What each head does: its statistics, one head's row and computation, the head overview, max and rollout maps,
key/value groups, positions per layer, alignment with gold and across a pair, masked inputs, the detectors and
pattern labels.

The analysis stage's face (`transformer.analysis`) holds every public name; import from it."""
