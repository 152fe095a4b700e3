"""The checks of a JobFlow's dependencies on other JobFlows (``jobflow_core.validation.awaits``): each rule of one
spec, the unknown-field check of the new fields, and the cycles admission sees with the namespace's objects.
"""

from __future__ import annotations

import pytest
import yaml

from jobflow_core.models import JobFlow, JobFlowTemplate
from jobflow_core.validation.awaits import errors, jobflow_cycle, template_cycle, waits_for_templates
from jobflow_core.validation.fields import unknown_fields
from jobflow_core.validation.jobflows import validate
from jobflow_core.validation.jobflowtemplates import validate_jobflowtemplate
from jobflow_core.validation.review import JOBFLOW, JOBFLOWTEMPLATE, decide


def raw(spec: str, name: str = "eval", status: str | None = None) -> dict:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": name, "namespace": "default"}, "spec": yaml.safe_load(spec),
            **({"status": yaml.safe_load(status)} if status else {})}


def jobflow(spec: str, name: str = "eval", status: str | None = None) -> JobFlow:
    return JobFlow.model_validate(raw(spec, name, status))


def template(name: str, depends: str = "[]", flows: str = "[{name: a}]") -> JobFlowTemplate:
    return JobFlowTemplate.model_validate(yaml.safe_load(f"""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {{name: {name}, namespace: default}}
spec:
  jobFlow:
    spec:
      dependsOn: {{jobFlows: {depends}}}
      flows: {flows}
"""))


def messages(flow: JobFlow) -> list[str]:
    return [str(error) for error in validate(flow)]


VALID = """
dependsOn:
  jobFlows: [{name: train, timeoutSeconds: 3600}, {template: nightly-data, withinSeconds: 0}]
  outcome: Finished
flows:
- name: a
  dependsOn: {jobFlows: [{name: train, timeoutSeconds: 3600}, {template: features.v2, withinSeconds: 86400}]}
- name: b
  dependsOn: {targets: [a], outcome: Failed, jobFlows: [{template: nightly-data, withinSeconds: 0}]}
"""


def test_a_valid_spec_passes_every_check_and_has_no_unknown_field():
    assert messages(jobflow(VALID)) == []
    assert unknown_fields(raw(VALID), JobFlow) == []


@pytest.mark.parametrize("dependency, path, said", [
    ("{}", "spec.flows[0].dependsOn.jobFlows[0]", "sets neither of name and template"),
    ("{name: train, template: nightly}", "spec.flows[0].dependsOn.jobFlows[0]", "sets both of name and template"),
    ("{name: train, withinSeconds: 60}", "spec.flows[0].dependsOn.jobFlows[0].withinSeconds",
     "only applies to template"),
    ("{template: nightly, withinSeconds: -1}", "spec.flows[0].dependsOn.jobFlows[0].withinSeconds", "is negative"),
    ("{name: train, timeoutSeconds: 0}", "spec.flows[0].dependsOn.jobFlows[0].timeoutSeconds", "less than 1"),
    ("{template: nightly, timeoutSeconds: -5}", "spec.flows[0].dependsOn.jobFlows[0].timeoutSeconds", "less than 1"),
    ("{name: eval}", "spec.flows[0].dependsOn.jobFlows[0].name", "it would wait for itself"),
    ("{name: Train_1}", "spec.flows[0].dependsOn.jobFlows[0].name", "is not a valid JobFlow name"),
    ('{name: ""}', "spec.flows[0].dependsOn.jobFlows[0].name", "is not a valid JobFlow name"),
    ("{template: -nightly}", "spec.flows[0].dependsOn.jobFlows[0].template", "is not a valid JobFlowTemplate name"),
])
def test_each_broken_dependency_of_a_flow_is_refused_by_its_path(dependency, path, said):
    found = messages(jobflow(f"{{flows: [{{name: a, dependsOn: {{jobFlows: [{dependency}]}}}}]}}"))
    assert len(found) == 1 and path in found[0] and said in found[0], found


def test_the_jobflows_own_dependencies_are_named_by_their_path_too():
    found = messages(jobflow("{dependsOn: {jobFlows: [{name: ok}, {template: t, name: x}]}, flows: [{name: a}]}"))
    assert len(found) == 1 and found[0].startswith("spec.dependsOn.jobFlows[1] sets both of name and template")


def test_a_jobflow_without_a_name_yet_is_not_said_to_wait_for_itself():
    flow = JobFlow.model_validate({"metadata": {"generateName": "eval-"},
                                   "spec": {"flows": [{"name": "a", "dependsOn": {"jobFlows": [{"name": "x"}]}}]}})
    assert errors(flow) == []


def test_two_dependencies_on_one_jobflow_must_agree():
    found = validate(jobflow("""
dependsOn: {jobFlows: [{name: train, timeoutSeconds: 60}]}
flows:
- {name: a, dependsOn: {jobFlows: [{name: train, timeoutSeconds: 60}]}}
- {name: b, dependsOn: {jobFlows: [{name: train, timeoutSeconds: 120}, {template: t}]}}
- {name: c, dependsOn: {jobFlows: [{template: t, withinSeconds: 5}]}}
"""))
    assert [error.code for error in found] == ["DisagreeingJobFlowDependency"] * 2
    first, second = (str(error) for error in found)
    assert first.startswith("spec.dependsOn.jobFlows[0] and spec.flows[0].dependsOn.jobFlows[0] and "
                            'spec.flows[1].dependsOn.jobFlows[0] wait for JobFlow "train" with different')
    assert "one dependency, with one binding" in first and "make them agree" in first
    assert 'spec.flows[1].dependsOn.jobFlows[1] and spec.flows[2].dependsOn.jobFlows[0] wait for JobFlowTemplate "t"' \
        in second


def test_the_same_dependency_twice_alike_is_fine():
    assert messages(jobflow("{flows: [{name: a, dependsOn: {jobFlows: [{template: t, withinSeconds: 5}]}}, "
                            "{name: b, dependsOn: {jobFlows: [{template: t, withinSeconds: 5}]}}]}")) == []


def test_an_outcome_without_jobflows_is_refused():
    found = messages(jobflow("{dependsOn: {outcome: Failed}, flows: [{name: a}]}"))
    assert len(found) == 1 and found[0].startswith("spec.dependsOn.outcome is set, but spec.dependsOn.jobFlows")


def test_a_templates_run_is_checked_with_the_fields_path():
    broken = template("nightly", "[{name: train, withinSeconds: 5}]")
    found = [str(error) for error in validate_jobflowtemplate(broken)]
    assert len(found) == 1 and found[0].startswith("spec.jobFlow: spec.dependsOn.jobFlows[0].withinSeconds")
    # A run is named after its template, not like it: a template may wait for a JobFlow named like itself.
    assert validate_jobflowtemplate(template("nightly", "[{name: nightly}]")) == []


@pytest.mark.parametrize("spec, path", [
    ("{dependsOn: {jobflows: [{name: x}]}, flows: [{name: a}]}", "spec.dependsOn.jobflows"),
    ("{dependsOn: {jobFlows: [{name: x, timeoutSecond: 5}]}, flows: [{name: a}]}",
     "spec.dependsOn.jobFlows[0].timeoutSecond"),
    ("{flows: [{name: a, dependsOn: {jobFlows: [{template: x, withinSecond: 5}]}}]}",
     "spec.flows[0].dependsOn.jobFlows[0].withinSecond"),
    ("{flows: [{name: a, dependsOn: {jobflows: [{name: x}]}}]}", "spec.flows[0].dependsOn.jobflows"),
    ("{dependOn: {jobFlows: [{name: x}]}, flows: [{name: a}]}", "spec.dependOn"),
])
def test_a_misspelt_field_is_named_with_the_right_spelling(spec, path):
    found = unknown_fields(raw(spec), JobFlow)
    assert [error.message for error in found] == [f"{path}: unknown field"]
    assert found[0].hint.startswith("did you mean")


def test_misspelt_fields_in_a_templates_run_are_found_too():
    found = unknown_fields(yaml.safe_load("""
kind: JobFlowTemplate
metadata: {name: t}
spec: {jobFlow: {spec: {dependsOn: {jobFlows: [{template: x, withinSecond: 1}]}, flows: [{name: a}]}}}
"""), JobFlowTemplate)
    assert [error.message for error in found] == ["spec.jobFlow.spec.dependsOn.jobFlows[0].withinSecond: unknown field"]


def test_status_awaited_jobflows_reads_back():
    flow = jobflow("{flows: [{name: a, dependsOn: {jobFlows: [{template: t}]}}]}", status="""
awaitedJobFlows:
- {name: JobFlowTemplate/t, jobFlow: t-1, uid: u1, boundAt: "2030-01-01T00:00:00Z", phase: Succeed,
   endTimestamp: "2030-01-01T01:00:00Z", message: done}
""")
    assert flow.status.awaited_job_flows[0].job_flow == "t-1"


# Cycles of JobFlowTemplates' runs -----------------------------------------------------------------------------------


def by_name(*objects):
    return {each.name: each for each in objects}


def test_templates_whose_runs_wait_for_each_other_are_a_cycle():
    a = template("a", "[{template: b}]")
    b = template("b", "[]", flows="[{name: x, dependsOn: {jobFlows: [{template: c}]}}]")
    c = template("c", "[{template: a, withinSeconds: 60}]")
    found = template_cycle(a, templates=by_name(b, c))
    assert [error.code for error in found] == ["AwaitCycle"]
    assert "a -> b -> c -> a" in found[0].message and found[0].message.startswith("spec.jobFlow: ")
    assert template_cycle(template("a", "[{template: b}]"), templates=by_name(template("b", "[{template: a}]")))


def test_a_template_waiting_for_its_own_runs_is_no_cycle():
    a = template("a", "[{template: a}, {template: b}]")
    b = template("b", "[{template: b}, {name: a}]")  # a JobFlow named "a" is not a run of template a
    assert template_cycle(a, templates=by_name(b)) == []


def test_a_cycle_elsewhere_or_to_a_missing_template_is_not_this_ones():
    a = template("a", "[{template: b}, {template: missing}]")
    b, c = template("b", "[{template: c}]"), template("c", "[{template: b}]")
    assert template_cycle(a, templates=by_name(b, c)) == []


def test_the_template_under_review_replaces_its_stored_version():
    stored = template("a")
    b = template("b", "[{template: a}]")
    assert template_cycle(template("a", "[{template: b}]"), templates=by_name(stored, b))
    assert template_cycle(template("a"), templates=by_name(template("a", "[{template: b}]"), b)) == []


def test_waits_for_templates_lists_them_in_spec_order():
    assert waits_for_templates(template("a", "[{template: x}, {name: y}, {template: z}]").spec.job_flow.spec) == \
        ["x", "z"]


def request(obj, *, operation="CREATE", old=None):
    return {"uid": "u", "operation": operation, "namespace": "default", "object": obj,
            "kind": {"group": "flow.volcano.sh", "version": "v1alpha1", "kind": obj["kind"]},
            **({"oldObject": old} if old is not None else {})}


def test_admission_refuses_a_template_that_closes_a_cycle_and_reads_templates_only_when_it_waits_for_one():
    reads = []

    def templates(namespace):
        reads.append(namespace)
        return by_name(template("b", "[{template: a}]"))

    verdict = decide(request(template("a", "[{template: b}]").to_wire()), kind=JOBFLOWTEMPLATE,
                     flow_templates=templates)
    assert not verdict.allowed and "a -> b -> a" in verdict.message and reads == ["default"]
    for alone in (template("a", "[{name: b}]"), template("a", "[{template: a}]")):  # nothing to read for
        assert decide(request(alone.to_wire()), kind=JOBFLOWTEMPLATE, flow_templates=templates).allowed
    assert reads == ["default"]


def test_a_template_unchanged_by_an_update_is_not_refused_for_a_cycle_others_closed():
    a = template("a", "[{template: b}]").to_wire()
    relabelled = a | {"metadata": {**a["metadata"], "labels": {"x": "y"}}}
    verdict = decide(request(relabelled, operation="UPDATE", old=a), kind=JOBFLOWTEMPLATE,
                     flow_templates=lambda namespace: by_name(template("b", "[{template: a}]")))
    assert verdict.allowed


# Cycles of JobFlows by name ------------------------------------------------------------------------------------------


def test_jobflows_waiting_for_each_other_by_name_are_a_cycle():
    new = jobflow("{dependsOn: {jobFlows: [{name: a}]}, flows: [{name: x}]}", name="n")
    a = jobflow("{flows: [{name: x, dependsOn: {jobFlows: [{name: b}]}}]}", name="a")
    b = jobflow("{dependsOn: {jobFlows: [{name: n}]}, flows: [{name: x}]}", name="b")
    found = jobflow_cycle(new, jobflows=by_name(a, b))
    assert [error.code for error in found] == ["AwaitCycle"] and "n -> a -> b -> n" in found[0].message


def test_no_cycle_through_a_jobflow_that_ended_or_recorded_the_end_it_waited_for():
    new = jobflow("{dependsOn: {jobFlows: [{name: a}]}, flows: [{name: x}]}", name="n")
    spec = "{dependsOn: {jobFlows: [{name: n}]}, flows: [{name: x}]}"
    assert jobflow_cycle(new, jobflows=by_name(jobflow(spec, name="a")))
    assert jobflow_cycle(new, jobflows=by_name(jobflow(spec, name="a", status="{state: {phase: Failed}}"))) == []
    recorded = "{awaitedJobFlows: [{name: JobFlow/n, reason: TimedOut}]}"
    assert jobflow_cycle(new, jobflows=by_name(jobflow(spec, name="a", status=recorded))) == []


def test_no_jobflow_cycle_without_a_way_back():
    new = jobflow("{dependsOn: {jobFlows: [{name: a}, {name: gone}, {template: t}]}, flows: [{name: x}]}", name="n")
    a = jobflow("{dependsOn: {jobFlows: [{name: a}, {name: b}]}, flows: [{name: x}]}", name="a")
    b = jobflow("{flows: [{name: x}]}", name="b")
    assert jobflow_cycle(new, jobflows=by_name(a, b)) == []
    assert jobflow_cycle(JobFlow.model_validate({"metadata": {"generateName": "n-"}}), jobflows={}) == []


def test_admission_refuses_a_jobflow_that_closes_a_cycle_by_name_and_reads_jobflows_only_when_it_waits_by_name():
    reads = []

    def jobflows(namespace):
        reads.append(namespace)
        return by_name(jobflow("{dependsOn: {jobFlows: [{name: n}]}, flows: [{name: x}]}", name="a"))

    new = jobflow("{dependsOn: {jobFlows: [{name: a}]}, flows: [{name: x}]}", name="n")
    verdict = decide(request(new.to_wire() | {"kind": "JobFlow"}), kind=JOBFLOW, jobflows=jobflows)
    assert not verdict.allowed and "n -> a -> n" in verdict.message and reads == ["default"]
    plain = jobflow("{dependsOn: {jobFlows: [{template: t}]}, flows: [{name: x}]}", name="m")
    assert decide(request(plain.to_wire() | {"kind": "JobFlow"}), kind=JOBFLOW, jobflows=jobflows).allowed
    assert reads == ["default"], "nothing waits by name: nothing read"
    unreadable = decide(request(new.to_wire() | {"kind": "JobFlow"}), kind=JOBFLOW, jobflows=lambda ns: "forbidden")
    assert unreadable.allowed and any("not checked" in warning for warning in unreadable.warnings)


def test_a_template_name_too_long_for_a_label_value_has_no_runs_to_wait_for():
    long = "t" * 64
    found = errors(jobflow(f"{{dependsOn: {{jobFlows: [{{template: {long}}}]}}, flows: [{{name: x}}]}}", name="n"))
    assert [error.code for error in found] == ["InvalidJobFlowDependency"] and "longer than 63" in found[0].message
