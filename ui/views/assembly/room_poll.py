"""Poll the room: in presenter mode the speaker poses a question on the view shown (Decode: which source token will
this head look at most at this step, or, without a source, which token the model says next; Attention: which key a
row of the map looks at most); the poll's id goes into the page's link, so the QR code carries it; every other session
on that link votes once with large buttons at the top of its page; the speaker's screen counts the votes live and, on
Reveal, draws them beside the model's real row (and, out of presenter mode, offers the result for slides); the
revealed votes go into the link (`votes=`), which then opens the view with that result. The polls live in
`ui.server.POLLS`; a vote reruns only its fragment."""
from __future__ import annotations

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from transformer.charts import poll_chart, visible_token
from ui.server import MAX_OPTIONS, POLLS, PollError, PollQuestion

from ..kit import LINK_PARAMS, Selection, head_label, map_kind, md, presenting, show_chart, slide_downloads

MESSAGE_KEY = "studio_poll_message"  # the refusal of this session's last vote (one line)
CLOSED_KEY = "studio_poll_closed"  # the speaker closed the poll: the page reruns (its link without the poll)
REVEALED_KEY = "studio_poll_revealed"  # the speaker revealed it: the page reruns (its link with the votes)
_ANSWERS = "{key}_answers"  # session state: (prompt, options, counts), the question a page's votes answer
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


def votes_key(page: str) -> str | None:
    """The session key holding the revealed votes of `page`'s poll (in its link; None: a page without polls)."""
    return LINK_PARAMS.get(page, {}).get("votes")


def _keep_votes(page: str, question: PollQuestion, counts: tuple[int, ...]) -> None:
    """The votes revealed on `question` into the page's link."""
    key = votes_key(page) or ""
    st.session_state[key] = counts
    st.session_state[_ANSWERS.format(key=key)] = (question.prompt, question.options, counts)


def _drop_votes(page: str) -> None:
    key = votes_key(page) or ""
    st.session_state.pop(key, None)
    st.session_state.pop(_ANSWERS.format(key=key), None)


def linked_votes(page: str, question: PollQuestion | str) -> tuple[int, ...] | None:
    """The revealed votes the page holds for the question on its view, or None. Votes from a link answer the view
    the link restores (the same step, layer and head pose the same question): they are taken when they count one
    option each; votes of another question (the view changed since the reveal) leave the link."""
    key = votes_key(page)
    counts = st.session_state.get(key) if key else None
    if counts is None:
        return None
    answered = st.session_state.get(_ANSWERS.format(key=key))
    if isinstance(question, str):
        fits = False
    elif answered is None or answered[2] != counts:  # from a link: not yet tied to a question
        fits = len(counts) == len(question.options)
        if fits:
            _keep_votes(page, question, tuple(counts))
    else:
        fits = answered[:2] == (question.prompt, question.options)
    if not fits:
        _drop_votes(page)
        return None
    return tuple(counts)


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


def _pose(page: str, question: PollQuestion) -> None:
    _drop_votes(page)  # a new poll: the last one's result leaves the view and the link
    st.session_state[poll_key(page) or ""] = POLLS.open(session_name(), question)


def show_poll_control(sel: Selection, question: PollQuestion | str) -> None:
    """The speaker's side of a poll on `sel`'s page: "Poll the room" in presenter mode, and this session's open poll
    (its live count, Reveal and Close; after Reveal the votes beside the model's row); on a link that holds a revealed
    poll's votes (`votes=`), that result, in either mode, with its slide export out of presenter mode."""
    key = poll_key(sel.page)
    if key is None:
        return
    poll_id = st.session_state.get(key)
    if poll_id and POLLS.owner_of(poll_id) == session_name():
        linked_votes(sel.page, question)  # votes revealed on another view than this one leave the link
        _speaker_panel(sel.page, sel.title.lines("Poll of the room"))
        return
    counts = linked_votes(sel.page, question)
    if counts is not None and isinstance(question, PollQuestion):  # a revealed poll's link: its result
        with st.container(border=True, key="studio_poll_speaker"):
            _show_result(question, counts, sel.title.lines("Poll of the room"))
    if not presenting():
        return
    if isinstance(question, str):
        st.button("Poll the room", key=f"{sel.page}_poll_open", icon=":material/how_to_vote:", disabled=True,
                  help=question)
        return
    st.button("Poll the room", key=f"{sel.page}_poll_open", icon=":material/how_to_vote:", on_click=_pose,
              args=(sel.page, question), help=f"Ask the room: {question.prompt} The QR code's link then opens the "
                                              "poll on each phone.")


def _reveal(page: str, poll_id: str) -> None:
    try:
        view = POLLS.reveal(poll_id, session_name())
    except PollError as exc:
        st.session_state[MESSAGE_KEY] = str(exc)
        return
    _keep_votes(page, view.question, view.counts)
    st.session_state[REVEALED_KEY] = True  # the fragment then reruns the page: the link gains the votes


def _close(page: str, poll_id: str) -> None:
    try:
        POLLS.close(poll_id, session_name())
    except PollError as exc:
        st.session_state[MESSAGE_KEY] = str(exc)
    st.session_state.pop(poll_key(page) or "", None)
    _drop_votes(page)
    st.session_state[CLOSED_KEY] = True  # the fragment then reruns the page: the link loses the poll


@st.fragment(run_every=0.5)
def _speaker_panel(page: str, title_lines: list[str]) -> None:
    """The open poll on the speaker's screen, redrawn twice a second (only this fragment reruns)."""
    if st.session_state.pop(CLOSED_KEY, False) or st.session_state.pop(REVEALED_KEY, False):
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
                          args=(page, poll_id), type="primary", width="stretch")
            close.button("Close poll", key="studio_poll_close", icon=":material/close:", on_click=_close,
                         args=(page, poll_id), width="stretch")
            return
        _show_result(question, view.counts, title_lines, heading=False)
        st.button("Close poll", key="studio_poll_close", icon=":material/close:", on_click=_close,
                  args=(page, poll_id))


def guessed_line(question: PollQuestion, counts: tuple[int, ...]) -> str:
    """"3 of 7 guessed the model's top token ‹b› (70.0%)" (the token as drawn, not escaped)."""
    top = visible_token(question.options[question.top])
    return (f"{counts[question.top]} of {sum(counts)} guessed the model's top token ‹{top}› "
            f"({question.answer[question.top]:.1%})")


def _show_result(question: PollQuestion, counts: tuple[int, ...], title_lines: list[str], *,
                 heading: bool = True) -> None:
    """The revealed votes as bars beside the model's row, how many guessed its top token, and (out of presenter mode)
    the result for slides: the page's title, the question and that line above the chart."""
    if heading:
        st.markdown(f"**Poll:** {md(question.prompt)}")
    chart = poll_chart(question.options, counts, question.answer, width=240 if presenting() else 140)  # its column
    with st.container(key="studio_poll_result"):
        show_chart(chart, width="content")
    top = md(visible_token(question.options[question.top]))
    with st.container(key="studio_poll_guessed"):
        st.markdown(f"**{counts[question.top]} of {sum(counts)}** guessed the model's top token ‹{top}› "
                    f"({question.answer[question.top]:.1%})")
    slide = poll_chart(question.options, counts, question.answer, width=420)  # a slide's width, not the column's
    slide_downloads(slide, [*title_lines, question.prompt, guessed_line(question, counts)], "poll_result",
                    "studio_poll_result")


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
