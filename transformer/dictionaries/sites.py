"""Where a dictionary reads the model: a site's name in the studio (`resid:L3`, `attn:self:L2`, `resid:enc:out`),
its SAELens hook name (`blocks.2.hook_resid_pre`, `blocks.1.attn.hook_z`) and its place in a model's insides.

`resid:L<l>` is the residual stream entering layer l (1-based, as heads are; before the layer's norm), on the one
stack of a decoder-only or encoder-only model; an encoder-decoder names its stack, `resid:enc:L<l>` and
`resid:dec:L<l>`, and `resid:enc:out` is the encoder's output through its final norm (what cross-attention keys
read). `attn:<kind>:L<l>` is layer l's attention output before W_O, the heads' outputs concatenated (SAELens's
`hook_z`), kind one of `enc`, `dec`, `cross`, `self`. A single-stack model's hooks are TransformerLens's
(`blocks.{l-1}...`); an encoder-decoder's carry `encoder.` or `decoder.` before them, and its cross-attention is
`decoder.blocks.{l-1}.cross_attn.hook_z`; the encoder output is `encoder.ln_final.hook_normalized`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..adapters import InspectableModel
from ..model import KIND_CODES

RESID, ATTN = "resid", "attn"
STACK_CODES = {"enc": "encoder", "dec": "decoder"}
ENCODER_OUT_HOOK = "encoder.ln_final.hook_normalized"
_SITE = re.compile(r"^(resid|attn)(?::(enc|dec|cross|self))?:(?:L(\d{1,4})|(out))$", re.IGNORECASE)
_HOOK = re.compile(r"^(?:(encoder|decoder)\.)?blocks\.(\d{1,4})\.(hook_resid_pre|attn\.hook_z|cross_attn\.hook_z)$")


class DictionaryError(ValueError):
    """A dictionary that cannot be read, written or used on this model; the message is one line for the user."""


@dataclass(frozen=True)
class Site:
    """A site as written: `what` (resid or attn), `code` (a stack for resid: enc, dec or None; a kind for attn:
    enc, dec, cross or self), `layer` (1-based; None: the encoder's output)."""

    what: str
    code: str | None
    layer: int | None

    @classmethod
    def parse(cls, text: str) -> Site:
        """`resid:L3`, `resid:enc:L1`, `resid:enc:out`, `attn:self:L2`; DictionaryError for anything else."""
        match = _SITE.match((text or "").strip())
        bad = match is None or match[3] is not None and int(match[3]) < 1
        if not bad and match is not None:
            what, code = match[1].lower(), match[2] and match[2].lower()
            bad = (what == ATTN and (code is None or match[4] is not None)
                   or what == RESID and code not in (None, "enc", "dec")
                   or match[4] is not None and code != "enc")
        if bad or match is None:
            raise DictionaryError(f"cannot read site {(text or '')[:40]!r}: write resid:L<l>, resid:enc:L<l>, "
                                  "resid:dec:L<l>, resid:enc:out or attn:<enc|dec|cross|self>:L<l> (l from 1)")
        return cls(match[1].lower(), match[2] and match[2].lower(), int(match[3]) if match[3] else None)

    @property
    def label(self) -> str:
        """The site as the studio writes it."""
        where = "out" if self.layer is None else f"L{self.layer}"
        return ":".join(p for p in (self.what, self.code, where) if p)

    @property
    def hook_name(self) -> str:
        """SAELens's `metadata.hook_name` for this site."""
        if self.layer is None:
            return ENCODER_OUT_HOOK
        stack = {"enc": "encoder.", "dec": "decoder.", "cross": "decoder."}.get(self.code or "", "")
        if self.what == RESID:
            return f"{stack}blocks.{self.layer - 1}.hook_resid_pre"
        module = "cross_attn" if self.code == "cross" else "attn"
        return f"{'' if self.code == 'self' else stack}blocks.{self.layer - 1}.{module}.hook_z"

    @classmethod
    def from_hook(cls, hook: str) -> Site:
        """The site of a SAELens hook name; DictionaryError for a hook the studio has no site for."""
        if hook == ENCODER_OUT_HOOK:
            return cls(RESID, "enc", None)
        match = _HOOK.match(hook or "")
        if match is None:
            raise DictionaryError(f"the studio reads dictionaries at blocks.N.hook_resid_pre or blocks.N.attn.hook_z "
                                  f"(encoder./decoder. before them on an encoder-decoder), not {hook!r}")
        stack, layer, point = match[1], int(match[2]) + 1, match[3]
        code = {"encoder": "enc", "decoder": "dec", None: None}[stack]
        if point == "hook_resid_pre":
            return cls(RESID, code, layer)
        if point.startswith("cross"):
            return cls(ATTN, "cross", layer)
        return cls(ATTN, code or "self", layer)


@dataclass(frozen=True)
class Place:
    """A site on one model: `stack` (encoder or decoder), `index` (its residual stream entering 0-based layer
    `index`; None: the encoder's output), `kind` and `layer` (0-based) of an attention output, `width` (d_in)."""

    site: Site
    stack: str
    index: int | None
    kind: str | None
    layer: int
    width: int


def place(site: Site, adapter: InspectableModel) -> Place:
    """Where `site` is on `adapter`; DictionaryError in one line where the model has no such site."""
    family, counts = adapter.family, adapter.head_counts()
    two_stacks = family.has_cross
    if site.what == RESID:
        if two_stacks and site.code is None:
            raise DictionaryError(f"{adapter.name} is an encoder-decoder: name the stream, resid:enc:L{site.layer} "
                                  f"or resid:dec:L{site.layer}")
        if not two_stacks and site.code is not None:
            raise DictionaryError(f"{adapter.name} has one residual stream: write resid:L{site.layer or 1}")
        stack = STACK_CODES[site.code] if site.code else family.output_stack
        kind = family.encoder_kind if stack == "encoder" else family.decoder_kind
        assert kind is not None
        n_layers = counts[kind][0]
        if site.layer is not None and site.layer > n_layers:
            raise DictionaryError(f"{adapter.name}'s {stack} has layers 1-{n_layers}: there is no {site.label}")
        weight, _ = adapter.output_projection(kind, 0)
        index = None if site.layer is None else site.layer - 1
        return Place(site, stack, index, None, 0 if index is None else index, int(weight.shape[0]))
    kind = KIND_CODES[site.code or "self"]
    if kind not in family.kinds and not two_stacks and site.code in ("self", "enc"):
        kind = family.kinds[0]  # a single-stack model's one kind: `self` and its own code name the same layers
    if kind not in family.kinds:
        codes = sorted(f"attn:{c}" for c, k in KIND_CODES.items() if k in family.kinds)
        raise DictionaryError(f"{adapter.name} has no {site.code} attention (its sites: {', '.join(codes)})")
    n_layers = counts[kind][0]
    assert site.layer is not None
    if site.layer > n_layers:
        raise DictionaryError(f"{adapter.name}'s {site.code} attention has layers 1-{n_layers}: there is no "
                              f"{site.label}")
    weight, _ = adapter.output_projection(kind, site.layer - 1)
    stack = "encoder" if kind == family.encoder_kind else "decoder"
    return Place(site, stack, None, kind, site.layer - 1, int(weight.shape[1]))

