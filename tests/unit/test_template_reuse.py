"""``flows[].jobTemplate``: one JobTemplate run under several flow names in one JobFlow; unset, upstream's rule
(the flow runs the JobTemplate of its own name) holds."""

from jobflow_core import needs, observe, plan
from jobflow_core.insight.template_stats import newly_ended
from jobflow_core.models import VcJobPhase
from jobflow_core.routing.concerns import waits_for_template
from jobflow_core.validation.jobflows import validate
from scenario import T0, jobflow, template, vcjob

SWEEP = """
spec:
  flows:
  - name: small
    jobTemplate: train
    patch: {jobSpec: {tasks: [{name: nginx, replicas: 1}]}}
  - name: big
    jobTemplate: train
    patch: {jobSpec: {tasks: [{name: nginx, replicas: 4}]}}
  - name: report
    dependsOn: {targets: [small, big]}
"""


def test_two_flows_run_one_template_each_with_its_own_patch_name_and_createdby_label():
    flow = jobflow(SWEEP)
    creates = plan(flow, templates={"train": template("train"), "report": template("report")}, jobs=[],
                   now=T0).creates
    jobs = {create.job_name: create.manifest for create in creates}
    assert sorted(jobs) == ["test-big", "test-small"]
    assert [jobs[name]["spec"]["tasks"][0]["replicas"] for name in ("test-small", "test-big")] == [1, 4]
    for manifest in jobs.values():
        assert manifest["metadata"]["labels"]["volcano.sh/createdByJobTemplate"] == "default.train"
        assert manifest["metadata"]["annotations"]["volcano.sh/createdByJobTemplate"] == "default.train"


def test_the_templates_jobdependsonlist_gets_both_vcjobs():
    from jobflow_core import UpdateTemplate

    result = plan(jobflow(SWEEP), templates={"train": template("train"), "report": template("report")}, jobs=[],
                  now=T0)
    [update] = [action for action in result.actions if isinstance(action, UpdateTemplate)]
    assert (update.name, sorted(update.added)) == ("train", ["test-big", "test-small"])


def test_the_template_is_read_once_and_a_missing_one_is_named_by_its_own_name():
    flow = jobflow(SWEEP)
    assert list(needs(observe(flow, jobs=[], now=T0)).templates) == ["train", "report"]
    result = plan(flow, templates={}, jobs=[], now=T0)
    assert [w.message for w in result.status.waiting_flows][:2] == [
        'JobTemplate "default/train" not found: create it (kubectl apply -f ...) and the flow will continue'] * 2


def test_both_runs_count_for_the_one_template():
    flow = jobflow(SWEEP)
    jobs = [vcjob(flow, name, VcJobPhase.COMPLETED) for name in ("small", "big")]  # no createdBy label: by spec
    runs = newly_ended(observe(flow, jobs=jobs, now=T0))
    assert list(runs) == ["train"] and len(runs["train"]) == 2


def test_a_new_template_concerns_the_flows_that_run_it_whatever_their_names():
    raw = {"metadata": {"name": "test"}, "spec": {"flows": [{"name": "small", "jobTemplate": "train"}]},
           "status": {"waitingFlows": [{"name": "small", "jobName": "test-small"}]}}
    assert waits_for_template(raw, "train")
    assert not waits_for_template(raw, "small")


def test_an_upstream_jobflow_runs_the_template_of_each_flows_name_as_before():
    flow = jobflow("spec: {flows: [{name: a}]}")
    [create] = plan(flow, templates={"a": template("a")}, jobs=[], now=T0).creates
    assert create.manifest["metadata"]["labels"]["volcano.sh/createdByJobTemplate"] == "default.a"
    assert list(needs(observe(flow, jobs=[], now=T0)).templates) == ["a"]


def test_a_template_name_that_no_object_can_have_is_refused():
    [error] = validate(jobflow("spec: {flows: [{name: a, jobTemplate: Train_1}]}"))
    assert str(error) == ('flow "a": jobTemplate "Train_1" is not a valid JobTemplate name (name an existing '
                          "JobTemplate: lowercase letters, digits, '-' and '.')")
