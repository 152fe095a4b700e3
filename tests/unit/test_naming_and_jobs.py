"""A flow's vcjob carries upstream's name, labels, annotations and owner reference, and the template's spec."""

import copy

from jobflow_core.flows.vcjobs import build_job
from jobflow_core.vocabulary.naming import is_owned_by
from scenario import TEMPLATE_SPEC, UID, jobflow, template, vcjob

FLOW = jobflow(
    """
    metadata: {name: test, namespace: team-a}
    spec:
      flows:
        - name: b
    """
)


def test_the_vcjob_manifest_has_upstreams_name_labels_annotations_and_owner_reference():
    manifest = build_job(FLOW, flow="b", template=template("b", namespace="team-a"))
    assert manifest["apiVersion"] == "batch.volcano.sh/v1alpha1"
    assert manifest["kind"] == "Job"
    assert manifest["metadata"] == {
        "name": "test-b",
        "namespace": "team-a",
        "labels": {
            "volcano.sh/createdByJobTemplate": "team-a.b",
            "volcano.sh/createdByJobFlow": "team-a.test",
        },
        "annotations": {
            "volcano.sh/createdByJobTemplate": "team-a.b",
            "volcano.sh/createdByJobFlow": "team-a.test",
        },
        "ownerReferences": [
            {
                "apiVersion": "flow.volcano.sh/v1alpha1",
                "kind": "JobFlow",
                "name": "test",
                "uid": UID,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }


def test_only_a_vcjob_volcano_deletes_by_itself_after_its_ttl_carries_our_finalizer():
    """Upstream's name, labels and owner as above; the finalizer holds a TTL's deletion until the end is recorded."""
    ttl = template("b", namespace="team-a", spec=TEMPLATE_SPEC + "ttlSecondsAfterFinished: 60\n")
    assert build_job(FLOW, flow="b", template=ttl)["metadata"]["finalizers"] == ["flow.volcano.sh/keep-record"]
    assert "finalizers" not in build_job(FLOW, flow="b", template=template("b", namespace="team-a"))["metadata"]


def test_the_vcjob_spec_is_the_template_spec_with_every_field_including_unknown_ones():
    spec = """
    queue: research
    minAvailable: 0
    futureJobField: {keep: me}
    tasks:
      - name: main
        replicas: 1
        futureTaskField: 1
        template:
          metadata: {creationTimestamp: null}
          spec: {containers: [{name: c, image: busybox, args: ["--x", null]}]}
    """
    source = template("b", namespace="team-a", spec=spec)
    assert build_job(FLOW, flow="b", template=source)["spec"] == source.spec.to_wire()
    assert build_job(FLOW, flow="b", template=source)["spec"]["futureJobField"] == {"keep": "me"}


def test_changing_the_manifest_never_changes_the_template():
    source = template("b", namespace="team-a")
    before = copy.deepcopy(source.to_wire())
    manifest = build_job(FLOW, flow="b", template=source)
    manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["image"] = "evil"
    manifest["metadata"]["labels"]["x"] = "y"
    assert source.to_wire() == before


def test_a_vcjob_belongs_to_the_jobflow_whose_uid_is_its_controller_owner():
    assert is_owned_by(vcjob(FLOW, "b"), FLOW)


def test_a_vcjob_with_the_same_name_but_another_owner_uid_does_not_belong_to_the_jobflow():
    assert not is_owned_by(vcjob(FLOW, "b", owner_uid="uid-of-an-older-jobflow-named-test"), FLOW)


def test_a_non_controller_owner_reference_does_not_make_a_vcjob_ours():
    job = vcjob(FLOW, "b")
    reference = job.metadata.owner_references[0].model_copy(update={"controller": False})
    job = job.model_copy(update={"metadata": job.metadata.model_copy(update={"owner_references": [reference]})})
    assert not is_owned_by(job, FLOW)
