"""Two decodes side by side: the first divergence, an input and its edit aligned, tokens aligned.

The analysis stage's face (`transformer.analysis`) holds every public name; import from it."""
