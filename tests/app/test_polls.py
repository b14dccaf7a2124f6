"""The poll registry (ui.server.polls): one vote per session, refusals in one line, owner-only reveal and close,
bounded, shared across threads."""
from __future__ import annotations

import threading

import pytest

from ui.server.polls import MAX_OPTIONS, PollError, PollQuestion, PollRegistry

QUESTION = PollQuestion("Which source token will head 4 look at most?", ("a", "b", "c"), (0.1, 0.7, 0.2))


def test_each_session_votes_once_and_the_tally_counts_each_vote():
    polls = PollRegistry()
    poll = polls.open("speaker", QUESTION)
    polls.vote(poll, "s1", 1)
    polls.vote(poll, "s2", 1)
    view = polls.vote(poll, "s3", 0)
    assert view.counts == (1, 2, 0) and view.total == 3 and not view.revealed
    with pytest.raises(PollError, match="already voted") as refused:
        polls.vote(poll, "s1", 2)
    assert "\n" not in str(refused.value)
    assert polls.view(poll).counts == (1, 2, 0)  # the refused vote changed nothing
    assert polls.voted(poll, "s1") == 1 and polls.voted(poll, "s4") is None


def test_the_speaker_reveals_then_no_vote_is_taken_and_the_top_token_is_the_models():
    polls = PollRegistry()
    poll = polls.open("speaker", QUESTION)
    polls.vote(poll, "s1", 1)
    polls.vote(poll, "s2", 2)
    with pytest.raises(PollError, match="posed this poll"):
        polls.vote(poll, "speaker", 0)
    with pytest.raises(PollError, match="Only the speaker"):
        polls.reveal(poll, "s1")
    view = polls.reveal(poll, "speaker")
    assert view.revealed and QUESTION.top == 1 and view.guessed_top == 1
    with pytest.raises(PollError, match="revealed"):
        polls.vote(poll, "s3", 0)


def test_a_closed_poll_is_gone_and_only_its_owner_closes_it():
    polls = PollRegistry()
    poll = polls.open("speaker", QUESTION)
    with pytest.raises(PollError, match="Only the speaker"):
        polls.close(poll, "s1")
    polls.close(poll, "speaker")
    assert polls.view(poll) is None and polls.owner_of(poll) is None
    with pytest.raises(PollError, match="closed"):
        polls.vote(poll, "s1", 0)


def test_a_new_poll_replaces_the_speakers_last_and_the_registry_is_bounded():
    polls = PollRegistry(max_polls=3, max_voters=2)
    first = polls.open("speaker", QUESTION)
    second = polls.open("speaker", QUESTION)
    assert polls.view(first) is None and polls.view(second) is not None and len(polls) == 1
    others = [polls.open(f"other{i}", QUESTION) for i in range(3)]
    assert len(polls) == 3 and polls.view(second) is None and polls.view(others[-1]) is not None
    polls.vote(others[-1], "a", 0)
    polls.vote(others[-1], "b", 0)
    with pytest.raises(PollError, match="full"):
        polls.vote(others[-1], "c", 0)


def test_a_question_is_checked():
    with pytest.raises(ValueError, match="answer values"):
        PollQuestion("q?", ("a", "b"), (1.0,))
    with pytest.raises(ValueError, match="options"):
        PollQuestion("q?", tuple("x" * (MAX_OPTIONS + 1)), (0.0,) * (MAX_OPTIONS + 1))


def test_votes_from_many_threads_are_each_counted_once():
    polls = PollRegistry()
    poll = polls.open("speaker", QUESTION)
    refused = []

    def voter(i: int) -> None:
        for _ in range(2):  # each session tries twice
            try:
                polls.vote(poll, f"s{i}", i % 3)
            except PollError:
                refused.append(i)

    threads = [threading.Thread(target=voter, args=(i,)) for i in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert polls.view(poll).counts == (34, 33, 33) and sorted(refused) == list(range(100))
