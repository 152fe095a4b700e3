"""What the webhook checks of a JobFlowTemplate: schedule, time zone, the run's JobFlow, triggers."""

import pytest
import yaml

from jobflow_core.models import JobFlowTemplate
from jobflow_core.validation.jobflowtemplates import validate_jobflowtemplate
from jobflow_core.validation.review import JOBFLOWTEMPLATE, decide


def template(spec: str, name: str = "nightly") -> JobFlowTemplate:
    return JobFlowTemplate.model_validate(yaml.safe_load(f"""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {{name: {name}, namespace: default}}
spec:
  jobFlow:
    spec:
      parameters: [{{name: date, value: today}}]
      flows: [{{name: a}}, {{name: b, dependsOn: {{targets: [a]}}}}]
{spec}
"""))


def messages(spec: str, name: str = "nightly") -> list[str]:
    return [str(error) for error in validate_jobflowtemplate(template(spec, name))]


def test_a_good_template_is_valid():
    assert messages("  schedule: '0 2 * * *'\n  timeZone: Europe/Berlin\n  triggers:\n"
                    "  - {name: t, type: com.example.x, condition: 'data.n > 1', parameters: {date: data.date}}") == []


@pytest.mark.parametrize("spec, words", [
    ("  schedule: '0 25 * * *'", "schedule '0 25 * * *': hour: 25 is out of range 0-23 (fix spec.schedule"),
    ("  schedule: '0 2 * * *'\n  timeZone: Mars/Olympus", "timeZone 'Mars/Olympus' is not an IANA time zone name"),
    ("  timeZone: Mars/Olympus", "timeZone 'Mars/Olympus' is not an IANA time zone name"),
    ("  schedule: '0 0 30 2 *'", "never fires: no month has that day"),
    ("  schedule: 'TZ=Europe/Berlin 0 2 * * *'", "set spec.timeZone instead"),
    ("  triggers: [{name: t, type: x, condition: 'data.n >'}]", "trigger 't': condition is a CEL syntax error"),
    ("  triggers: [{name: t, type: x, parameters: {lr: data.lr}}]", "sets undeclared parameter(s) lr"),
    ("  triggers: [{name: t, type: x}, {name: t, type: y}]", "trigger 't' is defined twice"),
])
def test_a_bad_template_is_refused_saying_what_to_fix(spec, words):
    assert any(words in message for message in messages(spec)), messages(spec)


def test_a_template_whose_runs_would_have_too_long_names_says_to_shorten_it():
    found = messages("", name="n" * 48)
    assert any("a shorter JobFlowTemplate name helps too" in message for message in found), found


def test_the_webhook_denies_a_bad_cron_with_the_message():
    request = {"uid": "1", "operation": "CREATE", "namespace": "default",
               "kind": {"group": "flow.volcano.sh", "version": "v1alpha1", "kind": "JobFlowTemplate"},
               "object": template("  schedule: '61 * * * *'").to_wire()}
    verdict = decide(request, kind=JOBFLOWTEMPLATE)
    assert not verdict.allowed and "minute: 61 is out of range 0-59" in verdict.message
