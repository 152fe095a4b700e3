"""Which updates the event source forwards (:mod:`jobflow_core.routing.relevance`), and which JobFlow a change is about.

The table in the module's docstring, as tests: every field the engine reads changes the fingerprint, the fields it
does not read do not. A field added to what the planner reads must be added here and there.
"""

from __future__ import annotations

import copy

import pytest

from jobflow_core.routing.relevance import fingerprint, jobflow_of_change, may_wait, relevant_part
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, VCJOB

VCJOB_OBJ = {
    "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
    "metadata": {"name": "f-a", "namespace": "ns", "uid": "u1", "resourceVersion": "10", "generation": 1,
                 "labels": {"volcano.sh/createdByJobFlow": "ns.f"}, "finalizers": ["flow.volcano.sh/keep-record"],
                 "ownerReferences": [{"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "name": "f",
                                      "uid": "u0", "controller": True}],
                 "managedFields": [{"manager": "vc-controller-manager"}]},
    "spec": {"minAvailable": 1, "tasks": [{"name": "main", "replicas": 1}]},
    "status": {"state": {"phase": "Running", "lastTransitionTime": "2026-11-24T10:00:00Z"},
               "conditions": [{"status": "Pending"}, {"status": "Running"}],
               "taskStatusCount": {"main": {"phase": {"Running": 1}}},
               "retryCount": 0, "runningDuration": "1s",
               "pending": 0, "running": 1, "succeeded": 0, "version": 2, "minAvailable": 1,
               "controlledResources": {"plugin-svc": "svc"}},
}
FLOW_OBJ = {
    "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
    "metadata": {"name": "f", "namespace": "ns", "resourceVersion": "7", "generation": 1,
                 "annotations": {"flow.volcano.sh/rerun": "1"}},
    "spec": {"flows": [{"name": "a"}]},
    "status": {"state": {"phase": "Running"}, "waitingFlows": [{"name": "b", "recheckSeconds": 5}]},
}
TEMPLATE_OBJ = {
    "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
    "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "3"},
    "spec": {"minAvailable": 1}, "status": {"jobDependsOnList": ["f-a"], "runs": 1},
}


def changed(obj: dict, path: tuple[str, ...], value: object) -> dict:
    new = copy.deepcopy(obj)
    target = new
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value
    return new


@pytest.mark.parametrize("path, value", [
    (("status", "state"), {"phase": "Completed"}),
    (("status", "conditions"), [{"status": "Completed"}]),
    (("status", "taskStatusCount"), {"main": {"phase": {"Succeeded": 1}}}),
    (("status", "retryCount"), 1),
    (("status", "runningDuration"), "2s"),
    (("metadata", "deletionTimestamp"), "2026-11-24T10:01:00Z"),
    (("metadata", "finalizers"), []),
    (("metadata", "labels"), {}),
    (("metadata", "annotations"), {"x": "y"}),
    (("metadata", "ownerReferences"), []),
])
def test_every_vcjob_field_the_engine_reads_makes_an_update_worth_forwarding(path, value):
    assert fingerprint(VCJOB, changed(VCJOB_OBJ, path, value)) != fingerprint(VCJOB, VCJOB_OBJ)


@pytest.mark.parametrize("path, value", [
    (("status", "pending"), 1), (("status", "running"), 0), (("status", "succeeded"), 1),
    (("status", "version"), 3), (("status", "minAvailable"), 2), (("status", "controlledResources"), {}),
    (("metadata", "resourceVersion"), "11"), (("metadata", "managedFields"), []), (("metadata", "generation"), 2),
])
def test_a_vcjob_update_of_what_the_engine_never_reads_is_not_worth_forwarding(path, value):
    assert fingerprint(VCJOB, changed(VCJOB_OBJ, path, value)) == fingerprint(VCJOB, VCJOB_OBJ)


@pytest.mark.parametrize("api_type, obj", [(JOBFLOW, FLOW_OBJ), (JOBTEMPLATE, TEMPLATE_OBJ)])
def test_a_status_write_to_a_jobflow_or_jobtemplate_is_not_worth_forwarding_but_a_spec_or_metadata_change_is(
        api_type, obj):
    assert fingerprint(api_type, changed(obj, ("status",), {"state": {"phase": "Failed"}})) == fingerprint(api_type,
                                                                                                         obj)
    assert fingerprint(api_type, changed(obj, ("spec", "x"), 1)) != fingerprint(api_type, obj)
    assert fingerprint(api_type, changed(obj, ("metadata", "annotations"), {"flow.volcano.sh/rerun": "2"})) != \
        fingerprint(api_type, obj)
    assert "status" not in relevant_part(api_type, obj)


def test_the_fingerprint_ignores_key_order():
    reordered = dict(reversed(list(VCJOB_OBJ.items())))
    assert fingerprint(VCJOB, reordered) == fingerprint(VCJOB, VCJOB_OBJ)


def test_a_vcjob_change_is_about_the_jobflow_that_controls_it_and_a_jobflow_change_about_itself():
    assert jobflow_of_change(VCJOB, VCJOB_OBJ) == "f"
    assert jobflow_of_change(VCJOB, changed(VCJOB_OBJ, ("metadata", "ownerReferences"), [])) is None
    assert jobflow_of_change(JOBFLOW, FLOW_OBJ) == "f"
    assert jobflow_of_change(JOBTEMPLATE, TEMPLATE_OBJ) is None


@pytest.mark.parametrize("phase, before, deleted, waits", [
    (None, None, False, True), ("Pending", None, False, True), ("Running", "Pending", False, True),
    ("Completed", "Running", False, False), ("Failed", None, False, False), ("Aborted", "Running", False, False),
    ("Completed", "Completed", False, True),  # the running duration added a moment after it ended
    ("Running", "Running", True, False), ("NoSuchPhase", None, False, False),
])
def test_only_a_vcjob_change_that_cannot_start_a_dependent_by_its_phase_may_wait(phase, before, deleted, waits):
    obj = changed(VCJOB_OBJ, ("status", "state"), {"phase": phase} if phase else {})
    assert may_wait(VCJOB, obj, deleted=deleted, previous_phase=before) is waits
    assert may_wait(JOBFLOW, FLOW_OBJ, deleted=False, previous_phase=None) is False
