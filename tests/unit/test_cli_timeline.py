"""``timeline``: each vcjob's pending and running spans on one axis, the critical path marked, text and SVG."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from jobflow_core.models import VcJobPhase
from kubectl_jobflow.timeline import build, svg, text
from scenario import Cluster, jobflow
from seeds import diamond_yaml

P = VcJobPhase
SVG = "{http://www.w3.org/2000/svg}"
DIAMOND = diamond_yaml()


def finished_diamond() -> Cluster:
    """a, b, then c (long) and d (short), then e: each vcjob pending one minute, then running."""
    cluster = Cluster(jobflow(DIAMOND))
    for wave in (["a"], ["b"], ["c", "d"], ["e"]):
        cluster.step()
        for flow in wave:
            cluster.move(flow, P.RUNNING)
        if wave == ["c", "d"]:
            cluster.move("d", P.COMPLETED)
            cluster.tick(), cluster.tick()  # c runs three minutes longer than d
        for flow in wave:
            if cluster.jobs[f"test-{flow}"].phase is not P.COMPLETED:
                cluster.move(flow, P.COMPLETED)
    cluster.step()
    return cluster


def timeline_of(cluster: Cluster, *, gone: tuple[str, ...] = ()):
    jobs = [job.to_wire() for name, job in cluster.jobs.items() if name not in gone]
    return build(cluster.flow.to_wire(), jobs, now=cluster.now)


def test_the_text_chart_shows_pending_then_running_and_marks_the_critical_path():
    timeline = timeline_of(finished_diamond())
    assert [bar.job for bar in timeline.bars] == ["test-a", "test-b", "test-c", "test-d", "test-e"]
    assert timeline.critical == ["a", "b", "c", "e"]
    lines = text(timeline).splitlines()
    assert lines[-1] == "critical path: a -> b -> c -> e"
    rows = {line.split()[1] if line.startswith("*") else line.split()[0]: line for line in lines[1:-1]}
    assert rows["test-c"].startswith("* test-c") and rows["test-d"].startswith("  test-d")
    chart = rows["test-a"].split("|")[1]
    assert chart.lstrip().startswith(".") and "#" in chart and chart.index(".") < chart.index("#")
    assert rows["test-a"].endswith("| Completed  pending 60s, running 60s")


def test_records_stand_in_for_vcjobs_that_are_gone():
    cluster = finished_diamond()
    assert timeline_of(cluster, gone=("test-a", "test-b")).bars == timeline_of(cluster).bars


def test_the_svg_has_a_row_per_vcjob_and_outlines_the_critical_path():
    root = ET.fromstring(svg(timeline_of(finished_diamond())))
    groups = root.findall(f"{SVG}g")
    assert [g.get("data-job") for g in groups] == ["test-a", "test-b", "test-c", "test-d", "test-e"]
    assert [g.get("data-job") for g in groups if g.get("data-critical") == "true"] == \
        ["test-a", "test-b", "test-c", "test-e"]
    for group in groups:
        pending, running = group.find(f"{SVG}rect[@class='pending']"), group.find(f"{SVG}rect[@class='running']")
        assert float(pending.get("x")) + float(pending.get("width")) <= float(running.get("x")) + 0.2
