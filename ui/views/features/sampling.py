"""Sampling on the Decode page: temperature, top-k, top-p and a seed (kept in the link), the sampled decode
the step-through walks instead of the greedy one, and each step's distribution after temperature and filtering with
the cut and the drawn token's rank. The same seed gives the same tokens as the command line and the notebook."""
from __future__ import annotations

import streamlit as st

from transformer.charts import topk_bars
from transformer.decode import MAX_TEMPERATURE, DecodeResult, InputError, Sampling, greedy_decode
from ui.models import ActiveModel
from ui.server import shared

from ..kit import LINK_PARAMS, cached_chart, chart_heading, md_token, show_chart

_KEYS = LINK_PARAMS["decode"]  # link parameter -> widget key
TEMPERATURE_KEY, SAMPLE_TOP_K_KEY = _KEYS["temperature"], _KEYS["sample_topk"]
TOP_P_KEY, SEED_KEY = _KEYS["top_p"], _KEYS["seed"]
MAX_SEED = 999_999  # what a link and the seed box take
MIN_TOP_P = 0.01


@shared
def _sampled(model_key: str, _active: ActiveModel, text: str, top_k: int, settings: tuple[float, int, float, int]
             ) -> DecodeResult:
    return greedy_decode(_active.adapter, text, top_k=top_k, sampling=Sampling(*settings))


def _clamp(key: str, low: float, high: float, what: str) -> None:
    """Keep a restored value inside its box's range (a link may name more than this model has), with a note."""
    value = st.session_state.get(key)
    if value is not None and not low <= value <= high:
        kept = min(max(value, low), high)
        st.session_state[key] = type(value)(kept)
        st.warning(f"{what} {value:g} is outside {low:g}–{high:g} for this model: {kept:g} is used.",
                   icon=":material/tune:")


def sampling_controls(active: ActiveModel) -> Sampling | None:
    """The sampling boxes (temperature 0: greedy, the default); the settings, or None for greedy decoding."""
    state = st.session_state
    state.setdefault(TEMPERATURE_KEY, 0.0)
    state.setdefault(SAMPLE_TOP_K_KEY, 0)
    state.setdefault(TOP_P_KEY, 1.0)
    state.setdefault(SEED_KEY, 0)
    vocab = int(active.adapter.vocab_size)
    with st.expander("Sample instead of taking the most probable token", icon=":material/casino:",
                     expanded=bool(state[TEMPERATURE_KEY])):
        _clamp(TEMPERATURE_KEY, 0.0, MAX_TEMPERATURE, "Temperature")
        _clamp(SAMPLE_TOP_K_KEY, 0, vocab, "Top-k")
        _clamp(TOP_P_KEY, MIN_TOP_P, 1.0, "Top-p")
        _clamp(SEED_KEY, 0, MAX_SEED, "Seed")
        c_t, c_k, c_p, c_s = st.columns(4)
        temperature = c_t.number_input("Temperature", min_value=0.0, max_value=MAX_TEMPERATURE, step=0.1,
                                       key=TEMPERATURE_KEY, help="0: greedy (the most probable token). Below 1 "
                                       "sharpens the distribution, above 1 flattens it.")
        top_k = c_k.number_input("Sample from the top k", min_value=0, max_value=vocab, step=1, key=SAMPLE_TOP_K_KEY,
                                 help="Only the k most probable tokens can be drawn; 0: no limit.")
        top_p = c_p.number_input("Top-p", min_value=MIN_TOP_P, max_value=1.0, step=0.05, key=TOP_P_KEY,
                                 help="Only the most probable tokens whose probabilities add up to p can be drawn "
                                      "(nucleus sampling); 1: no limit.")
        seed = c_s.number_input("Seed", min_value=0, max_value=MAX_SEED, step=1, key=SEED_KEY,
                                help="The same seed draws the same tokens, here, in the command line "
                                     "(decode --seed) and in a notebook; it is in the page's link.")
        st.caption("Each step is drawn as Hugging Face's generate(do_sample=True) draws it: temperature, then top-k, "
                   "then top-p, then one draw with the seed's generator.")
    if not temperature:
        return None
    return Sampling(float(temperature), int(top_k), float(top_p), int(seed))


def sampled_or_message(active: ActiveModel, text: str, top_k: int, sampling: Sampling) -> DecodeResult | None:
    """The sampled decode, or None after showing why it cannot run."""
    settings = (sampling.temperature, sampling.top_k, sampling.top_p, sampling.seed)
    try:
        with st.spinner(f"Sampling with {active.option.name}…", show_time=True):
            return _sampled(active.cache_key, active, text, int(top_k), settings)
    except InputError as exc:
        st.warning(str(exc), icon=":material/edit_note:")
        return None


def show_sampled_step(result: DecodeResult, t: int) -> None:
    """A sampled step: the distribution it was drawn from (after temperature and filtering), where the cut fell and
    where the drawn token ranked in the model's own distribution (the top-k chart above)."""
    s = result.sampling
    sample = result.samples[t] if s is not None and t < len(result.samples) else None
    if s is None or sample is None:
        return
    step = result.steps[t]
    chart_heading(f"Step {t + 1} was drawn at temperature {s.temperature:g}, top-k {s.top_k or 'off'}, "
                  f"top-p {s.top_p:g}, seed {s.seed}: the distribution after temperature and filtering")
    bars = cached_chart(topk_bars, sample.top_after, chosen=step.token, width=300)
    show_chart(bars, key="decode_sampled_bars", width="content")
    cut = f"the cut falls after rank {sample.kept:,}: no token below it could be drawn"
    shown = f" (the {len(sample.top_after)} most probable shown)" if len(sample.top_after) < sample.kept else ""
    st.caption(f"{sample.kept:,} tokens survived temperature, top-k and top-p{shown}; {cut}. The drawn token "
               f"‹{md_token(step.token)}› ranked {sample.rank:,} in the model's own distribution (the top-k chart "
               f"above, before filtering) and had probability {sample.prob_after:.1%} after filtering.")
