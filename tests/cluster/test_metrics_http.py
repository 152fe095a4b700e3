"""``/metrics`` of the real handler process under gunicorn with two workers, against the real API server."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from devcluster.processes import free_port
from devcluster.testing import LocalCluster
from engine import send
from healthz import wait_for_healthz
from jobflow_core.vocabulary.api import JOBFLOW
from objects import apply, template, wait_for_phase

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(url + "metrics", timeout=10) as reply:
        text = reply.read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def total(samples: dict, name: str, **labels: str) -> float:
    return sum(value for (sample, sample_labels), value in samples.items()
               if sample == name and all(dict(sample_labels).get(k) == v for k, v in labels.items()))


def test_two_gunicorn_workers_report_one_sum_whichever_answers_the_scrape(cluster: LocalCluster, namespace: str,
                                                                          tmp_path) -> None:
    port = free_port()
    env = {**os.environ, "KUBECONFIG": str(cluster.state.kubeconfig), "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    gunicorn = Path(sys.executable).parent / "gunicorn"
    process = subprocess.Popen([str(gunicorn), "-c", "python:handlers.gunicorn_config", "--bind",
                                f"127.0.0.1:{port}", "--workers", "2", "--threads", "2", "handlers:create_app()"],
                               cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_for_healthz(url, timeout=30, server=process)
        apply(cluster, namespace, template("a") + "---\n" + "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\n"
              "metadata: {name: f}\nspec: {flows: [{name: a}]}\n")
        for _ in range(8):  # the first creates f-a and writes the status; the rest find nothing to do
            assert send(url, JOBFLOW, namespace, "f")[0] == 202
        wait_for_phase(cluster, namespace, "f", "Pending", timeout=30)
        for _ in range(4):  # any worker may answer: each answer is the sum over both
            samples = scrape(url)
            assert total(samples, "jobflow_handler_events_total", code="202") == 8
            assert total(samples, "jobflow_handler_vcjobs_created_total") == 1
            assert total(samples, "jobflow_handler_reconcile_duration_seconds_count") == 8
            assert total(samples, "jobflow_handler_api_requests_total", verb="create", code="2xx") >= 1
        pids = {path.stem.rsplit("_", 1)[1] for path in tmp_path.glob("counter_*.db")}
        assert len(pids) == 2, pids  # both workers keep counts there, and the scrape added them up
    finally:
        process.terminate()
        process.wait(timeout=30)
