"""Pieces of the Compare page: the second model's picker, the step-by-step table, the divergence message."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from transformer.analysis import first_divergence
from transformer.decode import DecodeResult
from transformer.model import HFModelError
from transformer.store import CheckpointError
from ui.models import LIVE, RUN, ActiveModel, ModelOption, model_options, resolve

from .widgets import md_token, visible

MODEL_B_KEY = "compare_model"
STEP_KEY = "compare_step"


def pick_model_b(active: ActiveModel) -> ActiveModel | None:
    """The "Model B" picker (another model than A by default); None after saying why B cannot be loaded."""
    options = model_options()
    by_id = {o.id: o for o in options}
    if st.session_state.get(MODEL_B_KEY) not in by_id:
        # the live run or a saved run against A (the training case), else A against itself
        others = [o.id for o in options if o.id != active.option.id and o.source in (LIVE, RUN)]
        st.session_state[MODEL_B_KEY] = others[0] if others else active.option.id
    chosen = st.selectbox("Model B", list(by_id), format_func=lambda i: by_id[i].label, key=MODEL_B_KEY,
                          help="Model A is the one picked in the sidebar. The live training run compares its "
                               "newest weights with any saved checkpoint.")
    option: ModelOption = by_id[chosen]
    try:
        return resolve(option)
    except (CheckpointError, HFModelError) as exc:
        st.error(f"Cannot load {option.name}: {exc}", icon=":material/error:")
        return None


def model_caption(tag: str, active: ActiveModel) -> str:
    """Which model, which weights: '**A** · reverse · Shipped · 3,000 steps' ('imported' for Hugging Face)."""
    if active.card.get("source") == "huggingface":
        return f"**{tag}** · {active.option.label} · imported, not trained here"
    return f"**{tag}** · {active.option.label} · {int(active.card.get('steps', 0)):,} steps"


def step_table(a: DecodeResult, b: DecodeResult) -> pd.DataFrame:
    """One row per output step: each model's token and probability, and whether they agree."""
    rows = []
    for t in range(max(len(a.steps), len(b.steps))):
        sa = a.steps[t] if t < len(a.steps) else None
        sb = b.steps[t] if t < len(b.steps) else None
        rows.append({"step": t + 1, "A": visible(sa.token) if sa else "", "A prob": sa.prob if sa else None,
                     "B": visible(sb.token) if sb else "", "B prob": sb.prob if sb else None,
                     "same": sa is not None and sb is not None and sa.token == sb.token})
    return pd.DataFrame(rows)


def divergence_message(a: DecodeResult, b: DecodeResult) -> int | None:
    """Say where the outputs first part (or that they never do); returns that 0-based step."""
    split = first_divergence(a.output_tokens, b.output_tokens)
    if split is None:
        st.success(f"No divergence: both models produce the same {len(a.steps)} tokens.", icon=":material/check:")
        return None
    token_a = md_token(a.output_tokens[split]) if split < len(a.steps) else "(ended)"
    token_b = md_token(b.output_tokens[split]) if split < len(b.steps) else "(ended)"
    st.warning(f"First divergence at step {split + 1}: A ‹{token_a}› vs B ‹{token_b}›.",
               icon=":material/call_split:")
    return split


def step_picker(a: DecodeResult, b: DecodeResult) -> int:
    """The "Step" slider both maps follow (1-based in the widget, 0-based returned); a step past both outputs (a stale
    link) falls back to the last one with a note."""
    n_steps = max(len(a.steps), len(b.steps))
    state = st.session_state
    asked = int(state.get(STEP_KEY, 1))
    if asked > n_steps:
        st.info(f"Step {asked} is past both outputs ({n_steps} steps): showing step {n_steps}.",
                icon=":material/link_off:")
    state[STEP_KEY] = min(max(asked, 1), n_steps)
    if n_steps > 1:
        st.slider("Step", min_value=1, max_value=n_steps, key=STEP_KEY,
                  help="Which output step both maps show: the rows up to it, the current one outlined.")
    return state[STEP_KEY] - 1


def step_caption(a: DecodeResult, b: DecodeResult, t: int) -> str:
    """What each model chose at step t: 'Step 3 · A ‹x› 91.0% · B ‹y› 55.2%' (or that its output has ended)."""
    def chose(tag: str, result: DecodeResult) -> str:
        if t >= len(result.steps):
            return f"{tag} (ended after {len(result.steps)} steps)"
        step = result.steps[t]
        return f"{tag} ‹{md_token(step.token)}› {step.prob:.1%}"
    return f"**Step {t + 1}** · {chose('A', a)} · {chose('B', b)}"
