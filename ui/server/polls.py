"""Polls of the room: the speaker poses a question on the view shown (which token will this head look at most?), every
other session on the poll's link votes once, the speaker reveals the votes beside the model's real row. One registry
for the whole server (shared by every session, behind one lock), bounded in polls, voters and options; a poll belongs
to the session that posed it and is gone when that session closes it. No Streamlit here: the views ask."""
from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field

MAX_POLLS = 32  # open polls on the server (the oldest is dropped past it)
MAX_VOTERS = 2_000  # votes one poll takes
MAX_OPTIONS = 64  # tokens one poll offers
MAX_PROMPT_CHARS = 300
POLL_ID_CHARS = 10  # a poll's id in a link: this many lowercase hex digits


class PollError(ValueError):
    """A vote, reveal or close that is refused (the message is one line for the page)."""


@dataclass(frozen=True)
class PollQuestion:
    """What the speaker asks: the prompt, the options (tokens) and the model's answer (the row of weights or
    probabilities over the options, as the trace holds it)."""

    prompt: str
    options: tuple[str, ...]
    answer: tuple[float, ...]

    def __post_init__(self) -> None:
        if not 2 <= len(self.options) <= MAX_OPTIONS:
            raise ValueError(f"a poll offers 2 to {MAX_OPTIONS} options, not {len(self.options)}")
        if len(self.answer) != len(self.options):
            raise ValueError(f"{len(self.answer)} answer values for {len(self.options)} options")
        if not self.prompt.strip() or len(self.prompt) > MAX_PROMPT_CHARS:
            raise ValueError(f"a poll's prompt has 1 to {MAX_PROMPT_CHARS} characters")

    @property
    def top(self) -> int:
        """The option the model puts most weight on (the first of equals)."""
        return max(range(len(self.answer)), key=lambda i: (self.answer[i], -i))


@dataclass(frozen=True)
class PollView:
    """One poll as a page shows it: the question, the count of each option, whether it is revealed."""

    poll_id: str
    question: PollQuestion
    counts: tuple[int, ...]
    revealed: bool

    @property
    def total(self) -> int:
        """Votes cast."""
        return sum(self.counts)

    @property
    def guessed_top(self) -> int:
        """Votes for the model's top option."""
        return self.counts[self.question.top]


@dataclass
class _Poll:
    owner: str
    question: PollQuestion
    votes: dict[str, int] = field(default_factory=dict)
    revealed: bool = False
    opened: float = field(default_factory=time.monotonic)

    def view(self, poll_id: str) -> PollView:
        counts = [0] * len(self.question.options)
        for option in self.votes.values():
            counts[option] += 1
        return PollView(poll_id, self.question, tuple(counts), self.revealed)


class PollRegistry:
    """The server's open polls by id (thread-safe; bounded by `max_polls` and `max_voters`)."""

    def __init__(self, max_polls: int = MAX_POLLS, max_voters: int = MAX_VOTERS) -> None:
        self._polls: dict[str, _Poll] = {}
        self._lock = threading.Lock()
        self.max_polls, self.max_voters = max_polls, max_voters

    def open(self, owner: str, question: PollQuestion) -> str:
        """Pose `question` for session `owner`; its earlier poll (if any) is closed; returns the new poll's id."""
        with self._lock:
            for poll_id in [p for p, poll in self._polls.items() if poll.owner == owner]:
                del self._polls[poll_id]
            while len(self._polls) >= self.max_polls:  # the oldest open poll makes room
                del self._polls[min(self._polls, key=lambda p: self._polls[p].opened)]
            poll_id = secrets.token_hex(POLL_ID_CHARS // 2)
            self._polls[poll_id] = _Poll(owner, question)
            return poll_id

    def _poll(self, poll_id: str) -> _Poll:
        poll = self._polls.get(poll_id)
        if poll is None:
            raise PollError("This poll is closed: the speaker has ended it.")
        return poll

    def vote(self, poll_id: str, voter: str, option: int) -> PollView:
        """Session `voter`'s one vote for option `option`; PollError for the poll's owner, a second vote, a vote after
        the reveal, a closed poll or a full one."""
        with self._lock:
            poll = self._poll(poll_id)
            if voter == poll.owner:
                raise PollError("You posed this poll: the room votes, you reveal.")
            if poll.revealed:
                raise PollError("The votes are revealed: this poll takes no more votes.")
            if voter in poll.votes:
                raise PollError("You have already voted in this poll: one vote each.")
            if not 0 <= option < len(poll.question.options):
                raise PollError("No such option in this poll.")
            if len(poll.votes) >= self.max_voters:
                raise PollError(f"This poll is full: it takes {self.max_voters:,} votes.")
            poll.votes[voter] = option
            return poll.view(poll_id)

    def view(self, poll_id: str) -> PollView | None:
        """The poll as it stands, or None when there is no such poll (closed, or never opened)."""
        with self._lock:
            poll = self._polls.get(poll_id)
            return None if poll is None else poll.view(poll_id)

    def owner_of(self, poll_id: str) -> str | None:
        """The session that posed the poll (None: no such poll)."""
        with self._lock:
            poll = self._polls.get(poll_id)
            return None if poll is None else poll.owner

    def voted(self, poll_id: str, voter: str) -> int | None:
        """The option `voter` voted for in the poll (None: no vote, or no such poll)."""
        with self._lock:
            poll = self._polls.get(poll_id)
            return None if poll is None else poll.votes.get(voter)

    def reveal(self, poll_id: str, owner: str) -> PollView:
        """Close the voting and show the result; only the session that posed the poll may."""
        with self._lock:
            poll = self._poll(poll_id)
            if poll.owner != owner:
                raise PollError("Only the speaker who posed this poll can reveal it.")
            poll.revealed = True
            return poll.view(poll_id)

    def close(self, poll_id: str, owner: str) -> None:
        """Remove the poll (its votes with it); only the session that posed it may."""
        with self._lock:
            poll = self._poll(poll_id)
            if poll.owner != owner:
                raise PollError("Only the speaker who posed this poll can close it.")
            del self._polls[poll_id]

    def __len__(self) -> int:
        with self._lock:
            return len(self._polls)


POLLS = PollRegistry()  # the server's one registry (every session of this process shares it)
