"""``spec.parameters`` and ``{{...}}`` placeholders: substituted in patches, refused when they name nothing."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobflow_core import plan
from jobflow_core.flows.parameters import Item, placeholders, substitute
from jobflow_core.models import VcJobPhase
from jobflow_core.validation.jobflows import validate
from scenario import T0, jobflow, templates_for, vcjob

SWEEP = """
spec:
  parameters:
  - {name: lr, value: "0.01"}
  - {name: epochs, value: "50", description: how long to train}
  flows:
  - name: train
    patch:
      jobSpec:
        tasks:
        - name: nginx
          template:
            spec:
              containers:
              - name: nginx
                args: ["--lr={{params.lr}}", "--epochs={{ params.epochs }}", "{{ .Values.kept }}"]
"""


def test_a_patch_reads_parameters_and_other_braces_are_left_alone():
    [create] = plan(jobflow(SWEEP), templates=templates_for(jobflow(SWEEP)), jobs=[], now=T0).creates
    container = create.manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    assert container["args"] == ["--lr=0.01", "--epochs=50", "{{ .Values.kept }}"]
    assert container["image"] == "nginx:1.27"  # the template's own fields are kept


def test_an_item_is_written_as_text_or_compact_json_and_its_fields_and_index_are_readable():
    item = Item(index=3, value={"lr": 0.01, "batch": 64, "name": "a"})
    document = {"env": [{"name": "LR", "value": "{{item.lr}}"}, {"name": "ALL", "value": "{{item}}"},
                        {"name": "I", "value": "shard-{{index}}"}, {"name": "N", "value": "{{item.name}}"}],
                "{{item}}": "keys are never replaced"}
    assert substitute(document, params={}, item=item) == {
        "env": [{"name": "LR", "value": "0.01"}, {"name": "ALL", "value": '{"lr":0.01,"batch":64,"name":"a"}'},
                {"name": "I", "value": "shard-3"}, {"name": "N", "value": "a"}],
        "{{item}}": "keys are never replaced"}
    assert substitute("{{item}}", params={}, item=Item(0, "s0")) == "s0"


@given(st.text())
def test_a_substituted_value_is_never_read_again(value):
    assert substitute("{{params.a}}/{{params.b}}", params={"a": value, "b": "x"}) == f"{value}/x"


def test_placeholders_are_listed_in_order():
    assert placeholders({"a": ["{{params.x}} {{item.k}}", {"b": "{{index}}{{other}}"}]}) == \
        ["params.x", "item.k", "index"]


@pytest.mark.parametrize(("spec", "message", "hint"), [
    ('{parameters: [{name: lr}], flows: [{name: a}]}', 'parameter "lr" has no value',
     "kubectl jobflow create -f FILE -p lr=VALUE"),
    ('{parameters: [{name: lr, value: "1"}, {name: lr, value: "2"}], flows: [{name: a}]}',
     'parameter "lr" is declared twice', "remove one"),
    ('{parameters: [{name: "1x", value: "1"}], flows: [{name: a}]}', 'parameter "1x": not a valid name', "letter"),
    ('{flows: [{name: a, patch: {jobSpec: {queue: "{{params.queue}}"}}}]}',
     'flow "a": {{params.queue}} in patch.jobSpec names nothing', "spec.parameters: [{name: queue"),
    ('{flows: [{name: a, patch: {jobSpec: {queue: "q{{index}}"}}}]}',
     'flow "a": {{index}} in patch.jobSpec names nothing', 'give "a" a forEach'),
])
def test_what_a_placeholder_or_parameter_lacks_is_refused_naming_it(spec, message, hint):
    [error] = validate(jobflow(f"spec: {spec}"))
    assert error.message == message and hint in error.hint


def test_conditions_read_parameters():
    flow = jobflow("""
spec:
  parameters: [{name: deploy, value: "no"}]
  flows:
  - {name: a}
  - {name: b, dependsOn: {targets: [a]}, when: 'params.deploy == "yes"'}
""")
    result = plan(flow, templates=templates_for(flow), jobs=[vcjob(flow, "a", VcJobPhase.COMPLETED)], now=T0)
    assert [s.name for s in result.status.skipped_flows] == ["b"]
