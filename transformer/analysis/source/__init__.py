"""How attention is read at any length: one source with two backings (a short input's maps, the attention store), the
streamed summaries, row and tile pooling, a long input's causal rows, a stored decode's cost.

The analysis stage's face (`transformer.analysis`) holds every public name; import from it."""
