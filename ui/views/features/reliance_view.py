"""Source or prefix (Decode page, encoder-decoders): per step, how much of the update came through cross-attention
(the source) against decoder self-attention (the prefix), the current step marked, and the steps detached from the
source and the source tokens never attended, said in words."""
from __future__ import annotations

import streamlit as st

from transformer.adapters import ResidualPathError
from transformer.charts import reliance_chart, visible_token
from transformer.decode import InputError

from ..kit import PAGE_PX, Selection, reliance_for, show_chart


def show_reliance(sel: Selection, open_widget: str) -> None:
    """Source or prefix over the selection's decode, at its step."""
    active, result = sel.model, sel.result
    if active.family.cross_kind is None:
        return
    with st.expander("Source or prefix: what each step drew on", key=open_widget, on_change="rerun",
                     icon=":material/balance:") as box:
        if not box.open:
            return
        try:
            found = reliance_for(active, result)
        except (InputError, ResidualPathError) as exc:
            st.warning(str(exc), icon=":material/error:")
            return
        steps = found.steps
        t = min((sel.step or 0) + 1, len(steps))
        now = steps[t - 1]
        weights = "" if active.weights_step is None else f" · weights at step {active.weights_step:,}"
        st.markdown(f"**{active.option.name}{weights} · step {t} → {visible_token(now.token)}**: "
                    f"{now.source:.0%} of the update came from the source (cross-attention), {now.prefix:.0%} from "
                    f"the prefix (decoder self-attention)." + (" This step is **detached** from the source: its "
                                                               "cross-attention collapsed onto special tokens."
                                                               if now.detached else ""))
        show_chart(reliance_chart(found, t, PAGE_PX - 200), key=sel.key("reliance_chart"), width="content")
        detached = [s for s in steps if s.detached]
        said = [f"Detached steps: {', '.join(f'{s.step} ({visible_token(s.token)})' for s in detached)}."
                if detached else "No step is detached from the source."]
        omitted = [f"{p} ({visible_token(found.source_tokens[p - 1])})" for p in found.omitted]
        said.append(f"Source tokens never attended most: {', '.join(omitted)}." if omitted
                    else "Every source word is attended most by some step.")
        st.markdown(" ".join(said))
        st.caption("Shares: the norm of what each decoder layer's cross- and self-attention wrote, summed over layers "
                   "(Kobayashi et al. 2020). A step is detached when its last-layer cross-attention is far from "
                   "uniform (Wasserstein ≥ 0.3, Guerreiro et al. 2023 adapted per step) and half its mass is on "
                   "special tokens such as </s>; the step that writes </s> never is.")
