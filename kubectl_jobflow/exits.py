"""The exit codes of ``kubectl jobflow``, one per cause, so a script or a CI job can tell them apart.

kubectl itself exits 1 for everything; ``argo wait`` and ``argo lint`` exit non-zero when a workflow failed or a
file is invalid. This table keeps 1 for "what was asked did not happen" (a JobFlow that ended Failed, a request the
API server refused) and gives each other cause its own code:

====  ==========================================================================================================
code  meaning
====  ==========================================================================================================
0     everything worked (``status -w``, ``wait``: the JobFlow reached the phase asked for)
1     failed: the JobFlow ended Failed (or another end than the one waited for), the API server refused what
      was asked (not found, already exists, a conflict), or a ``plan`` is blocked (a missing JobTemplate)
2     invalid input or usage: a command line argparse refuses, an empty or unreadable file, an invalid JobFlow
      (``validate``, ``create``'s checks, ``plan``, the API server's schema or webhook)
3     cannot reach the API server, or not allowed (no kubeconfig, connection refused, 401, 403)
4     timed out (``--timeout``)
5     the watch was lost: the API server stayed unreachable longer than the watch waits for it
130   interrupted (Ctrl-C)
====  ==========================================================================================================

:func:`code_of` maps an exception to its code; it imports the error classes only when a command failed, so the
parser (and ``--help``) stays free of them.
"""

from __future__ import annotations

OK = 0
FAILED = 1
USAGE = 2
UNREACHABLE = 3
TIMED_OUT = 4
WATCH_LOST = 5
INTERRUPTED = 130

REFUSED_AS_INVALID = (400, 422)
"""The API server's answers that mean the object itself is wrong (its schema, a webhook's denial)."""


def for_status(status: int, message: str = "") -> int:
    """The exit code of a failed request: its HTTP status (0 when nothing answered) and the API server's message."""
    if status in REFUSED_AS_INVALID or "admission webhook" in message:
        return USAGE
    if status in (0, 401, 403):
        return UNREACHABLE
    return FAILED


def code_of(error: BaseException) -> int | None:
    """The exit code for ``error``, or None when it is no failure a command reports (a bug: let it raise)."""
    from apiclient.cluster import KubeError
    from apiclient.follow import WatchLost
    from apiclient.steering import Refused
    from kubectl_jobflow.conversion import ConversionError
    from kubectl_jobflow.documents import DocumentError
    from kubectl_jobflow.errors import CommandError

    if isinstance(error, CommandError):
        return error.code
    if isinstance(error, KubeError):
        return for_status(error.status, str(error))
    if isinstance(error, (DocumentError, ConversionError)):
        return USAGE
    if isinstance(error, WatchLost):
        return WATCH_LOST
    if isinstance(error, Refused):
        return FAILED
    return None
