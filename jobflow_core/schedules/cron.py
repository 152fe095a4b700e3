"""Cron schedules: which minutes a schedule names, in which time zone, and when it next fires.

A JobFlowTemplate's ``spec.schedule`` is written as Kubernetes CronJob's (and Cron VolcanoJob's, and Argo
CronWorkflow's) are: five fields, ``minute hour day-of-month month day-of-week``, each one ``*``, a number, a
range ``a-b``, a step ``*/n`` or ``a-b/n`` or ``a/n``, or a comma-separated list of those. Months and weekdays may
be named (``jan``..``dec``, ``sun``..``sat``, any case); weekday ``7`` is Sunday, like ``0``; ``?`` means ``*`` in
the two day fields. The macros ``@yearly`` (``@annually``), ``@monthly``, ``@weekly``, ``@daily`` (``@midnight``)
and ``@hourly`` stand for their usual five fields. A ``TZ=`` or ``CRON_TZ=`` prefix is refused, as Kubernetes
refuses it: the zone is ``spec.timeZone``.

Day of month and day of week combine as cron always did: when both are restricted (neither starts with ``*`` or
``?``), a day matches if *either* does (``0 0 1 * mon``: the first of the month and every Monday); otherwise both
must.

The minutes are wall-clock minutes in the schedule's time zone (an IANA name, ``zoneinfo``; default UTC). Where
the wall clock jumps (daylight saving time):

* a time that does not exist that day (``30 2 * * *`` in Europe/Berlin on the last Sunday of March, when 02:00
  becomes 03:00) is skipped that day;
* a time that happens twice (``30 2 * * *`` on the last Sunday of October, 02:00-03:00 is lived twice) fires once,
  at its first occurrence; but a schedule that fires every hour (hour field ``*``) fires at every occurrence, as
  Vixie cron does, so ``*/15 * * * *`` leaves no 75-minute gap.

That holds for any shift, not only a whole hour: Pacific/Chatham sets 03:45 back to 02:45, so only 02:45-03:44 is
lived twice and ``*/15 * * * *`` fires at 02:45, ..., 03:30, then 02:45, ..., 03:30 again, then 03:45, each once,
in time order. So a daily schedule fires exactly once a day, but on a day whose local time skips its minute.
Everything here is a pure function of the schedule and the instant given; nothing reads a clock.
"""


import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
          "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
MONTHS = {name: number for number, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
WEEKDAYS = {name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
SEARCH_YEARS = 5
"""How far ahead :meth:`Schedule.next_after` looks before it says the schedule never fires (a 29 February falls on
a given weekday within 28 years, but no schedule a user means fires less than once in five; robfig/cron, which
Kubernetes uses, gives up after five years too)."""


class CronError(ValueError):
    """A schedule or time zone that cannot be used; the message says what is wrong and what to write."""


@dataclass(frozen=True)
class Field:
    """One of the five fields: its name, its range, and the names it accepts."""

    name: str
    low: int
    high: int
    names: dict[str, int] | None = None


FIELDS = (Field("minute", 0, 59), Field("hour", 0, 23), Field("day of month", 1, 31),
          Field("month", 1, 12, MONTHS), Field("day of week", 0, 7, WEEKDAYS))
_PART = re.compile(r"(?P<range>\*|[a-z0-9]+(?:-[a-z0-9]+)?)(?:/(?P<step>[0-9]+))?")


def _number(text: str, field: Field) -> int:
    if field.names and text in field.names:
        return field.names[text]
    if not text.isdigit():
        named = f" or a name ({', '.join(field.names)})" if field.names else ""
        raise CronError(f"{field.name}: {text!r} is not a number{named}")
    value = int(text)
    if not field.low <= value <= field.high:
        raise CronError(f"{field.name}: {value} is out of range {field.low}-{field.high}")
    return value


def _values(text: str, field: Field) -> frozenset[int]:
    """The values one field names."""
    found: set[int] = set()
    for part in text.split(","):
        match = _PART.fullmatch(part)
        if match is None:
            raise CronError(f"{field.name}: {part!r} is not '*', a number, a range a-b, or one of those with /step")
        spec, step = match["range"], match["step"]
        if spec == "*":
            low, high = field.low, field.high
        elif "-" in spec:
            low, high = (_number(end, field) for end in spec.split("-"))
            if low > high:
                raise CronError(f"{field.name}: the range {spec} runs backwards; write {high}-{low}")
        else:
            low = _number(spec, field)
            high = field.high if step is not None else low  # 'a/n': from a to the end, every n
        every = int(step) if step is not None else 1
        if every < 1:
            raise CronError(f"{field.name}: a step must be at least 1, not {every}")
        found.update(range(low, high + 1, every))
    return frozenset(found)


def check_time_zone(name: str | None) -> ZoneInfo:
    """The zone ``spec.timeZone`` names (UTC when unset)."""
    if name is None or name == "":
        return ZoneInfo("UTC")
    if name != name.strip() or name.startswith("/") or ".." in name:
        raise CronError(f"timeZone {name!r} is not an IANA time zone name; write one such as 'Europe/Berlin' or "
                        "'America/New_York' (see `timedatectl list-timezones`)")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CronError(f"timeZone {name!r} is not an IANA time zone name; write one such as 'Europe/Berlin' or "
                        "'America/New_York' (see `timedatectl list-timezones`)") from None


def _offset(zone: ZoneInfo, instant: datetime) -> timedelta:
    offset = instant.astimezone(zone).utcoffset()
    assert offset is not None  # a ZoneInfo always has one
    return offset


@lru_cache(maxsize=4096)
def _spans(zone: ZoneInfo, day: date) -> tuple[tuple[datetime, datetime, timedelta], ...]:
    """The stretches of ``day``'s wall clock in time order, each ``(first wall time, end wall time, UTC offset)``
    (naive walls, end excluded). A day without a clock change is one span, 00:00 to 24:00; a change splits it,
    and a span that starts before an earlier one ends lives those wall times a second time.

    The window looked at holds every instant whose wall time could fall on ``day`` (offsets lie within
    -12 h..+14 h): 52 hours, in which a zone changes its clock once at most (zones change it weeks apart). So
    the offsets at its two ends tell whether it changes, and halving the window finds the change to the
    second. Cached: the spans depend on the zone and the day alone, and every look at a template asks for the
    same few days again (the latest time, the count since, the next time)."""
    start = datetime.combine(day, time())
    end = start + timedelta(days=1)
    low = (start - timedelta(hours=15)).replace(tzinfo=UTC)
    high = (end + timedelta(hours=13)).replace(tzinfo=UTC)
    before, after = _offset(zone, low), _offset(zone, high)
    stretches = [(low, high, before)]
    if before != after:
        early, late = 0, int((high - low).total_seconds())  # the change is in (low + early s, low + late s]
        while late - early > 1:
            middle = (early + late) // 2
            if _offset(zone, low + timedelta(seconds=middle)) == before:
                early = middle
            else:
                late = middle
        change = low + timedelta(seconds=late)
        stretches = [(low, change, before), (change, high, after)]
    spans = []
    for first, until, offset in stretches:
        wall_first = max(first.replace(tzinfo=None) + offset, start)
        wall_end = min(until.replace(tzinfo=None) + offset, end)
        if wall_first < wall_end:
            spans.append((wall_first, wall_end, offset))
    return tuple(spans)


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule in its time zone."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    either_day: bool
    """Both day fields restricted: a day matches when either does."""
    zone: ZoneInfo

    def _day_matches(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        by_date, by_weekday = day.day in self.days, (day.isoweekday() % 7) in self.weekdays
        return by_date or by_weekday if self.either_day else by_date and by_weekday

    def _walls(self, first: datetime, end: datetime, *, backwards: bool) -> Iterator[datetime]:
        """The wall times the schedule names in ``[first, end)``, both on one day (``end`` may be the next
        midnight), in order or reversed. Minutes are compared as minutes of the day: only those yielded are
        built as datetimes (a look at a minutely schedule would build an hour's worth otherwise)."""
        last = end - timedelta(microseconds=1)
        if first > last:
            return
        lowest = first.hour * 60 + first.minute + (1 if (first.second, first.microsecond) != (0, 0) else 0)
        highest = last.hour * 60 + last.minute
        day = first.date()
        minutes = sorted(self.minutes, reverse=backwards)
        for hour in sorted(self.hours, reverse=backwards):
            if lowest // 60 <= hour <= highest // 60:
                for minute in minutes:
                    if lowest <= hour * 60 + minute <= highest:
                        yield datetime.combine(day, time(hour, minute))

    def _day(self, day: date, *, backwards: bool, bound: datetime) -> Iterator[datetime]:
        """The instants of ``day`` in time order (or reversed), from ``bound`` on (or back), ``bound`` included
        (the caller tells whether it wants it). A wall time lived again (it lies in an earlier span) fires again
        only for an hourly schedule (every hour named)."""
        hourly = len(self.hours) == 24
        spans = _spans(self.zone, day)
        naive_bound = bound.astimezone(UTC).replace(tzinfo=None)
        for index in (reversed(range(len(spans))) if backwards else range(len(spans))):
            first, end, offset = spans[index]
            if backwards:
                end = min(end, naive_bound + offset + timedelta(microseconds=1))
            else:
                first = max(first, naive_bound + offset)
            for wall in self._walls(first, end, backwards=backwards):
                if hourly or not any(lived <= wall < lived_end for lived, lived_end, _ in spans[:index]):
                    yield (wall - offset).replace(tzinfo=UTC)

    def next_after(self, after: datetime) -> datetime | None:
        """The first instant the schedule fires strictly after ``after`` (an aware datetime), in UTC; None when it
        fires in none of the next :data:`SEARCH_YEARS` years. The search starts a day before ``after``'s local
        date: a clock set back across midnight lives part of the day before again."""
        start = after.astimezone(self.zone).date()
        day, last = start - timedelta(days=1), start + timedelta(days=366 * SEARCH_YEARS)
        while day <= last:
            if self._day_matches(day):
                found = next((instant for instant in self._day(day, backwards=False, bound=after)
                              if instant > after), None)
                if found is not None:
                    return found
            day += timedelta(days=1)
        return None

    def latest_at_or_before(self, moment: datetime) -> datetime | None:
        """The last instant the schedule fires at or before ``moment``, in UTC; None when it fired in none of the
        :data:`SEARCH_YEARS` years before. The search starts a day after ``moment``'s local date, for the same
        reason as :meth:`next_after`'s."""
        end = moment.astimezone(self.zone).date()
        day, first = end + timedelta(days=1), end - timedelta(days=366 * SEARCH_YEARS)
        while day >= first:
            if self._day_matches(day):
                found = next((instant for instant in self._day(day, backwards=True, bound=moment)
                              if instant <= moment), None)
                if found is not None:
                    return found
            day -= timedelta(days=1)
        return None

    def count_between(self, *, after: datetime, until: datetime, cap: int) -> int:
        """How many instants ``(after, until]`` holds, counted up to ``cap``: one walk over the days between (from
        the day before, as :meth:`next_after` starts), not a search per instant."""
        count = 0
        day = after.astimezone(self.zone).date() - timedelta(days=1)
        last = until.astimezone(self.zone).date() + timedelta(days=1)
        while day <= last and count < cap:
            if self._day_matches(day):
                for instant in self._day(day, backwards=False, bound=after):
                    if instant > until or count == cap:
                        break
                    if instant > after:
                        count += 1
            day += timedelta(days=1)
        return count


def parse(schedule: str, *, time_zone: str | None = None) -> Schedule:
    """``spec.schedule`` and ``spec.timeZone`` as a :class:`Schedule`; :class:`CronError` says what is wrong."""
    text = " ".join(schedule.split()).lower()
    if text.startswith(("tz=", "cron_tz=")):
        raise CronError(f"schedule {schedule!r}: a time zone inside the schedule is not supported; set "
                        "spec.timeZone instead (as for a Kubernetes CronJob)")
    if text.startswith("@"):
        if text not in MACROS:
            raise CronError(f"schedule {schedule!r}: unknown macro; use one of {', '.join(MACROS)} or five fields")
        text = MACROS[text]
    parts = text.split(" ")
    if len(parts) != 5:
        raise CronError(f"schedule {schedule!r} has {len(parts)} field(s); write five: minute hour day-of-month "
                        "month day-of-week, e.g. '0 2 * * *' for 02:00 every day")
    parts = [part.replace("?", "*") if index in (2, 4) else part for index, part in enumerate(parts)]
    try:
        minutes, hours, days, months, weekdays = (_values(part, field) for part, field in zip(parts, FIELDS))
    except CronError as error:
        raise CronError(f"schedule {schedule!r}: {error}") from None
    return Schedule(minutes, hours, days, months, frozenset(day % 7 for day in weekdays),
                    either_day=not parts[2].startswith("*") and not parts[4].startswith("*"),
                    zone=check_time_zone(time_zone))
