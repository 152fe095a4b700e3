"""The cost gauges of the kube-state-metrics configuration (``manifests/kube-state-metrics/``) read the fields the
engine writes: each gauge's ``path`` leads, in a JobFlow or JobTemplate serialised by our models, to the figure
:mod:`jobflow_core.insight.cost` worked out. A renamed field (or a typo in the path) would otherwise export zeros for
ever, since the gauges say ``nilIsZero``."""

from typing import Any

import pytest
import yaml

from devcluster.kube_state_metrics import CONFIG
from jobflow_core.insight import cost
from jobflow_core.models import Cost, JobFlow, JobFlowStatus, JobTemplate, JobTemplateStatus
from jobflow_core.vocabulary.resources import CPU, GPU, MEMORY

GANG = {CPU: 8000, MEMORY: 16 * cost.GIB, GPU: 2}
"""Eight cores, 16 GiB and two GPUs: every figure non-zero and different from the others."""
CHARGED = cost.of(GANG, seconds=30)
METADATA = {"name": "x", "namespace": "ns"}


def cost_gauges(kind: str) -> dict[str, list[str]]:
    """``{metric name: gauge path}`` of the ``cost_*`` metrics the configuration exports for ``kind``."""
    document = yaml.safe_load(CONFIG.read_text())
    [resource] = [r for r in document["spec"]["resources"] if r["groupVersionKind"]["kind"] == kind]
    return {f"{resource['metricNamePrefix']}_{metric['name']}": metric["each"]["gauge"]["path"]
            for metric in resource["metrics"] if metric["name"].startswith("cost_")}


def at(obj: Any, path: list[str]) -> Any:
    for key in path:
        obj = obj[key]
    return obj


WRITTEN = {
    "JobFlow": JobFlow.model_validate({"metadata": METADATA, "status": JobFlowStatus(cost=CHARGED).to_wire()}),
    "JobTemplate": JobTemplate.model_validate({"metadata": METADATA,
                                               "status": JobTemplateStatus(cost=CHARGED).to_wire()}),
}


@pytest.mark.parametrize("kind", sorted(WRITTEN))
def test_each_cost_gauge_reads_the_figure_the_engine_wrote(kind):
    serialised = WRITTEN[kind].to_wire()
    gauges = cost_gauges(kind)
    read = {name: at(serialised, path) for name, path in gauges.items()}
    prefix = {"JobFlow": "kube_jobflow", "JobTemplate": "kube_jobtemplate"}[kind]
    assert read == {f"{prefix}_cost_cpu_core_seconds": 240.0, f"{prefix}_cost_memory_gib_seconds": 480.0,
                    f"{prefix}_cost_gpu_seconds": 60.0}


@pytest.mark.parametrize("kind", sorted(WRITTEN))
def test_every_figure_of_a_cost_has_a_gauge(kind):
    paths = [tuple(path) for path in cost_gauges(kind).values()]
    fields = {("status", "cost", info.alias) for info in Cost.model_fields.values()}
    assert sorted(paths) == sorted(fields)
