"""The load generator of `bench.load.audience`: Locust users that open one link as a browser's session does,
speaking Streamlit's own websocket messages (their protobuf definitions ship in the `streamlit` package).

A browser opening a link asks for the page's address (the app's read-ahead starts the link's decode there),
Streamlit's host config and health, then opens the websocket `/_stcore/stream` (subprotocol "streamlit") and sends
one `BackMsg` `rerun_script` whose `ClientState` carries the link's query string and page name; the server answers
with `ForwardMsg`s: `new_session`, the run's deltas, `script_finished` (a run that ends early for a rerun, as the
first one does while the app picks the link's page, is followed by the rerun's messages). A user here does the same,
records the time from its first request to the first `ForwardMsg` of its run that carries a chart (a
`vega_lite_chart` or `plotly_chart` element) and to the end of the run, then keeps its session open, as a phone left
on the page does, until the test ends. It fetches none of the frontend's static files (the Chromium part of the
benchmark does).

    nice -n 10 python -m bench.common.audience_locust --host http://127.0.0.1:8501 --link '/decode?text=...' \
        --users 30 --spawn-seconds 5 --out results.json

Locust's own statistics are kept too ("first chart", "run finished"); the JSON holds every user's figures.

With `--vote READY GO` (bench.load.poll) the link names an open poll: each user, once its page is drawn, appends a line
to the file READY, waits for the file GO (the epoch second at which the room votes and the seconds they take), then at
its own moment in that window presses the poll's button `i % options` as a browser does (a `rerun_script` naming the
button's widget id as triggered and its fragment: only the fragment reruns), records the wall-clock time it sent the
vote and whether the answer refused it, then votes a second time, which must be refused.
"""
from __future__ import annotations

import argparse
import json
import os
import time
import urllib.parse
import urllib.request

import gevent
import locust  # noqa: F401 - first: Locust patches the standard library for gevent before anything else loads
from locust import User, constant, task
from locust.env import Environment
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websocket import create_connection

CHART_TYPES = ("vega_lite_chart", "plotly_chart")
OPEN_TIMEOUT_S = 300.0
RESULTS: list[dict] = []


def rerun_message(link: str, url: str) -> bytes:
    """The first `rerun_script` a browser sends for `link` ("/decode?text=..."): its query string and page name."""
    parts = urllib.parse.urlsplit(link)
    msg = BackMsg()
    state = msg.rerun_script
    state.query_string = parts.query
    state.page_name = parts.path.strip("/").rsplit("/", 1)[-1]
    state.context_info.timezone = "UTC"
    state.context_info.timezone_offset = 0
    state.context_info.locale = "en-US"
    state.context_info.url = url
    return msg.SerializeToString()


def chart_in(msg: ForwardMsg) -> bool:
    return (msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element"
            and msg.delta.new_element.WhichOneof("type") in CHART_TYPES)


def exception_in(msg: ForwardMsg) -> str | None:
    if (msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element"
            and msg.delta.new_element.WhichOneof("type") == "exception"):
        return msg.delta.new_element.exception.message[:300]
    return None


def vote_message(link: str, url: str, page_hash: str, widget_id: str, fragment_id: str) -> bytes:
    """A press of the poll's button `widget_id` in fragment `fragment_id` of the page `page_hash`."""
    msg = BackMsg.FromString(rerun_message(link, url))
    state = msg.rerun_script
    state.page_script_hash, state.fragment_id = page_hash, fragment_id
    pressed = state.widget_states.widgets.add()
    pressed.id, pressed.trigger_value = widget_id, True
    return msg.SerializeToString()


def poll_buttons(msg: ForwardMsg, found: dict[str, tuple[str, str]]) -> None:
    """Note each poll button a message draws: its key's option -> (widget id, fragment id)."""
    if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
        element = msg.delta.new_element
        if element.WhichOneof("type") == "button" and "studio_poll_option_" in element.button.id:
            option = element.button.id.rsplit("studio_poll_option_", 1)[1]
            found[option] = (element.button.id, msg.delta.fragment_id)


def alert_text(msg: ForwardMsg) -> str | None:
    if (msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element"
            and msg.delta.new_element.WhichOneof("type") == "alert"):
        return msg.delta.new_element.alert.body
    return None


class AudienceMember(User):
    """One person in the room: opens the link once, then keeps the page open."""

    wait_time = constant(3600)
    links = ["/"]  # user i opens links[i % len(links)]
    vote_files: tuple[str, str] | None = None  # (READY, GO): vote in the poll the link names
    users = 1  # how many users the run starts (a vote's moment in the window is user / users of it)

    @task
    def open_link(self) -> None:
        record: dict = {"user": len(RESULTS)}
        link = self.links[record["user"] % len(self.links)]
        RESULTS.append(record)
        start = time.perf_counter()
        page_url = self.host + link
        try:
            for path in (link, "/_stcore/host-config", "/_stcore/health"):
                with urllib.request.urlopen(self.host + path, timeout=OPEN_TIMEOUT_S) as answer:
                    answer.read()
            ws_url = self.host.replace("http", "ws", 1) + "/_stcore/stream"
            ws = create_connection(ws_url, subprotocols=["streamlit"], origin=self.host,
                                   timeout=OPEN_TIMEOUT_S)
            record["connected_s"] = time.perf_counter() - start
            ws.send_binary(rerun_message(link, page_url))
            self._read_run(ws, start, record)
            if self.vote_files is not None:
                self._vote(ws, link, page_url, record)
        except Exception as exc:  # noqa: BLE001 - a session the server did not serve is a result, not a crash
            record["error"] = f"{type(exc).__name__}: {exc}"[:300]
            self._fire("first chart", start, record["error"])
            return
        self._hold(ws)

    def _vote(self, ws, link: str, page_url: str, record: dict) -> None:
        """Wait for the room's window, vote, then vote again (refused), recording both answers."""
        ready, go = self.vote_files  # type: ignore[misc]
        with open(ready, "a") as f:
            f.write(f"{record['user']}\n")
        while not os.path.exists(go):
            gevent.sleep(0.05)
        at, spread = (float(x) for x in open(go).read().split())
        buttons = record.pop("_buttons")
        if not buttons:
            raise RuntimeError("the page drew no poll buttons")
        option = str(record["user"] % len(buttons))
        widget, fragment = buttons[option]
        gevent.sleep(max(0.0, at + spread * record["user"] / max(1, self.users) - time.time()))
        for attempt in ("vote", "again"):
            record[f"{attempt}_sent"] = time.time()
            ws.send_binary(vote_message(link, page_url, record["page_hash"], widget, fragment))
            alerts: list[str] = []
            self._read_run(ws, time.perf_counter(), record, alerts)
            record[f"{attempt}_done"] = time.time()
            record[f"{attempt}_refused"] = next((a for a in alerts if "poll" in a and "Your vote" not in a), None)
        record["option"] = int(option)

    def _read_run(self, ws, start: float, record: dict, alerts: list[str] | None = None) -> None:
        messages = 0
        record.setdefault("_buttons", {})
        while True:
            data = ws.recv()
            if not data:
                raise ConnectionError("the server closed the session")
            msg = ForwardMsg.FromString(data)
            messages += 1
            poll_buttons(msg, record["_buttons"])
            if msg.WhichOneof("type") == "new_session":
                record["page_hash"] = msg.new_session.page_script_hash
            alert = alert_text(msg)
            if alert is not None and alerts is not None:
                alerts.append(alert)
            problem = exception_in(msg)
            if problem:
                record.setdefault("exceptions", []).append(problem)
            if "first_chart_s" not in record and chart_in(msg):
                record["first_chart_s"] = time.perf_counter() - start
                self._fire("first chart", start)
            if (msg.WhichOneof("type") == "script_finished"
                    and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN):
                if alerts is not None:  # a vote's fragment run: its alerts are the answer
                    return
                record["run_finished_s"] = time.perf_counter() - start
                record["messages"] = messages
                self._fire("run finished", start)
                if "first_chart_s" not in record:
                    record["error"] = "the run ended without a chart"
                return

    def _fire(self, name: str, start: float, error: str | None = None) -> None:
        self.environment.events.request.fire(request_type="WS", name=name, response_length=0, context={},
                                             response_time=(time.perf_counter() - start) * 1000,
                                             exception=RuntimeError(error) if error else None)

    def _hold(self, ws) -> None:
        """Keep the session open (reading what the server sends) until the test stops this user."""
        ws.settimeout(1.0)
        try:
            while True:
                try:
                    if not ws.recv():
                        return
                except Exception as exc:  # noqa: BLE001 - a timeout is the quiet page; anything else ends it
                    if "timed out" not in str(exc):
                        return
        finally:
            ws.close()


def run(host: str, links: list[str], users: int, spawn_seconds: float, hold_s: float,
        vote_files: tuple[str, str] | None = None) -> dict:
    """Start `users` users within `spawn_seconds` (user i opens links[i % len(links)]); wait until each has its run's
    end (or failed), then `hold_s`; with `vote_files`, until each has voted twice (or failed)."""
    AudienceMember.links, AudienceMember.vote_files, AudienceMember.users = links, vote_files, users
    env = Environment(user_classes=[AudienceMember], host=host)
    runner = env.create_local_runner()
    began = time.time()
    runner.start(users, spawn_rate=users / spawn_seconds)
    deadline = time.perf_counter() + OPEN_TIMEOUT_S + spawn_seconds
    while time.perf_counter() < deadline:
        done = [r for r in RESULTS if ("again_done" in r if vote_files else "run_finished_s" in r) or "error" in r]
        if len(RESULTS) >= users and len(done) >= users:
            break
        gevent.sleep(0.2)
    gevent.sleep(hold_s)
    runner.quit()
    stats = env.stats
    return {"began": began, "users": users, "spawn_seconds": spawn_seconds, "results": RESULTS,
            "locust": {name: {"n": s.num_requests, "failures": s.num_failures,
                              "p50_ms": s.get_response_time_percentile(0.5),
                              "p95_ms": s.get_response_time_percentile(0.95), "max_ms": s.max_response_time}
                       for (name, _), s in stats.entries.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", required=True)
    parser.add_argument("--link", required=True, action="append", help="repeat: user i opens the i-th (cycling)")
    parser.add_argument("--users", type=int, default=30)
    parser.add_argument("--spawn-seconds", type=float, default=5.0)
    parser.add_argument("--hold", type=float, default=2.0, help="seconds every session stays open after the last run")
    parser.add_argument("--vote", nargs=2, metavar=("READY", "GO"), default=None,
                        help="vote in the poll the link names (bench.load.poll): the files of the room's window")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    figures = run(args.host, args.link, args.users, args.spawn_seconds, args.hold,
                  tuple(args.vote) if args.vote else None)
    for record in figures["results"]:
        record.pop("_buttons", None)
    with open(args.out, "w") as f:
        json.dump(figures, f)


if __name__ == "__main__":
    main()
