"""Poll the room: in presenter mode the speaker poses a question on the view shown (Decode: which source token will
this head look at most at this step, or, without a source, which token the model says next; Attention: which key a
row of the map looks at most); the poll's id goes into the page's link, so the QR code carries it; every other session
on that link votes once with large buttons at the top of its page; the speaker's screen counts the votes live and, on
Reveal, draws them beside the model's real row (and, out of presenter mode, offers the result for slides). The polls
live in `ui.server.POLLS`; a vote reruns only its fragment."""
from __future__ import annotations

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from transformer.charts import poll_chart, visible_token
from ui.server import MAX_OPTIONS, POLLS, PollError, PollQuestion

from ..kit import LINK_PARAMS, Selection, head_label, map_kind, md, presenting, show_chart, slide_downloads

MESSAGE_KEY = "studio_poll_message"  # the refusal of this session's last vote (one line)
CLOSED_KEY = "studio_poll_closed"  # the speaker closed the poll: the page reruns (its link without the poll)
_BIG_BUTTONS = """<style>
.st-key-studio_poll_vote button { min-height: 3.2rem; font-size: 1.35rem; }
.st-key-studio_poll_vote button p { font-size: 1.35rem; }
</style>"""


def session_name() -> str:
    """This browser session's id (a poll's owner and each voter are sessions)."""
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else "no-session"


def poll_key(page: str) -> str | None:
    """The session key holding the poll of `page` (None: a page without polls)."""
    return LINK_PARAMS.get(page, {}).get("poll")


def decode_question(sel: Selection) -> PollQuestion | str:
    """Decode's question at the selection's step (or why there is none): the step's cross-attention row over the
    source tokens, or, for a model without a source, the step's top-k."""
    trace, t = sel.result.trace, sel.at
    cross = trace.family.cross_kind
    named = head_label(sel.head, spelled=True).lower()
    if cross is not None:
        options = tuple(trace.source_tokens)
        answer = trace.matrix(cross, sel.layer, sel.head)[trace.step_offset + t].tolist()
        prompt = f"Step {t + 1}: which source token will layer {sel.layer + 1} · {named} look at most?"
    else:
        top = sel.result.steps[t].top_k
        options, answer = tuple(tok for tok, _ in top), [p for _, p in top]
        prompt = f"Step {t + 1}: which token will the model say next?"
    return _question(prompt, options, answer)


def attention_question(sel: Selection) -> PollQuestion | str:
    """Attention's question on the map shown: which key the middle row looks at most (or why there is none)."""
    trace, kind = sel.maps, sel.kind or map_kind(sel.maps)
    queries, keys = trace.labels(kind)
    row = len(queries) // 2
    named = head_label(sel.head, spelled=True).lower()
    answer = trace.matrix(kind, sel.layer, sel.head)[row].tolist()
    prompt = (f"Row {row + 1} ‹{visible_token(queries[row])}›: which key will layer {sel.layer + 1} · {named} look at "
              "most?")
    return _question(prompt, tuple(keys), answer)


def _question(prompt: str, options: tuple[str, ...], answer: list[float]) -> PollQuestion | str:
    if len(options) > MAX_OPTIONS:
        return f"Too many tokens for a poll ({len(options)}; a poll offers at most {MAX_OPTIONS})."
    if len(options) < 2:
        return "A poll needs two tokens or more to choose from."
    return PollQuestion(prompt, options, tuple(float(a) for a in answer))


def _pose(key: str, question: PollQuestion) -> None:
    st.session_state[key] = POLLS.open(session_name(), question)


def show_poll_control(sel: Selection, question: PollQuestion | str) -> None:
    """The speaker's side of a poll on `sel`'s page: "Poll the room" in presenter mode, and this session's open poll
    (its live count, Reveal and Close; after Reveal the votes beside the model's row)."""
    key = poll_key(sel.page)
    if key is None:
        return
    poll_id = st.session_state.get(key)
    if poll_id and POLLS.owner_of(poll_id) == session_name():
        _speaker_panel(sel.page, sel.title.lines("Poll of the room"))
        return
    if not presenting():
        return
    if isinstance(question, str):
        st.button("Poll the room", key=f"{sel.page}_poll_open", icon=":material/how_to_vote:", disabled=True,
                  help=question)
        return
    st.button("Poll the room", key=f"{sel.page}_poll_open", icon=":material/how_to_vote:", on_click=_pose,
              args=(key, question), help=f"Ask the room: {question.prompt} The QR code's link then opens the "
                                              "poll on each phone.")


def _reveal(poll_id: str) -> None:
    try:
        POLLS.reveal(poll_id, session_name())
    except PollError as exc:
        st.session_state[MESSAGE_KEY] = str(exc)


def _close(page: str, poll_id: str) -> None:
    try:
        POLLS.close(poll_id, session_name())
    except PollError as exc:
        st.session_state[MESSAGE_KEY] = str(exc)
    st.session_state.pop(poll_key(page) or "", None)
    st.session_state[CLOSED_KEY] = True  # the fragment then reruns the page: the link loses the poll


@st.fragment(run_every=0.5)
def _speaker_panel(page: str, title_lines: list[str]) -> None:
    """The open poll on the speaker's screen, redrawn twice a second (only this fragment reruns)."""
    if st.session_state.pop(CLOSED_KEY, False):
        st.rerun(scope="app")
    poll_id = st.session_state.get(poll_key(page) or "")
    view = POLLS.view(poll_id) if poll_id else None
    if view is None:
        return
    question = view.question
    with st.container(border=True, key="studio_poll_speaker"):
        st.markdown(f"**Poll:** {md(question.prompt)}")
        if not view.revealed:
            with st.container(key="studio_poll_count"):
                st.markdown(f"**{view.total}** {'vote' if view.total == 1 else 'votes'} so far · scan the QR code "
                            "to vote")
            reveal, close = st.columns(2)
            reveal.button("Reveal", key="studio_poll_reveal", icon=":material/visibility:", on_click=_reveal,
                          args=(poll_id,), type="primary", width="stretch")
            close.button("Close poll", key="studio_poll_close", icon=":material/close:", on_click=_close,
                         args=(page, poll_id), width="stretch")
            return
        chart = poll_chart(question.options, view.counts, question.answer, width=240)
        with st.container(key="studio_poll_result"):
            show_chart(chart, width="content")
        top = visible_token(question.options[question.top])
        with st.container(key="studio_poll_guessed"):
            st.markdown(f"**{view.guessed_top} of {view.total}** guessed the model's top token ‹{md(top)}› "
                        f"({question.answer[question.top]:.1%})")
        slide_downloads(chart, [*title_lines, question.prompt], "poll_result", "studio_poll_result")
        st.button("Close poll", key="studio_poll_close", icon=":material/close:", on_click=_close,
                  args=(page, poll_id))


def _vote(poll_id: str, option: int) -> None:
    try:
        POLLS.vote(poll_id, session_name(), option)
    except PollError as exc:
        st.session_state[MESSAGE_KEY] = str(exc)


def show_room_poll(page: str) -> None:
    """At the top of the page for a session on a poll's link that did not pose it: the question and a large button
    per token (one vote; a second one, or one after the reveal, is refused in one line). Nothing otherwise; a link
    to a poll that is closed loses it."""
    key = poll_key(page)
    poll_id = st.session_state.get(key) if key else None
    if not poll_id:
        return
    owner = POLLS.owner_of(poll_id)
    if owner is None:
        st.session_state.pop(key or "", None)
        return
    if owner != session_name():
        _audience_panel(poll_id)


@st.fragment
def _audience_panel(poll_id: str) -> None:
    """The poll on an audience's phone; a vote reruns only this fragment."""
    view = POLLS.view(poll_id)
    if view is None:
        st.info("This poll is closed: the speaker has ended it.", icon=":material/how_to_vote:")
        return
    question, mine = view.question, POLLS.voted(poll_id, session_name())
    st.html(_BIG_BUTTONS)
    with st.container(border=True, key="studio_poll_vote"):
        st.markdown(f"#### {md(question.prompt)}")
        for i, option in enumerate(question.options):
            st.button(f"{i + 1} · {visible_token(option)}", key=f"studio_poll_option_{i}", width="stretch",
                      type="primary" if mine == i else "secondary", on_click=_vote, args=(poll_id, i))
        message = st.session_state.pop(MESSAGE_KEY, None)
        if message:
            st.warning(message, icon=":material/block:")
        if view.revealed:
            top = visible_token(question.options[question.top])
            st.success(f"Revealed: the model's top token is {question.top + 1} · ‹{md(top)}› "
                       f"({question.answer[question.top]:.1%}); {view.guessed_top} of {view.total} guessed it.")
        elif mine is not None:
            st.success(f"Your vote: {mine + 1} · ‹{md(visible_token(question.options[mine]))}›. The speaker "
                       "reveals the answer.")
