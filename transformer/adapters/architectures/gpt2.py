"""GPT-2: `transformer.h`, pre-norm (`ln_1`, `ln_2`, final `ln_f`), a learned position table `wpe`, q, k and v fused
one after another in `c_attn` (a Conv1D: its weight is (in, out))."""
from __future__ import annotations

from .spec import LEARNED, SEQUENTIAL, Architecture, Kind, Qkv, Stack

ARCHITECTURE = Architecture(
    model_type="gpt2", family="decoder-only",
    stacks={"decoder": Stack("h", position="wpe", final_norm="ln_f")},
    kinds={"self": Kind("decoder", "attn", "attn.c_proj", "ln_1")},
    mlp={"decoder": ("ln_2", None)},
    pre_norm=True, qkv=Qkv(SEQUENTIAL, ("c_attn",)), positions=LEARNED)
