"""Session state of the Decode page: the step being shown, the forced-token experiment, which result is viewed.

The page's own keys are written here only: another view that hands over to the step-through (the beam tree's
"Decode from here", a click on the lens's grid, a click on a grid that switches heads off) calls this module's
functions, never the keys (tests/app/test_rooms.py)."""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from transformer.decode import AttentionTrace, DecodeResult

from .selection import LINK_PARAMS

STEP_KEY, MODE_KEY = LINK_PARAMS["decode"]["step"], LINK_PARAMS["decode"]["view"]  # widget keys of the link table
LAYER_KEY = LINK_PARAMS["decode"]["layer"]  # the step-through's decoder layer picker (0-based)
FORCED_KEY = "decode_forced"
FORCE_CHOICE_KEY = "decode_force_token"
STEP_FOR_KEY = "decode_step_for"
RERUN_APP_KEY = "decode_rerun_app"
GREEDY, FORCED, TEACHER = "greedy", "forced", "teacher"
VIEW_LABELS = {GREEDY: "Free-running (greedy)", FORCED: "With the forced token", TEACHER: "Teacher-forced"}


def view_label(view: str, result: DecodeResult | None) -> str:
    """The name of a view on its card and in "Step through": a free-running decode that was sampled says so, with
    its settings (the greedy label would name tokens the model did not pick greedily)."""
    sampling = result.sampling if view == GREEDY and result is not None else None
    if sampling is None or sampling.greedy:
        return VIEW_LABELS[view]
    parts = [f"T={sampling.temperature:g}", *([f"top-k {sampling.top_k}"] if sampling.top_k else []),
             *([f"top-p {sampling.top_p:g}"] if sampling.top_p < 1 else []), f"seed {sampling.seed}"]
    return f"Sampled ({', '.join(parts)})"


@dataclass(frozen=True)
class ForcedPrefix:
    """Decoder tokens fed before greedy decoding resumes: the output up to step t, then the user's pick."""

    task: str
    text: str
    tokens: tuple[str, ...]

    @property
    def step(self) -> int:
        """0-based position of the forced token."""
        return len(self.tokens) - 1


def forced_prefix(task: str, text: str) -> ForcedPrefix | None:
    """The forced-token experiment for this input, if the user ran one."""
    forced = st.session_state.get(FORCED_KEY)
    if isinstance(forced, ForcedPrefix) and forced.task == task and forced.text == text:
        return forced
    return None


def fed_before(trace: AttentionTrace, t: int) -> tuple[str, ...]:
    """The tokens the decoder was fed after its prefix and before step t (<s>, or a decoder-only prompt, left out)."""
    start = trace.step_offset + 1  # the row of step 0 holds the prefix's last token
    return tuple(trace.decoder_input_tokens[start: start + t])


def force_token(task: str, text: str, result: DecodeResult, t: int) -> None:
    """Callback: feed the decoder inputs up to step t, then the chosen candidate, and view that output."""
    choice = st.session_state.get(FORCE_CHOICE_KEY)
    if not choice:
        return
    prefix = fed_before(result.trace, t)  # what the decoder saw before step t
    st.session_state[FORCED_KEY] = ForcedPrefix(task, text, (*prefix, choice))
    st.session_state[MODE_KEY] = FORCED
    st.session_state[STEP_KEY] = t + 1
    rerun_whole_page()  # the step-through fragment reruns the page: the outputs change


def decode_from_here(task: str, text: str, tokens: tuple[str, ...]) -> None:
    """Callback: feed `tokens` (a prefix another view found, such as a beam node's) and step through the greedy
    continuation from its last token."""
    st.session_state[FORCED_KEY] = ForcedPrefix(task, text, tokens)
    st.session_state[MODE_KEY] = FORCED
    st.session_state[STEP_KEY] = len(tokens)


def show_step(step: int, layer: int | None = None) -> None:
    """Step through to `step` (1-based), with the decoder layer `layer` (0-based) when given."""
    st.session_state[STEP_KEY] = step
    if layer is not None:
        st.session_state[LAYER_KEY] = layer


def rerun_whole_page() -> None:
    """Ask the step-through's fragment to rerun the whole page (a change the outputs above it depend on)."""
    st.session_state[RERUN_APP_KEY] = True


def clear_forced() -> None:
    """Callback: drop the forced-token experiment."""
    st.session_state.pop(FORCED_KEY, None)
    st.session_state[MODE_KEY] = GREEDY


def move_step(delta: int, n_steps: int) -> None:
    """Callback for Prev / Next: move the 1-based step, staying within 1..n_steps."""
    current = int(st.session_state.get(STEP_KEY, 1))
    st.session_state[STEP_KEY] = min(max(current + delta, 1), n_steps)


def prepare_step(n_steps: int, identity: tuple) -> int:
    """Keep the step valid for the result shown (back to 1 for a new input, kept across views); 0-based."""
    state = st.session_state
    if state.get(STEP_FOR_KEY) != identity:
        state[STEP_FOR_KEY] = identity
        state[STEP_KEY] = 1
    state[STEP_KEY] = min(max(int(state.get(STEP_KEY, 1)), 1), n_steps)
    return state[STEP_KEY] - 1


def prepare_view(available: list[str]) -> None:
    """Fall back to the greedy view when the viewed result no longer exists."""
    if st.session_state.get(MODE_KEY) not in available:
        st.session_state[MODE_KEY] = GREEDY
