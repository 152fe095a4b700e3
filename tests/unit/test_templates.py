"""A JobTemplate's status lists the vcjobs made from it, and shrinks when they go."""

from jobflow_core.models import JobTemplateStatus, VcJob
from jobflow_core.planning.template_status import template_status, template_status_changed
from scenario import jobflow, template, vcjob


def labelled(flow_name: str, job_flow: str, template_name: str, *, deleting: bool = False) -> VcJob:
    owner = jobflow(f"metadata: {{name: {job_flow}}}\nspec: {{flows: [{{name: {template_name}}}]}}")
    wire = vcjob(owner, flow_name).to_wire()
    wire["metadata"]["labels"] = {"volcano.sh/createdByJobTemplate": f"default.{template_name}"}
    if deleting:
        wire["metadata"]["deletionTimestamp"] = "2026-01-02T03:04:05Z"
    return VcJob.model_validate(wire)


def test_the_list_names_every_vcjob_made_from_the_template_in_any_jobflow_sorted():
    jobs = [labelled("a", "second", "a"), labelled("a", "first", "a"), labelled("b", "first", "b")]
    assert template_status(template("a"), jobs=jobs).job_depends_on_list == ["first-a", "second-a"]


def test_a_vcjob_being_deleted_no_longer_counts_so_the_list_shrinks():
    jobs = [labelled("a", "first", "a", deleting=True), labelled("a", "second", "a")]
    assert template_status(template("a"), jobs=jobs).job_depends_on_list == ["second-a"]


def test_an_empty_list_differs_from_a_non_empty_one_and_not_from_none():
    assert template_status_changed(template("a"), JobTemplateStatus(job_depends_on_list=["x-a"]))
    assert not template_status_changed(template("a"), JobTemplateStatus(job_depends_on_list=[]))
