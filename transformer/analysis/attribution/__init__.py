"""Which inputs the output depends on: Captum's attributions, and attention against attribution per head.

The analysis stage's face (`transformer.analysis`) holds every public name; import from it."""
