"""The Grafana dashboard (``manifests/grafana/jobflow-dashboard.json``) asks only for metrics we export: those of
our processes (``jobflow_*``) and those kube-state-metrics exports with our custom-resource-state configuration
(``kube_jobflow_*``, ``kube_jobtemplate_*``), and shows each of them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import REGISTRY

import eventsource.metrics  # noqa: F401  (registers the event source's metrics)
import handlers.metrics  # noqa: F401  (registers the handler's metrics)
from devcluster.kube_state_metrics import metric_names

DASHBOARD = Path(__file__).resolve().parents[2] / "manifests" / "grafana" / "jobflow-dashboard.json"
METRIC = re.compile(r"\b(?:jobflow|kube_jobflow|kube_jobtemplate)_[a-z0-9_]+")
SERIES_SUFFIXES = ("_bucket", "_count", "_sum", "_total", "_created")


def exported() -> set[str]:
    """Every series name our processes can expose (a counter ``x`` is exposed as ``x_total``)."""
    names = set()
    for family in REGISTRY.collect():
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ("",)))
    return {name for name in names if name.startswith("jobflow_")}


def queries() -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [(panel["title"], target["expr"]) for panel in dashboard["panels"] for target in panel["targets"]]


def test_every_query_names_an_exported_metric_and_every_metric_is_on_the_dashboard():
    names = exported() | metric_names()
    shown = set()
    for title, expr in queries():
        used = METRIC.findall(expr)
        assert used, f"panel {title!r} queries no metric of ours: {expr}"
        for name in used:
            assert name in names, f"panel {title!r} asks for {name}, which nothing exports"
            shown.add(next((name.removesuffix(s) for s in SERIES_SUFFIXES if name.endswith(s)), name))
    families = {family.name for family in REGISTRY.collect() if family.name.startswith("jobflow_")}
    families |= metric_names()
    assert families <= shown, f"metrics not on the dashboard: {sorted(families - shown)}"


def test_every_panel_uses_the_datasource_variable():
    dashboard = json.loads(DASHBOARD.read_text())
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["datasource"]
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}"
