"""gunicorn settings for the handler (``gunicorn -c python:handlers.gunicorn_config ...``): correct metrics with any
number of workers.

Before the first worker starts, ``PROMETHEUS_MULTIPROC_DIR`` is pointed at a fresh, empty directory (unless the
environment already names one), so each worker's counters are written there and ``/metrics`` sums them
(:mod:`handlers.metrics`); a worker that exits is marked dead, so its gauges (none today) would not linger.
"""

from __future__ import annotations

import os
import shutil
import tempfile


def on_starting(server) -> None:
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        shutil.rmtree(directory, ignore_errors=True)  # counts of an earlier run must not be added to this one
        os.makedirs(directory, exist_ok=True)
    else:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="jobflow-metrics-")


def child_exit(server, worker) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
