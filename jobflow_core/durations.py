"""Durations written the way Go's ``time.Duration.String`` writes them: ``2m56s``, ``1h0m5s``, ``500ms``.

Upstream's ``runningDuration`` is a ``metav1.Duration``, which serialises with ``Duration.String``; a status we
compute ourselves must look the same. The rules: zero is ``0s``; under a second the largest fitting unit among
``ns``, ``µs`` and ``ms`` with a decimal fraction; otherwise hours, minutes and (possibly fractional) seconds,
leading zero units left out.
"""

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
