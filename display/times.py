"""Times as a person reads them: Kubernetes' human durations and ages (``3m20s``, ``5h3m``), and forecasts (``in
3m``, ``any moment now``), as ``kubectl`` and vcctl print them."""

from __future__ import annotations

from datetime import datetime


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration`` of k8s.io/apimachinery: ``45s``, ``3m20s``, ``15m``, ``5h3m``, ``3d``."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 60 * 2:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def age(timestamp: str | datetime | None, *, now: datetime) -> str:
    """How long ago ``timestamp`` was, as kubectl and vcctl print it; ``<unknown>`` when there is none."""
    when = parse_time(timestamp) if isinstance(timestamp, str) else timestamp
    if when is None:
        return "<unknown>"
    return human_duration((now - when).total_seconds())


def expected(when: datetime | None, *, now: datetime) -> str:
    """A forecast time as a person reads it: ``in 3m``, ``any moment now`` (due or overdue), ``unknown``."""
    if when is None:
        return "unknown"
    seconds = (when - now).total_seconds()
    return f"in {human_duration(seconds)}" if seconds >= 1 else "any moment now"
