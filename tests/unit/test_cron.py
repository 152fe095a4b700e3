"""Cron arithmetic: fields, macros, names, day-of-month/day-of-week, month ends, leap years, time zones and DST."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobflow_core.cron import CronError, parse


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def fires(schedule: str, after: datetime, count: int, *, zone: str | None = None) -> list[datetime]:
    parsed, found = parse(schedule, time_zone=zone), []
    for _ in range(count):
        after = parsed.next_after(after)
        found.append(after)
    return found


@pytest.mark.parametrize("schedule, after, expected", [
    ("0 2 * * *", utc(2026, 1, 1, 2, 0), [utc(2026, 1, 2, 2), utc(2026, 1, 3, 2)]),
    ("*/20 * * * *", utc(2026, 1, 1, 0, 5), [utc(2026, 1, 1, 0, 20), utc(2026, 1, 1, 0, 40), utc(2026, 1, 1, 1, 0)]),
    ("5/20 * * * *", utc(2026, 1, 1), [utc(2026, 1, 1, 0, 5), utc(2026, 1, 1, 0, 25), utc(2026, 1, 1, 0, 45)]),
    ("0 9-17/4 * * *", utc(2026, 1, 1), [utc(2026, 1, 1, 9), utc(2026, 1, 1, 13), utc(2026, 1, 1, 17)]),
    ("0 0 * * mon-fri", utc(2026, 11, 20, 1), [utc(2026, 11, 23), utc(2026, 11, 24)]),  # Fri -> Mon
    ("0 0 * * 7", utc(2026, 11, 24), [utc(2026, 11, 29)]),  # 7 is Sunday
    ("0 0 * * SUN", utc(2026, 11, 24), [utc(2026, 11, 29)]),
    ("0 0 1 JAN,jul *", utc(2026, 2, 1), [utc(2026, 7, 1), utc(2027, 1, 1)]),
    ("0 0 1 * mon", utc(2026, 11, 24), [utc(2026, 11, 30), utc(2026, 12, 1), utc(2026, 12, 7)]),  # either day
    ("0 0 1-7 * ?", utc(2026, 11, 30), [utc(2026, 12, 1)]),
    ("@hourly", utc(2026, 1, 1, 0, 30), [utc(2026, 1, 1, 1)]),
    ("@daily", utc(2026, 1, 1, 0, 30), [utc(2026, 1, 2)]),
    ("@weekly", utc(2026, 11, 24), [utc(2026, 11, 29)]),
    ("@monthly", utc(2026, 1, 15), [utc(2026, 2, 1)]),
    ("@yearly", utc(2026, 1, 15), [utc(2027, 1, 1)]),
    ("@annually", utc(2026, 1, 15), [utc(2027, 1, 1)]),
])
def test_each_field_form_names_the_minutes_cron_does(schedule, after, expected):
    assert fires(schedule, after, len(expected)) == expected


def test_the_31st_skips_the_months_that_have_none():
    assert fires("0 0 31 * *", utc(2026, 1, 31), 3) == [utc(2026, 3, 31), utc(2026, 5, 31), utc(2026, 7, 31)]


def test_the_29th_of_february_comes_in_leap_years_only():
    assert fires("0 0 29 2 *", utc(2026, 1, 1), 2) == [utc(2028, 2, 29), utc(2032, 2, 29)]


def test_a_schedule_that_never_fires_says_so_with_none():
    assert parse("0 0 30 2 *").next_after(utc(2026, 1, 1)) is None
    assert parse("0 0 30 2 *").latest_at_or_before(utc(2026, 1, 1)) is None


@pytest.mark.parametrize("schedule, words", [
    ("* * * *", "has 4 field(s)"),
    ("* * * * * *", "has 6 field(s)"),
    ("60 * * * *", "minute: 60 is out of range 0-59"),
    ("* 24 * * *", "hour: 24 is out of range 0-23"),
    ("* * 0 * *", "day of month: 0 is out of range 1-31"),
    ("* * * 13 *", "month: 13 is out of range 1-12"),
    ("* * * * 8", "day of week: 8 is out of range 0-7"),
    ("* * * foo *", "month: 'foo' is not a number or a name"),
    ("*/0 * * * *", "a step must be at least 1"),
    ("5-1 * * * *", "runs backwards; write 1-5"),
    ("1,,2 * * * *", "is not '*', a number, a range"),
    ("@often", "unknown macro"),
    ("TZ=UTC 0 * * * *", "set spec.timeZone instead"),
    ("CRON_TZ=UTC 0 * * * *", "set spec.timeZone instead"),
])
def test_a_bad_schedule_is_refused_saying_what_to_write(schedule, words):
    with pytest.raises(CronError, match=None) as error:
        parse(schedule)
    assert words in str(error.value)


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../etc/passwd", " Europe/Berlin", "/usr/share/zoneinfo/UTC"])
def test_an_unknown_time_zone_is_refused_with_an_example(zone):
    with pytest.raises(CronError, match="is not an IANA time zone name; write one such as 'Europe/Berlin'"):
        parse("0 * * * *", time_zone=zone)


def test_a_time_zone_moves_the_wall_clock_minute():
    assert fires("0 2 * * *", utc(2026, 7, 1), 1, zone="America/New_York") == [utc(2026, 7, 1, 6)]  # EDT, -4
    assert fires("0 2 * * *", utc(2026, 1, 1), 1, zone="America/New_York") == [utc(2026, 1, 1, 7)]  # EST, -5
    assert fires("0 2 * * *", utc(2026, 1, 1), 1, zone="Asia/Kolkata") == [utc(2026, 1, 1, 20, 30)]  # +5:30


def test_a_time_the_spring_clock_skips_is_skipped_that_day():
    berlin = fires("30 2 * * *", utc(2026, 3, 27), 3, zone="Europe/Berlin")
    assert [t.astimezone(ZoneInfo("Europe/Berlin")).strftime("%d %H:%M %Z") for t in berlin] == [
        "27 02:30 CET", "28 02:30 CET", "30 02:30 CEST"]  # 29 March: 02:00 -> 03:00


def test_a_time_the_autumn_clock_repeats_fires_once_at_its_first_occurrence():
    berlin = fires("30 2 * * *", utc(2026, 10, 24), 3, zone="Europe/Berlin")
    assert berlin == [utc(2026, 10, 24, 0, 30), utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]


def test_an_hourly_schedule_fires_in_both_occurrences_of_a_repeated_hour():
    found = fires("*/30 * * * *", utc(2026, 10, 24, 23, 0), 6, zone="Europe/Berlin")
    assert found == [utc(2026, 10, 24, 23, 30) + timedelta(minutes=30 * k) for k in range(6)]  # no gap, no double


def test_an_hourly_schedule_has_no_gap_across_the_spring_jump():
    found = fires("0 * * * *", utc(2026, 3, 29, 0, 0), 3, zone="Europe/Berlin")
    assert found == [utc(2026, 3, 29, 1), utc(2026, 3, 29, 2), utc(2026, 3, 29, 3)]


def test_a_half_hour_dst_zone_works_too():
    # Australia/Lord_Howe moves its clock by 30 minutes: 02:00 -> 02:30 on 4 October 2026.
    found = fires("15 2 * * *", utc(2026, 10, 2), 3, zone="Australia/Lord_Howe")
    local = [t.astimezone(ZoneInfo("Australia/Lord_Howe")).strftime("%d %H:%M") for t in found]
    assert local == ["03 02:15", "05 02:15", "06 02:15"]


SCHEDULES = st.sampled_from(["* * * * *", "*/7 * * * *", "0 * * * *", "30 2 * * *", "0 0 31 * *", "0 9 * * 1-5",
                             "15 1,2,3 * * *", "0 0 1 * mon", "@monthly", "0 0 29 2 *"])
ZONES = st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata",
                         "America/Santiago", "Pacific/Chatham"])
INSTANTS = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 1, 1), timezones=st.just(UTC))


@settings(max_examples=150, deadline=None)
@given(schedule=SCHEDULES, zone=ZONES, after=INSTANTS)
def test_the_next_time_is_later_matches_the_fields_and_nothing_fires_in_between(schedule, zone, after):
    parsed = parse(schedule, time_zone=zone)
    following = parsed.next_after(after)
    assert following is not None and following > after
    local = following.astimezone(parsed.zone)
    assert local.minute in parsed.minutes and local.hour in parsed.hours and local.month in parsed.months
    assert following.second == 0
    assert parsed.latest_at_or_before(following - timedelta(seconds=1)) == parsed.latest_at_or_before(after)
    assert parsed.latest_at_or_before(following) == following


@settings(max_examples=40, deadline=None)
@given(schedule=SCHEDULES, zone=ZONES, after=INSTANTS, hours=st.integers(1, 24 * 40))
def test_counting_agrees_with_stepping(schedule, zone, after, hours):
    parsed = parse(schedule, time_zone=zone)
    until = after + timedelta(hours=hours)
    stepped, current = 0, after
    while stepped < 100:
        current = parsed.next_after(current)
        if current is None or current > until:
            break
        stepped += 1
    assert parsed.count_between(after=after, until=until, cap=100) == stepped


@settings(max_examples=60, deadline=None)
@given(zone=ZONES, day=st.dates(min_value=datetime(2020, 1, 1).date(), max_value=datetime(2034, 12, 31).date()))
def test_a_daily_schedule_fires_at_most_once_per_local_day(zone, day):
    parsed = parse("30 2 * * *", time_zone=zone)
    start = datetime(day.year, day.month, day.day, tzinfo=parsed.zone).astimezone(UTC)
    first = parsed.next_after(start - timedelta(seconds=1))
    second = parsed.next_after(first)
    assert first.astimezone(parsed.zone).date() != second.astimezone(parsed.zone).date()
