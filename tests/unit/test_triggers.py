"""CloudEvent triggers of a JobFlowTemplate: which events start a run, with which parameters, under which name."""

import yaml

from jobflow_core.models import JobFlowTemplate
from jobflow_core.schedules.runs import event_run_name, run_manifest
from jobflow_core.schedules.triggers import Incoming, matches

TEMPLATE = JobFlowTemplate.model_validate(yaml.safe_load("""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {name: etl, namespace: default, uid: u1}
spec:
  jobFlow:
    spec:
      parameters: [{name: date, value: today}, {name: rows, value: "0"}]
      flows: [{name: load}]
  triggers:
  - name: data-ready
    type: com.example.data.ready
    source: /storage/bucket
    condition: data.date != ""
    parameters: {date: data.date, rows: data.rows}
  - name: paused
    type: com.example.data.ready
    enabled: false
"""))


def event(**changes) -> Incoming:
    fields = {"id": "e-1", "source": "/storage/bucket", "type": "com.example.data.ready",
              "data": {"date": "2026-11-24", "rows": 12}} | changes
    return Incoming(**fields)


def test_a_matching_event_starts_a_run_with_the_parameters_its_data_maps_to():
    [match] = matches(TEMPLATE, event())
    assert match.start.parameters == {"date": "2026-11-24", "rows": "12"}
    assert match.start.name == event_run_name("etl", trigger="data-ready", source="/storage/bucket", event_id="e-1")
    manifest = run_manifest(TEMPLATE, match.start)
    assert manifest["spec"]["parameters"] == [{"name": "date", "value": "2026-11-24"}, {"name": "rows", "value": "12"}]
    assert manifest["metadata"]["annotations"] == {"flow.volcano.sh/run-cause": "event",
                                                   "flow.volcano.sh/trigger": "data-ready",
                                                   "flow.volcano.sh/event-id": "e-1",
                                                   "flow.volcano.sh/event-source": "/storage/bucket"}


def test_the_same_event_id_and_source_name_the_same_run_and_another_id_another():
    assert matches(TEMPLATE, event())[0].start.name == matches(TEMPLATE, event())[0].start.name
    assert matches(TEMPLATE, event())[0].start.name != matches(TEMPLATE, event(id="e-2"))[0].start.name


def test_another_type_or_source_or_a_disabled_trigger_matches_nothing():
    assert matches(TEMPLATE, event(type="com.example.other")) == []
    assert matches(TEMPLATE, event(source="/elsewhere")) == []


def test_a_false_condition_starts_nothing_and_is_no_error():
    [match] = matches(TEMPLATE, event(data={"date": "", "rows": 1}))
    assert match.start is None and match.error is None and "condition is false" in match.skipped


def test_a_condition_the_event_cannot_answer_is_an_error_saying_which_trigger():
    [match] = matches(TEMPLATE, event(data={"rows": 1}))
    assert match.start is None and match.error.startswith("trigger 'data-ready': condition 'data.date != \"\"'")
