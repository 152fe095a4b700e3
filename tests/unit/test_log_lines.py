"""Where a cut log stream picks up (:mod:`jobflow_core.insight.log_lines`): asked again from the second of the last
line shown, it shows every line once, in order, however often it is cut."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jobflow_core.insight.log_lines import Cursor, admit, instant, since_time, split


def test_the_kubelets_time_is_split_off_the_line_and_a_line_without_one_is_kept_whole():
    assert split("2026-11-25T09:00:00.1234Z shard 1 done") == ("2026-11-25T09:00:00.1234Z", "shard 1 done")
    assert split("2026-11-25T09:00:00Z ") == ("2026-11-25T09:00:00Z", "")
    assert split("no time here") == (None, "no time here")


def test_times_with_fewer_digits_sort_as_the_times_do():
    assert instant("2026-11-25T09:00:00.1Z") < instant("2026-11-25T09:00:00.12Z") < instant("2026-11-25T09:00:01Z")
    assert since_time("2026-11-25T09:00:00.987654321Z") == "2026-11-25T09:00:00Z"


def test_after_a_cut_the_lines_of_the_last_second_shown_are_not_shown_again():
    cursor = Cursor()
    for time in ("2026-11-25T09:00:00.1Z", "2026-11-25T09:00:00.2Z"):
        _, cursor = admit(cursor, time)
    assert cursor.since == "2026-11-25T09:00:00Z"
    cursor = cursor.reconnected()
    shown = []
    for time in ("2026-11-25T09:00:00.1Z", "2026-11-25T09:00:00.2Z", "2026-11-25T09:00:00.3Z"):
        new, cursor = admit(cursor, time)
        shown.append(new)
    assert shown == [False, False, True]


SECOND = st.integers(0, 3)
NANOS = st.one_of(st.sampled_from([0, 1, 100_000_000, 120_000_000]), st.integers(0, 999_999_999))  # ties too


def stamp(second: int, nanos: int) -> str:
    """How the kubelet writes a time: RFC 3339 with nanoseconds, trailing zeros trimmed."""
    fraction = f"{nanos:09d}".rstrip("0")
    return f"2026-11-25T09:00:0{second}" + (f".{fraction}" if fraction else "") + "Z"


@given(times=st.lists(st.tuples(SECOND, NANOS), max_size=30).map(sorted),
       cuts=st.lists(st.integers(0, 30), max_size=5))
def test_however_often_a_stream_is_cut_each_line_is_shown_once_in_order(times, cuts):
    log = [(stamp(*time), f"line {number}") for number, time in enumerate(times)]
    cursor, shown = Cursor(), []
    for cut in [*sorted(cuts), len(log)]:
        since = cursor.since
        # what the API server sends again: every line from the second asked for (the kubelet's precision)
        served = [line for line in log if since is None or instant(line[0]) >= instant(since)]
        start = len(log) - len(served)
        for time, text in served[:max(0, cut - start)] if cut < len(log) else served:
            new, cursor = admit(cursor, time)
            if new:
                shown.append(text)
        cursor = cursor.reconnected()
    assert shown == [text for _, text in log]
