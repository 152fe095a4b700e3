"""The dashboard's logs pane, in memory: ``/api/jobflows/NS/NAME/logs`` streams a flow's log lines and notices as
server-sent events, from a reader standing in for :func:`apiclient.logs.logs`; it is off (403, saying how to turn it
on) unless the dashboard was given a reader, bounded per process, and closing the pane stops the reading. The same
through the real client, under gevent's monkey patching as the dashboard runs: test_dashboard_logs_gevent.py."""

from __future__ import annotations

import json

import gevent
import pytest

from apiclient.logs import LogLine, LogOptions, LogsRefused, Notice
from dashboard import logs as dashboard_logs
from dashboard.app import Settings, create_app
from dashboard.logs import Slots
from dashboard.pages import Pages
from dashboard.store import Store
from jobflow_core.insight.logs import Selection, Stream
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE
from log_objects import jobflow


def stream(index: int | None = None, container: str = "main") -> Stream:
    pod = "test-a-main-0" if index is None else f"test-b-{index}-main-0"
    return Stream(flow="a" if index is None else "b", index=index, iterations=False, attempt=1,
                  job=pod.removesuffix("-main-0"), task="main", pod=pod, container=container,
                  instance=f"containerd://{pod}/{container}/0", running=True)


class Reader:
    """Stands in for apiclient.logs.logs: yields ``records``, then (``waits``) waits until stopped, as a follow of
    a running container does; records what it was asked and whether its generator was closed."""

    def __init__(self, *records: object, waits: bool = False) -> None:
        self.records, self.waits = records, waits
        self.asked: list[tuple] = []
        self.closed = False

    def __call__(self, namespace, name, *, selection, options, user, stop):
        self.asked.append((namespace, name, selection, options, user))
        self.stop = stop
        return self.read()

    def read(self):
        try:
            for record in self.records:
                if isinstance(record, Exception):
                    raise record
                yield record
            while self.waits and not self.stop.is_set():
                gevent.sleep(0.01)
        finally:
            self.closed = True


def served(reader: Reader | None, **settings):
    store = Store()
    store.fill(JOBFLOW, [jobflow()])
    store.fill(JOBTEMPLATE, [])
    return create_app(store, Pages(store, None), Settings(token="t0k", logs=reader, **settings)).test_client()


def events(response, count: int) -> list[tuple[str, object]]:
    """The next ``count`` events of an open stream, as (event, data) or (":", comment)."""
    chunks, found = response.response, []
    while len(found) < count:
        chunk = next(chunks).decode()
        if chunk.startswith("retry:"):
            continue
        if chunk.startswith(":"):
            found.append((":", chunk.strip()))
            continue
        name, data = (line.split(": ", 1)[1] for line in chunk.strip().split("\n"))
        found.append((name, json.loads(data)))
    return found


def test_a_flows_lines_stream_with_their_prefixes_and_what_is_said_as_notices() -> None:
    reader = Reader(Notice("flow b, item 2: not started yet"), LogLine(stream(), "preparing", "2026-11-25T09:00:00Z"),
                    LogLine(stream(), "done", "2026-11-25T09:00:01Z"), LogLine(stream(1), "shard 1", None))
    web = served(reader)

    response = web.get("/api/jobflows/ns/test/logs?flow=b&item=1", buffered=False)

    assert (response.status_code, response.mimetype) == (200, "text/event-stream")
    assert events(response, 3) == [
        ("notice", {"text": "flow b, item 2: not started yet"}),
        ("lines", [{"prefix": "[a/main/test-a-main-0/main]", "pod": "test-a-main-0", "container": "main", "item": None,
                    "text": "preparing", "time": "2026-11-25T09:00:00Z"},
                   {"prefix": "[a/main/test-a-main-0/main]", "pod": "test-a-main-0", "container": "main", "item": None,
                    "text": "done", "time": "2026-11-25T09:00:01Z"},
                   {"prefix": "[b/1/main/test-b-1-main-0/main]", "pod": "test-b-1-main-0", "container": "main",
                    "item": 1,
                    "text": "shard 1", "time": None}]),
        ("end", {"text": "the JobFlow ended and so did every container shown: no more lines"})]
    response.close()
    assert reader.asked == [("ns", "test", Selection(flow="b", item=1),
                             LogOptions(follow=True, tail=500, max_requests=dashboard_logs.MAX_FOLLOWED), None)]


def test_a_selection_that_cannot_be_shown_is_said_and_ends_the_stream() -> None:
    refused = LogsRefused("JobFlow ns/test has no flow 'c': its flows are a, b")
    response = served(Reader(refused)).get("/api/jobflows/ns/test/logs?flow=c", buffered=False)
    assert events(response, 1) == [("problem", {"error": "JobFlow ns/test has no flow 'c': its flows are a, b"})]
    with pytest.raises(StopIteration):
        next(response.response)


def test_without_a_reader_the_logs_are_off_the_page_says_so_and_the_endpoint_answers_403() -> None:
    web = served(None)
    answer = web.get("/api/jobflows/ns/test/logs?flow=a")
    assert answer.status_code == 403
    assert "--logs" in answer.get_json()["error"] and "pods/log" in answer.get_json()["error"]
    page = web.get("/jobflows/ns/test").get_data(as_text=True)
    assert '"logs": false' in page and "logs.js" in page
    assert '"logs": true' in served(Reader()).get("/jobflows/ns/test").get_data(as_text=True)


def test_a_request_without_a_flow_or_with_a_bad_item_is_told_what_to_send() -> None:
    web = served(Reader())
    assert "?flow=NAME" in web.get("/api/jobflows/ns/test/logs").get_json()["error"]
    assert web.get("/api/jobflows/ns/test/logs?flow=b&item=-1").status_code == 400


def test_at_most_so_many_panes_are_open_at_once_and_a_closed_one_frees_its_place() -> None:
    reader = Reader(LogLine(stream(), "hello", None), waits=True)
    web = served(reader, log_slots=Slots(limit=1))
    first = web.get("/api/jobflows/ns/test/logs?flow=a", buffered=False)
    assert events(first, 1)[0][0] == "lines"

    refused = web.get("/api/jobflows/ns/test/logs?flow=a")
    assert refused.status_code == 429
    assert refused.get_json()["error"] == ("1 logs panes are open on this dashboard, its most at once: close one, or "
                                           "run kubectl jobflow logs test a -n ns -f")
    first.close()
    again = web.get("/api/jobflows/ns/test/logs?flow=a", buffered=False)
    assert again.status_code == 200
    again.close()
    never_read = web.get("/api/jobflows/ns/test/logs?flow=a", buffered=False)
    never_read.close()  # closed before its first event: its place is given back all the same
    assert web.get("/api/jobflows/ns/test/logs?flow=a", buffered=False).status_code == 200


def test_closing_the_pane_stops_the_reading_and_closes_the_readers_generator() -> None:
    reader = Reader(LogLine(stream(), "hello", None), waits=True)
    response = served(reader).get("/api/jobflows/ns/test/logs?flow=a", buffered=False)
    events(response, 1)
    assert not reader.stop.is_set()

    response.close()
    gevent.sleep(0.05)  # the reading greenlet is killed at its next switch
    assert reader.stop.is_set() and reader.closed


def test_a_quiet_stream_sends_a_comment_so_a_closed_tab_is_noticed(monkeypatch) -> None:
    monkeypatch.setattr(dashboard_logs, "KEEPALIVE", 0.05)
    response = served(Reader(waits=True)).get("/api/jobflows/ns/test/logs?flow=a", buffered=False)
    assert events(response, 1) == [(":", ": keep-alive")]
    response.close()


def test_behind_a_proxy_the_logs_are_read_as_the_user_it_names_and_without_one_refused() -> None:
    reader = Reader()
    web = served(reader, user_header="X-Forwarded-User")
    assert web.get("/api/jobflows/ns/test/logs?flow=a").status_code == 403
    response = web.get("/api/jobflows/ns/test/logs?flow=a", headers={"X-Forwarded-User": "ana"}, buffered=False)
    events(response, 1)
    response.close()
    assert [asked[-1] for asked in reader.asked] == ["ana"]


def test_another_sites_page_cannot_start_a_read_of_the_logs_the_dashboards_own_page_and_curl_can() -> None:
    reader = Reader()
    web = served(reader)
    for cross in ({"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"},
                  {"Origin": "https://evil.example"}):
        answer = web.get("/api/jobflows/ns/test/logs?flow=a", headers=cross)
        assert answer.status_code == 403 and "refused" in answer.get_json()["error"]
    assert reader.asked == []  # refused before any read, and before taking a place
    for own in ({"Sec-Fetch-Site": "same-origin"}, {}):  # the page's EventSource, and curl
        response = web.get("/api/jobflows/ns/test/logs?flow=a", headers=own, buffered=False)
        assert response.status_code == 200
        response.close()


def test_a_browser_that_takes_the_lines_slowly_makes_the_reading_wait_not_the_dashboard_buffer(monkeypatch) -> None:
    monkeypatch.setattr(dashboard_logs, "QUEUED", 3)
    taken: list[int] = []

    class Fast(Reader):
        def read(self):
            for n in range(100):
                taken.append(n)
                yield LogLine(stream(), f"line {n}", None)

    response = served(Fast()).get("/api/jobflows/ns/test/logs?flow=a", buffered=False)
    next(response.response)  # the retry advice: the stream is open, nothing sent yet
    gevent.sleep(0.2)
    assert len(taken) <= 3 + 2  # the queue's three, the one waiting to be put, the one being made
    response.close()


def test_the_end_is_sent_even_though_the_reader_sets_stop_as_it_ends() -> None:
    class Ending(Reader):  # as apiclient.logs.logs does: its generator sets stop once it returns
        def read(self):
            try:
                yield from super().read()
            finally:
                self.stop.set()

    response = served(Ending(LogLine(stream(), "last", None))).get("/api/jobflows/ns/test/logs?flow=a",
                                                                   buffered=False)
    assert [name for name, _ in events(response, 2)] == ["lines", "end"]
    response.close()
