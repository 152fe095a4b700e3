"""``template describe``: a JobTemplate with the statistics the engine writes in its status, cost included."""

import io
import json

import yaml

from jobflow_core.models import JobTemplate
from jobflow_core.vocabulary.api import JOBTEMPLATE, ApiType
from kubectl_jobflow import cli, context

TEMPLATE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: train, namespace: ns, managedFields: [{manager: jobflow}]}
spec: {minAvailable: 4, tasks: [{name: main, replicas: 4}]}
status:
  runs: 3
  succeeded: 2
  failed: 1
  failureRate: 0.333
  cost: {cpuSeconds: 480.0, memoryGiBSeconds: 240.0, gpuSeconds: 120.0}
"""


class Stored:
    """An API server holding one JobTemplate."""

    def __init__(self, template: dict) -> None:
        self.template = template

    def get(self, api_type: ApiType, namespace: str, name: str) -> dict:
        assert (api_type, namespace, name) == (JOBTEMPLATE, "ns", "train")
        return self.template

    def close(self) -> None:
        pass


def describe(monkeypatch, *argv: str) -> tuple[int, str]:
    stored = Stored(yaml.safe_load(TEMPLATE))
    monkeypatch.setattr(context.Context, "cluster", property(lambda ctx: stored))
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["template", "describe", "train", "-n", "ns", *argv], out=out, err=err)
    assert err.getvalue() == ""
    return code, out.getvalue()


def test_describe_shows_the_templates_cost_as_the_engine_wrote_it(monkeypatch):
    code, out = describe(monkeypatch)
    shown = yaml.safe_load(out)
    assert code == 0
    assert shown["status"]["cost"] == {"cpuSeconds": 480.0, "memoryGiBSeconds": 240.0, "gpuSeconds": 120.0}
    assert JobTemplate.model_validate(shown).status.cost.gpu_seconds == 120.0
    assert "managedFields" not in shown["metadata"]


def test_describe_as_json_gives_the_cost_to_scripts(monkeypatch):
    code, out = describe(monkeypatch, "-o", "json")
    assert code == 0 and json.loads(out)["status"]["cost"]["cpuSeconds"] == 480.0
