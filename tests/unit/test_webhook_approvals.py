"""The webhook checks who answers an approval gate (jobflow_core/validation/approvals.py): an answer
(``approval.flow.volcano.sh/<flow>``) names a gate, reads, is written by the user it names, who is an approver, and
never changes; an update that adds or changes no answer is reviewed as before."""

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobflow_core.flows.gates import Answer, answer_text
from jobflow_core.models import ApprovalDecision
from jobflow_core.validation.review import JOBFLOW, review

JOBFLOW_KIND = {"group": "flow.volcano.sh", "version": "v1alpha1", "kind": "JobFlow"}
SHIP = "approval.flow.volcano.sh/ship"
APPROVERS = {"users": ["alice"], "groups": ["release-managers"]}


def gated(approvers=APPROVERS):
    gate = {"approval": {"approvers": approvers}} if approvers is not None else {"approval": {}}
    return [{"name": "build"}, {"name": "ship", "dependsOn": {"targets": ["build"]}, **gate}]


def jobflow(flows=None, *, annotations=None, labels=None, approvals=None):
    metadata = {"name": "train", "namespace": "default", **({"labels": labels} if labels else {}),
                **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": metadata,
            "spec": {"flows": gated() if flows is None else flows},
            **({"status": {"approvals": approvals}} if approvals else {})}


def answer(decision="Approved", *, user="alice", job_name="train-ship", message=None):
    return answer_text(Answer(job_name=job_name, decision=ApprovalDecision(decision), user=user, message=message))


def answered(old, *, operation="UPDATE", user="alice", groups=(), **annotations):
    """``old`` with ``annotations`` set, reviewed as written by ``user``: the AdmissionReview's response."""
    new = copy.deepcopy(old)
    new["metadata"].setdefault("annotations", {}).update(annotations)
    return reviewed(new, old=old if operation == "UPDATE" else None, user=user, groups=groups)


def reviewed(new, *, old=None, user="alice", groups=()):
    request = {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "kind": JOBFLOW_KIND,
               "operation": "UPDATE" if old is not None else "CREATE", "namespace": "default", "object": new,
               "userInfo": {"username": user, "groups": [*groups, "system:authenticated"]}}
    if old is not None:
        request["oldObject"] = old
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return review(body, kind=JOBFLOW)["response"]


def refused(response):
    assert not response["allowed"]
    return response["status"]["code"], response["status"]["message"]


def test_an_approval_by_the_user_it_names_is_allowed():
    assert answered(jobflow(), **{SHIP: answer()}) == {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                                                       "allowed": True}


def test_a_jobflow_created_with_an_answer_is_checked_like_an_update():
    assert answered(jobflow(), operation="CREATE", **{SHIP: answer()})["allowed"]
    assert refused(answered(jobflow(), operation="CREATE", user="mallory", **{SHIP: answer()}))[0] == 403


def test_an_answer_naming_another_user_is_forbidden_and_says_how_to_answer():
    assert refused(answered(jobflow(), user="mallory", **{SHIP: answer(user="alice")})) == (
        403, 'the answer to gate "ship" of JobFlow default/train names user "alice" but the request comes from '
             '"mallory": answer with kubectl jobflow approve|reject, which names you')


def test_a_user_not_among_the_approvers_is_forbidden_and_told_who_they_are():
    assert refused(answered(jobflow(), user="bob", **{SHIP: answer(user="bob")})) == (
        403, "user \"bob\" may not answer gate \"ship\" of JobFlow default/train: its approvers are users 'alice' "
             "and groups 'release-managers' (ask one of them to answer)")


@pytest.mark.parametrize("approvers, user, groups, allowed", [
    ({"users": ["alice"]}, "alice", (), True),
    ({"users": ["alice"]}, "bob", ("release-managers",), False),
    ({"groups": ["release-managers"]}, "bob", ("release-managers",), True),
    ({"groups": ["release-managers"]}, "bob", ("developers",), False),
    ({"users": ["alice"], "groups": ["release-managers"]}, "carol", ("release-managers",), True),
    ({}, "anyone", (), True),
    (None, "anyone", (), True),
])
def test_approvers_name_users_and_groups_and_unset_means_anyone(approvers, user, groups, allowed):
    response = answered(jobflow(gated(approvers)), user=user, groups=groups, **{SHIP: answer(user=user)})
    assert response["allowed"] is allowed
    assert allowed or response["status"]["code"] == 403


def test_a_gate_whose_approvers_are_empty_lists_is_answered_only_by_an_event_or_its_timeout():
    code, message = refused(answered(jobflow(gated({"users": []})), **{SHIP: answer()}))
    assert (code, message.split(": ", 1)[1]) == (
        403, "it names no approver, so only a CloudEvent (approval.events) or its timeout answers it "
             "(ask one of them to answer)")


def test_an_answer_never_changes_once_written():
    old = jobflow(annotations={SHIP: answer("Approved")})
    assert refused(answered(old, **{SHIP: answer("Rejected")})) == (
        422, 'gate "ship" of JobFlow default/train was already answered: Approved by alice; an answer never changes '
             "(a rerun opens the gate again with a new record to answer: kubectl jobflow retry)")


def test_another_approver_cannot_overwrite_an_answer_even_with_the_same_decision():
    old = jobflow(annotations={SHIP: answer("Approved", user="alice")})
    code, message = refused(answered(old, user="carol", groups=["release-managers"],
                                     **{SHIP: answer("Approved", user="carol")}))
    assert code == 422 and "was already answered: Approved by alice" in message


@pytest.mark.parametrize("record, by", [
    ({"user": "alice", "decision": "Approved"}, "Approved by alice"),
    ({"source": "/ci/pipeline", "eventId": "e-17", "decision": "Approved"},
     "Approved by CloudEvent e-17 from /ci/pipeline"),
    ({"timedOut": True, "decision": "Rejected"}, "Rejected by the timeout"),
])
def test_an_answer_the_engine_recorded_never_changes(record, by):
    old = jobflow(approvals=[{"flow": "ship", "jobName": "train-ship", **record}])
    code, message = refused(answered(old, **{SHIP: answer("Rejected" if "Approved" in by else "Approved")}))
    assert code == 422
    assert message.startswith(f'gate "ship" of JobFlow default/train was already answered: {by}; an answer never')


def test_writing_the_same_answer_again_is_no_change():
    old = jobflow(annotations={SHIP: answer()},
                  approvals=[{"flow": "ship", "jobName": "train-ship", "decision": "Approved", "user": "alice"}])
    assert answered(old, **{SHIP: answer(message="looked twice")})["allowed"]


def test_removing_an_answer_is_allowed_even_by_someone_else():
    old = jobflow(annotations={SHIP: answer()})
    new = copy.deepcopy(old)
    del new["metadata"]["annotations"][SHIP]
    assert reviewed(new, old=old, user="mallory")["allowed"]


def test_a_rerun_makes_a_new_record_which_may_be_answered_afresh():
    old = jobflow(annotations={SHIP: answer("Rejected")},
                  approvals=[{"flow": "ship", "jobName": "train-ship", "decision": "Rejected", "user": "alice"}])
    assert answered(old, **{SHIP: answer("Approved", job_name="train-ship-1")})["allowed"]


@pytest.mark.parametrize("flow", ["build", "deploy"])
def test_an_answer_to_a_flow_that_is_no_approval_gate_is_invalid(flow):
    assert refused(answered(jobflow(), **{f"approval.flow.volcano.sh/{flow}": answer()})) == (
        422, f'flow "{flow}" of JobFlow default/train is no approval gate: the annotation '
             f"approval.flow.volcano.sh/{flow} answers only a flow with approval (remove it, or name a gate: "
             "kubectl jobflow status)")


@pytest.mark.parametrize("text, why", [
    ("yes", 'not a JSON object like {"jobName":"...","decision":"Approved","user":"..."}'),
    ('{"jobName":"train-ship","decision":"maybe","user":"alice"}', "decision 'maybe' is neither Approved nor Rejected"),
    ('{"decision":"Approved","user":"alice"}', "it names no jobName"),
])
def test_an_answer_that_does_not_read_is_invalid_with_why(text, why):
    code, message = refused(answered(jobflow(), **{SHIP: text}))
    assert code == 422
    assert message.startswith(f"the annotation {SHIP} of JobFlow default/train holds no answer: {why}")


INVALID_SPEC = [{"name": "a", "dependsOn": {"targets": ["x"]}}, *gated()]


def test_a_metadata_only_update_of_an_invalid_stored_jobflow_is_still_allowed():
    old = jobflow(INVALID_SPEC, annotations={SHIP: answer(user="someone-before-the-webhook")})
    new = jobflow(INVALID_SPEC, annotations={SHIP: answer(user="someone-before-the-webhook")}, labels={"team": "ml"})
    response = reviewed(new, old=old, user="mallory")
    assert response["allowed"]
    assert response["warnings"][0].startswith("this JobFlow is invalid, and is let through only because its spec is "
                                              "unchanged: jobflow Flow is not DAG: vertex is not defined: x")


def test_an_answer_to_an_invalid_stored_jobflow_is_still_checked():
    old = jobflow(INVALID_SPEC)
    assert refused(answered(old, user="mallory", **{SHIP: answer()}))[0] == 403
    response = answered(old, **{SHIP: answer()})
    assert response["allowed"] and response["warnings"][0].startswith("this JobFlow is invalid")


users = st.sampled_from(["alice", "bob", "carol"])
groups = st.lists(st.sampled_from(["release-managers", "developers"]), unique=True)
approvers = st.none() | st.fixed_dictionaries({}, optional={"users": st.lists(users, unique=True), "groups": groups})


@given(approvers=approvers, named=users, requester=users, requester_groups=groups,
       decision=st.sampled_from(["Approved", "Rejected"]))
def test_a_new_answer_is_allowed_exactly_when_its_user_wrote_it_and_is_an_approver(approvers, named, requester,
                                                                                    requester_groups, decision):
    response = answered(jobflow(gated(approvers)), user=requester, groups=requester_groups,
                        **{SHIP: answer(decision, user=named)})
    listed = approvers or {}
    approver = ("users" not in listed and "groups" not in listed or requester in listed.get("users", ())
                or bool(set(requester_groups) & set(listed.get("groups", ()))))
    assert response["allowed"] is (named == requester and approver)
    assert response["allowed"] or response["status"] == {**response["status"], "code": 403, "reason": "Forbidden"}


@given(first=st.tuples(st.sampled_from(["Approved", "Rejected"]), users),
       second=st.tuples(st.sampled_from(["Approved", "Rejected"]), users), recorded_by_engine=st.booleans())
def test_a_second_answer_to_the_same_record_is_allowed_only_when_it_says_the_same(first, second, recorded_by_engine):
    anyone = gated(None)
    if recorded_by_engine:
        old = jobflow(anyone, approvals=[{"flow": "ship", "jobName": "train-ship", "decision": first[0],
                                          "user": first[1]}])
    else:
        old = jobflow(anyone, annotations={SHIP: answer(first[0], user=first[1])})
    response = answered(old, user=second[1], **{SHIP: answer(second[0], user=second[1])})
    assert response["allowed"] is (first == second)


keys = st.sampled_from(["team", "owner", "kubectl.kubernetes.io/last-applied-configuration", "note"])
texts = st.text(max_size=12)
stored_answers = st.dictionaries(st.sampled_from([SHIP, "approval.flow.volcano.sh/build",
                                                  "approval.flow.volcano.sh/gone"]),
                                 st.sampled_from([answer(), answer("Rejected", user="bob"), "yes", ""]))


@given(flows=st.sampled_from([gated(), INVALID_SPEC]), stored=stored_answers,
       before=st.dictionaries(keys, texts), after=st.dictionaries(keys, texts),
       labels=st.dictionaries(keys.filter(lambda key: "/" not in key), texts), user=users)
def test_an_update_that_adds_or_changes_no_answer_is_reviewed_as_without_answers(flows, stored, before, after,
                                                                                 labels, user):
    old = jobflow(flows, annotations={**before, **stored})
    new = jobflow(flows, annotations={**after, **stored}, labels=labels)
    without = jobflow(flows, annotations=before), jobflow(flows, annotations=after, labels=labels)
    assert reviewed(new, old=old, user=user) == reviewed(without[1], old=without[0], user=user)



def test_a_request_that_makes_itself_an_approver_and_answers_at_once_is_judged_by_the_stored_approvers():
    stored = jobflow(gated({"users": ["alice"]}))
    rewritten = jobflow(gated({"users": ["mallory"]}), annotations={SHIP: answer(user="mallory")})
    code, message = refused(reviewed(rewritten, old=stored, user="mallory"))
    assert code == 403 and "its approvers are users 'alice'" in message
