"""AppTest: a revealed poll goes into the link (`votes=`) and a fresh session on that link sees the result, whose slide
export carries the question and how many guessed; votes that do not fit the view's question leave the link."""
from __future__ import annotations

from tests.helpers.app_session import assert_no_exception, capture_downloads, open_link
from ui.server import POLLS

VIEW = {"text": "stressed", "kind": "cross", "layer": "1", "head": "1"}


def test_a_revealed_polls_votes_open_its_result_and_slide_from_a_link(studio_env, monkeypatch):
    speaker = open_link("attention", {**VIEW, "present": "1"})
    speaker.button(key="attention_poll_open").click().run()
    poll_id = speaker.session_state["attention_poll"]
    question = POLLS.view(poll_id).question
    POLLS.vote(poll_id, "phone-a", question.top)
    POLLS.vote(poll_id, "phone-b", (question.top + 1) % len(question.options))
    assert "votes" not in speaker.query_params  # not before the reveal
    speaker.button(key="studio_poll_reveal").click().run()
    assert_no_exception(speaker)
    counts = POLLS.view(poll_id).counts
    params = dict(speaker.query_params)
    assert params["votes"] == ".".join(map(str, counts)) and params["poll"] == poll_id

    downloads = capture_downloads(monkeypatch)
    shared = {name: value for name, value in params.items() if name not in ("present", "poll")}
    fresh = open_link("attention", shared)  # the result without the live poll, out of presenter mode
    guessed = fresh.get("markdown")
    line = next(m.value for m in guessed if "guessed the model's top token" in m.value)
    assert line.startswith("**1 of 2**")
    assert dict(fresh.query_params)["votes"] == params["votes"]  # kept: it answers the view the link restores
    slide = downloads["poll_result_slide.svg"]()
    slide = slide.decode() if isinstance(slide, bytes) else slide
    assert "1 of 2 guessed the model" in slide and "which key will layer 1" in slide

    wrong = open_link("attention", {**shared, "votes": "1.2"})  # two counts for another number of tokens
    assert not any("guessed the model's top token" in m.value for m in wrong.get("markdown"))
    assert "votes" not in dict(wrong.query_params)
    POLLS.close(poll_id, POLLS.owner_of(poll_id) or "")
