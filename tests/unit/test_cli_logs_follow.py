"""``logs -f`` over long runs and wide flows, against test_cli_logs.py's API server stand-in: a quiet container is
not an API server away, a stop ends every upstream read at once, a wide fan-out that starts later waits for places
instead of ending the run, a line without its end is shown once, whole, a long line in bounded pieces, and a cut
before the first line keeps ``--tail``."""

from __future__ import annotations

import threading
import time

from apiclient import log_follow, log_reading
from apiclient.cluster import Cluster, Target
from apiclient.logs import MAX_LINE, LogLine, LogOptions, logs
from jobflow_core.insight.logs import Selection
from log_objects import jobflow, pod, vcjob
from test_cli_logs import kube, logs as cli_logs, wait_for  # noqa: F401 -- kube is a fixture

__all__ = ["kube"]


def client(kube) -> Cluster:
    return Cluster(Target(kubeconfig=kube.config), program="kubectl-jobflow")


def running_a(kube, *texts: str) -> None:
    kube.put("jobflow", jobflow())
    kube.put("job", vcjob("test-a"))
    kube.put("pod", pod("test-a"))
    if texts:
        kube.write("test-a-main-0", "main", *texts)


def logs_threads() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name.startswith("logs")]


def test_a_quiet_container_is_asked_again_and_never_taken_for_an_api_server_away(kube, monkeypatch):
    monkeypatch.setattr(log_reading, "READ_SECONDS", 0.2)  # each read of the quiet log times out
    running_a(kube)  # it has written nothing yet: no line shown, none to ask again from
    stop = threading.Event()
    records = logs(client(kube), "ns", "test", selection=Selection(flow="a"),
                   options=LogOptions(follow=True, patience=0.5), stop=stop)
    try:
        got: list = []
        reader = threading.Thread(target=lambda: got.append(next(records, None)))
        reader.start()
        time.sleep(2.0)  # quiet for four times the patience
        kube.write("test-a-main-0", "main", "a1")
        reader.join(timeout=10)
        assert [record.text for record in got] == ["a1"]
    finally:
        stop.set()


def test_a_stop_ends_the_watches_and_the_followers_of_quiet_logs_within_moments(kube):
    running_a(kube)
    stop = threading.Event()
    records = logs(client(kube), "ns", "test", options=LogOptions(follow=True), stop=stop)
    reader = threading.Thread(target=lambda: list(records))
    reader.start()
    wait_for(lambda: any("/log?" in path for path in kube.asked))
    assert "logs-test-a-main-0-main" in logs_threads()
    stop.set()
    wait_for(lambda: not logs_threads() and not reader.is_alive(), timeout=3.0)


def test_a_full_queue_makes_a_reader_wait_and_a_stop_lets_it_go(monkeypatch):
    monkeypatch.setattr(log_follow, "QUEUED", 2)
    stop = threading.Event()
    follower = log_follow.Follower(None, "ns", Selection(), LogOptions(follow=True), stop)  # type: ignore[arg-type]
    assert follower.events.maxsize == 2
    handing = threading.Thread(target=lambda: [follower._hand(("line", None, n)) for n in range(3)])
    handing.start()
    time.sleep(0.3)
    assert handing.is_alive() and follower.events.qsize() == 2  # the third waits
    stop.set()
    handing.join(timeout=2.5)
    assert not handing.is_alive()
    assert [follower.events.get_nowait()[2] for _ in range(2)] == [0, 1]
    assert follower.events.empty()  # the third was dropped: no one takes it after a stop


def test_a_wide_fan_out_that_starts_later_waits_for_places_instead_of_ending_the_run(kube):
    running_a(kube, "a1")
    result: list[tuple[int, str, str]] = []
    follower = threading.Thread(target=lambda: result.append(cli_logs(kube, "test", "-f", "--max-log-requests", "2")))
    follower.start()
    wait_for(lambda: any("test-a-main-0/log?" in path for path in kube.asked))
    for item in range(3):  # three running containers start while a is followed: one more than the limit
        kube.put("job", vcjob(f"test-b-{item}"))
        kube.put("pod", pod(f"test-b-{item}"))
        kube.write(f"test-b-{item}-main-0", "main", f"b{item}")
    wait_for(lambda: sum("test-b" in path and "/log?" in path for path in kube.asked) >= 1)
    time.sleep(0.5)
    assert sum("test-b" in path and "/log?" in path for path in kube.asked) == 1  # a and one b: two places
    kube.put("pod", pod("test-a", containers={"main": "terminated"}))
    kube.put("job", vcjob("test-a", phase="Completed"))
    for item in range(3):
        wait_for(lambda item=item: any(f"test-b-{item}-main-0/log?" in path for path in kube.asked))
        kube.put("pod", pod(f"test-b-{item}", containers={"main": "terminated"}))
    kube.put("jobflow", jobflow(state={"phase": "Succeed"}))
    follower.join(timeout=30)
    [(code, out, err)] = result
    assert (code, err) == (0, "")
    assert sorted(out.splitlines()) == ["[a/main/test-a-main-0/main] a1"] + [
        f"[b/{item}/main/test-b-{item}-main-0/main] b{item}" for item in range(3)]


def test_a_line_a_cut_ends_half_way_is_shown_once_whole_after_the_reconnection(kube):
    running_a(kube, "a1", "a long line that the cut ends half way")
    kube.half[("test-a-main-0", "main")] = 1  # the first answer ends cleanly in the middle of the second line
    result: list[tuple[int, str, str]] = []
    follower = threading.Thread(target=lambda: result.append(cli_logs(kube, "test", "a", "-f")))
    follower.start()
    wait_for(lambda: sum("/log?" in path for path in kube.asked) >= 2)
    kube.put("pod", pod("test-a", containers={"main": "terminated"}))
    kube.put("jobflow", jobflow(state={"phase": "Succeed"}))
    follower.join(timeout=30)
    assert result == [(0, "[a/main/test-a-main-0/main] a1\n"
                          "[a/main/test-a-main-0/main] a long line that the cut ends half way\n", "")]


def test_a_line_longer_than_the_most_one_line_holds_is_shown_in_pieces(kube):
    running_a(kube, "x" * (MAX_LINE + 10), "next")
    kube.put("pod", pod("test-a", containers={"main": "terminated"}))
    code, out, err = cli_logs(kube, "test", "a")
    prefix = "[a/main/test-a-main-0/main] "
    assert (code, err) == (0, "")
    stamp = len("2026-11-25T09:00:00.25Z ")  # the first piece holds the kubelet's time, the second none
    assert out.splitlines() == [prefix + "x" * (MAX_LINE - stamp), prefix + "x" * (stamp + 10), prefix + "next"]


def test_a_cut_before_the_first_line_asks_again_for_the_same_tail_not_the_whole_log(kube):
    running_a(kube, *[f"old {n}" for n in range(5)])
    kube.cut[("test-a-main-0", "main")] = 0  # dropped before its first line
    stop = threading.Event()
    records = logs(client(kube), "ns", "test", selection=Selection(flow="a"),
                   options=LogOptions(follow=True, tail=2), stop=stop)
    try:
        shown = [next(records), next(records)]
        assert [record.text for record in shown if isinstance(record, LogLine)] == ["old 3", "old 4"]
        asked = [path for path in kube.asked if "/log?" in path]
        assert len(asked) >= 2 and all("tailLines=2" in path for path in asked[:2])
    finally:
        stop.set()
