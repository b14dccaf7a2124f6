"""What heads do over a corpus: head statistics, the one-pass estimate averaged, the head finder's examples and frame,
scores of outputs.

The analysis stage's face (`transformer.analysis`) holds every public name; import from it."""
