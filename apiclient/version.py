"""This build's version, from one source: the distribution's (``version`` in pyproject.toml).

Every program reports it: ``kubectl jobflow --version``, the start-up log line of the handler, the event source and
the dashboard, the handler's ``GET /version``; the image carries it in its ``org.opencontainers.image.version``
label, and each request to the API server names its sender and version (``User-Agent``), as kubectl's do.
"""

from functools import cache
from importlib import metadata

DISTRIBUTION = "volcano-jobflow-serverless"
UNKNOWN = "0+unknown"
"""The version of sources that were never installed (no distribution metadata to read)."""
REPLY_HEADER = "Jobflow-Engine-Version"
"""The header the handler puts on every reply: the event source re-sends an event that a handler of another
version answered (a rolling update in progress), so the start-up announcement of a new event source is not left to
the old handlers that are on their way out (:mod:`eventsource.outbox`)."""


@cache
def version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return UNKNOWN


def user_agent(program: str) -> str:
    """``volcano-jobflow-handler/0.1.0``: how ``program`` names itself to the API server."""
    return f"volcano-jobflow-{program}/{version()}"
