"""Cron arithmetic: fields, macros, names, day-of-month/day-of-week, month ends, leap years, time zones and DST."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobflow_core.schedules.cron import CronError, parse


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


def test_a_partly_repeated_hour_fires_every_quarter_in_time_order():
    # Pacific/Chatham sets 03:45 back to 02:45 on 5 April 2026 (14:00 UTC): only 02:45-03:44 is lived twice.
    assert fires("*/15 * * * *", utc(2026, 4, 4, 13, 30), 7, zone="Pacific/Chatham") == [
        utc(2026, 4, 4, 13, 45) + timedelta(minutes=15 * k) for k in range(7)]
    assert fires("50 * * * *", utc(2026, 4, 4, 12, 30), 3, zone="Pacific/Chatham") == [
        utc(2026, 4, 4, 13, 5), utc(2026, 4, 4, 14, 5), utc(2026, 4, 4, 15, 5)]  # 02:50, 02:50 again, 03:50


def test_a_daily_time_in_a_partly_repeated_hour_fires_at_its_first_occurrence_only():
    assert fires("50 2 * * *", utc(2026, 4, 4), 2, zone="Pacific/Chatham") == [
        utc(2026, 4, 4, 13, 5), utc(2026, 4, 5, 14, 5)]  # 02:50 +13:45, then 02:50 +12:45 the next day
    assert fires("50 3 * * *", utc(2026, 4, 4), 1, zone="Pacific/Chatham") == [utc(2026, 4, 4, 15, 5)]  # once


CHANGE_ZONES = ("Pacific/Chatham", "Australia/Lord_Howe", "Europe/Berlin", "America/New_York", "Asia/Kolkata",
                "America/Santiago")


def clock_changes(zone: str) -> list[datetime]:
    """The hours (UTC) in which ``zone`` changed its UTC offset in 2021-2027, found by looking at every hour."""
    tz, hour, changes = ZoneInfo(zone), utc(2021, 1, 1), []
    while hour < utc(2028, 1, 1):
        if hour.astimezone(tz).utcoffset() != (hour + timedelta(hours=1)).astimezone(tz).utcoffset():
            changes.append(hour)
        hour += timedelta(hours=1)
    return changes


CHANGES = {zone: clock_changes(zone) for zone in CHANGE_ZONES}


def field(values: st.SearchStrategy[frozenset[int]], low: int,
          high: int) -> st.SearchStrategy[tuple[str, frozenset[int]]]:
    """A field's text with the values it means, worked out apart from the parser: '*', '*/n', or a list."""
    return st.one_of(
        st.just(("*", frozenset(range(low, high + 1)))),
        st.integers(2, 30).map(lambda step: (f"*/{step}", frozenset(range(low, high + 1, step)))),
        values.map(lambda chosen: (",".join(map(str, sorted(chosen))), chosen)))


MINUTE_FIELDS = field(st.sets(st.integers(0, 59), min_size=1, max_size=4).map(frozenset), 0, 59)
HOUR_FIELDS = field(st.one_of(st.sampled_from([frozenset({2}), frozenset({3}), frozenset({1, 2, 3})]),
                              st.sets(st.integers(0, 23), min_size=1, max_size=4).map(frozenset)), 0, 23)
DAY_FIELDS = field(st.sets(st.integers(1, 31), min_size=1, max_size=8).map(frozenset), 1, 31)
MONTH_FIELDS = field(st.one_of(st.just(frozenset({3, 4, 9, 10, 11})),
                               st.sets(st.integers(1, 12), min_size=1, max_size=6).map(frozenset)), 1, 12)
WEEKDAY_FIELDS = field(st.one_of(st.just(frozenset({0})), st.sets(st.integers(0, 6), min_size=1).map(frozenset)),
                       0, 6)


@settings(max_examples=200, deadline=None)
@given(zone=st.sampled_from(CHANGE_ZONES), pick=st.integers(0, 10_000), shift=st.integers(-180, 180),
       random_hour=st.datetimes(min_value=datetime(2021, 1, 1), max_value=datetime(2027, 12, 31),
                                timezones=st.just(UTC)),
       minute=MINUTE_FIELDS, hour=HOUR_FIELDS, day=DAY_FIELDS, month=MONTH_FIELDS, weekday=WEEKDAY_FIELDS)
def test_around_each_clock_change_the_schedule_fires_as_a_minute_by_minute_walk_says(
        zone, pick, shift, random_hour, minute, hour, day, month, weekday):
    """Walk every UTC minute of 3 hours either side of a clock change of 2021-2027 (or of any hour, in a zone that
    has none), read the wall clock, and fire where the fields match: at a wall time's first occurrence, and at its
    repeat too when the hour field names every hour. The schedule must find exactly those instants, both ways,
    and count as many."""
    changes = CHANGES[zone]
    centre = changes[pick % len(changes)] if changes else random_hour.replace(minute=0, second=0, microsecond=0)
    start, end = centre - timedelta(hours=3), centre + timedelta(hours=3)
    texts, (minutes, hours, days, months, weekdays) = zip(*(minute, hour, day, month, weekday))
    schedule, tz = parse(" ".join(texts), time_zone=zone), ZoneInfo(zone)
    either_day = not texts[2].startswith("*") and not texts[4].startswith("*")  # as cron: '*/2' is not restricted
    expected, instant = [], start
    while instant <= end:
        wall = instant.astimezone(tz)
        by_date, by_weekday = wall.day in days, wall.isoweekday() % 7 in weekdays
        if (wall.minute in minutes and wall.hour in hours and wall.month in months
                and ((by_date or by_weekday) if either_day else (by_date and by_weekday))
                and (wall.fold == 0 or len(hours) == 24)):
            expected.append(instant)
        instant += timedelta(minutes=1)
    forwards, current = [], start - timedelta(seconds=1)
    while (current := schedule.next_after(current)) is not None and current <= end:
        forwards.append(current)
    backwards, current = [], end
    while (current := schedule.latest_at_or_before(current)) is not None and current >= start:
        backwards.append(current)
        current -= timedelta(seconds=1)
    assert forwards == expected
    assert backwards == expected[::-1]
    assert schedule.count_between(after=start - timedelta(seconds=1), until=end, cap=1000) == len(expected)
    probe = centre + timedelta(minutes=shift, seconds=30)
    assert schedule.next_after(probe) == next((t for t in expected if t > probe), schedule.next_after(end))
