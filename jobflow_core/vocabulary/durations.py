"""Durations written the way Go's ``time.Duration.String`` writes them: ``2m56s``, ``1h0m5s``, ``500ms``.

Upstream's ``runningDuration`` is a ``metav1.Duration``, which serialises with ``Duration.String``; a status we
compute ourselves must look the same. The rules: zero is ``0s``; under a second the largest fitting unit among
``ns``, ``µs`` and ``ms`` with a decimal fraction; otherwise hours, minutes and (possibly fractional) seconds,
leading zero units left out.
"""

import re
from datetime import timedelta

_NANOS_PER = {"ns": 1, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def go_duration(value: timedelta) -> str:
    """``value`` formatted like Go's ``time.Duration.String``."""
    nanos = (value.days * 86_400 + value.seconds) * 1_000_000_000 + value.microseconds * 1_000
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos == 0:
        return "0s"
    if nanos < _NANOS_PER["s"]:
        unit = "ns" if nanos < _NANOS_PER["µs"] else "µs" if nanos < _NANOS_PER["ms"] else "ms"
        return f"{sign}{_decimal(nanos, _NANOS_PER[unit])}{unit}"
    hours, rest = divmod(nanos, 3_600 * _NANOS_PER["s"])
    minutes, rest = divmod(rest, 60 * _NANOS_PER["s"])
    seconds = f"{_decimal(rest, _NANOS_PER['s'])}s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return f"{sign}{seconds}"


def _decimal(amount: int, unit: int) -> str:
    whole, fraction = divmod(amount, unit)
    if not fraction:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{fraction:0{digits}d}".rstrip("0")


_GO_DURATION = re.compile(r"(?:(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+")
_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_SECONDS_PER = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def parse_go_duration(text: str) -> float | None:
    """The seconds a Go duration string (``metav1.Duration``: ``30s``, ``5m``, ``1h30m``, ``0``) stands for, or
    None when it is not one (``1d`` and ``5min`` are not: Go has no day unit)."""
    if text == "0":
        return 0.0
    if not _GO_DURATION.fullmatch(text):
        return None
    return sum(float(number) * _SECONDS_PER[unit] for number, unit in _GO_PART.findall(text))
