"""What changes the output when an activation is changed: activation patching (runs, sites, the one-pass estimate, a
patched decode), heads switched off and the importance sweep.

The analysis stage's face (`transformer.analysis`) holds every public name; import from it."""
