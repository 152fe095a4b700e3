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
  at its first occurrence; but a schedule that fires every hour (hour field ``*``) fires in both, as Vixie cron
  does, so ``*/15 * * * *`` leaves no 75-minute gap.

So a daily schedule fires exactly once a day, but on a day whose local time skips its minute. Everything here is a
pure function of the schedule and the instant given; nothing reads a clock.
"""


import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
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

    def _instant(self, day: date, hour: int, minute: int, *, fold: int = 0) -> datetime | None:
        """The instant of a wall time on ``day`` (its ``fold``-th occurrence), or None when the clock skips it or
        lives it only once (``fold=1``: asked only in an hour lived twice, but a half-hour change lives only part of
        it twice)."""
        wall = datetime(day.year, day.month, day.day, hour, minute, tzinfo=self.zone, fold=fold)
        instant = wall.astimezone(UTC)
        back = instant.astimezone(self.zone)
        if (back.hour, back.minute, back.date()) != (hour, minute, day):
            return None
        if fold and instant == wall.replace(fold=0).astimezone(UTC):
            return None
        return instant

    def _lived_twice(self, day: date, hour: int) -> bool:
        """Whether the wall hour ``hour`` of ``day`` happens twice (the clock is set back through it)."""
        wall = datetime(day.year, day.month, day.day, hour, 30, tzinfo=self.zone)
        return wall.utcoffset() != wall.replace(fold=1).utcoffset()

    def _day(self, day: date, *, backwards: bool, edge: datetime | None = None) -> Iterator[datetime]:
        """The instants of ``day``, in time order (or reversed), from the wall time ``edge`` on (or back), when the
        search starts that day: a wall hour before ``edge``'s is earlier in time too, and so is an earlier minute of
        the same hour lived the same time (``fold``). In an hour lived twice, an hourly schedule fires in both (they
        come after the hour's first occurrence and before the next hour)."""
        hourly = len(self.hours) == 24
        hours = sorted(self.hours, reverse=backwards)
        if edge is not None:
            hours = [hour for hour in hours if (hour <= edge.hour if backwards else hour >= edge.hour)]
        for hour in hours:
            folds = (0, 1) if hourly and self._lived_twice(day, hour) else (0,)
            for fold in (reversed(folds) if backwards else folds):
                minutes = sorted(self.minutes, reverse=backwards)
                if edge is not None and (hour, fold) == (edge.hour, edge.fold):
                    minutes = [m for m in minutes if (m <= edge.minute if backwards else m >= edge.minute)]
                for minute in minutes:
                    instant = self._instant(day, hour, minute, fold=fold)
                    if instant is not None:
                        yield instant

    def next_after(self, after: datetime) -> datetime | None:
        """The first instant the schedule fires strictly after ``after`` (an aware datetime), in UTC; None when it
        fires in none of the next :data:`SEARCH_YEARS` years."""
        start = after.astimezone(self.zone)
        day, last = start.date(), start.date() + timedelta(days=366 * SEARCH_YEARS)
        while day <= last:
            if self._day_matches(day):
                edge = start if day == start.date() else None
                found = next((instant for instant in self._day(day, backwards=False, edge=edge)
                              if instant > after), None)
                if found is not None:
                    return found
            day += timedelta(days=1)
        return None

    def latest_at_or_before(self, moment: datetime) -> datetime | None:
        """The last instant the schedule fires at or before ``moment``, in UTC; None when it fired in none of the
        :data:`SEARCH_YEARS` years before."""
        end = moment.astimezone(self.zone)
        day, first = end.date(), end.date() - timedelta(days=366 * SEARCH_YEARS)
        while day >= first:
            if self._day_matches(day):
                edge = end if day == end.date() else None
                found = next((instant for instant in self._day(day, backwards=True, edge=edge)
                              if instant <= moment), None)
                if found is not None:
                    return found
            day -= timedelta(days=1)
        return None

    def count_between(self, *, after: datetime, until: datetime, cap: int) -> int:
        """How many instants ``(after, until]`` holds, counted up to ``cap``."""
        count, current = 0, after
        while count < cap:
            following = self.next_after(current)
            if following is None or following > until:
                break
            count, current = count + 1, following
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
