"""Why a head looks where it looks: the residual stream as parts, QK attribution, composition, routes, reliance on the
source, the logit lens.

The analysis stage's face (`transformer.analysis`) holds every public name; import from it."""
