"""Approval gates (``jobflow_core.flows.gates``): an answer's text, who may give it, and a gate planned step by step.

A gate opens once its dependencies are met and waits; the first answer recorded (a person's annotation, an event the
shell offers, or the timeout's) is written as the gate's record in ``jobStatusList`` (Completed or Failed, no vcjob)
and an entry of ``status.approvals``, and never changes. What waits for the gate starts in the same plan.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobflow_core import observe, plan
from jobflow_core.flows import gates
from jobflow_core.flows.gates import Answer, answer_text, event_accepted, may_answer, parse_answer, signature
from jobflow_core.models import (Approval, ApprovalDecision, ApprovalRecord, JobFlow, JobFlowPhase, JobFlowStatus,
                                  JobTemplateStatus,
                                 VcJobPhase, format_time)
from jobflow_core.planning.starts import templates_needed
from jobflow_core.validation.jobflows import validate
from jobflow_core.vocabulary.naming import attempt_job_name
from scenario import T0, Cluster, jobflow, templates_for

P = VcJobPhase
APPROVED, REJECTED = ApprovalDecision.APPROVED, ApprovalDecision.REJECTED

# What an answer says


@given(job_name=st.text(min_size=1), user=st.text(min_size=1), message=st.text(),
       decision=st.sampled_from(list(ApprovalDecision)))
def test_an_answer_reads_back_as_it_was_written(job_name, user, message, decision):
    written = Answer(job_name=job_name, decision=decision, user=user, message=message or None)
    assert parse_answer(answer_text(written)) == written


def test_an_answer_is_one_line_of_json_with_the_fields_a_person_reads():
    text = answer_text(Answer(job_name="test-gate", decision=APPROVED, user="alice", message="numbers ok"))
    assert text == '{"jobName":"test-gate","decision":"Approved","user":"alice","message":"numbers ok"}'
    assert answer_text(Answer(job_name="test-gate", decision=REJECTED, user="bob")) == (
        '{"jobName":"test-gate","decision":"Rejected","user":"bob"}')


@pytest.mark.parametrize(("spelling", "decision"), [
    ("Approved", APPROVED), ("approved", APPROVED), ("APPROVE", APPROVED), ("approve", APPROVED),
    ("Rejected", REJECTED), ("rejected", REJECTED), ("Reject", REJECTED), ("rEjEcT", REJECTED)])
def test_a_decision_may_be_spelled_approve_or_reject_in_any_case(spelling, decision):
    answer = parse_answer(json.dumps({"jobName": "test-gate", "decision": spelling, "user": "alice"}))
    assert isinstance(answer, Answer) and answer.decision is decision


@pytest.mark.parametrize(("text", "why"), [
    ("approved", 'not a JSON object like {"jobName":"...","decision":"Approved","user":"..."}'),
    ("{jobName: test-gate}", 'not a JSON object like {"jobName":"...","decision":"Approved","user":"..."}'),
    ('["test-gate", "Approved"]', 'not a JSON object like {"jobName":"...","decision":"Approved","user":"..."}'),
    ("", 'not a JSON object like {"jobName":"...","decision":"Approved","user":"..."}'),
    ('{"jobName": "test-gate", "user": "alice"}', "decision None is neither Approved nor Rejected"),
    ('{"jobName": "test-gate", "decision": "yes", "user": "alice"}', "decision 'yes' is neither Approved nor Rejected"),
    ('{"jobName": "test-gate", "decision": true, "user": "alice"}', "decision True is neither Approved nor Rejected"),
    ('{"decision": "Approved", "user": "alice"}',
     "it names no jobName (the gate's record it answers; see kubectl jobflow status)"),
    ('{"jobName": "", "decision": "Approved", "user": "alice"}',
     "it names no jobName (the gate's record it answers; see kubectl jobflow status)"),
    ('{"jobName": 7, "decision": "Approved", "user": "alice"}',
     "it names no jobName (the gate's record it answers; see kubectl jobflow status)"),
    ('{"jobName": "test-gate", "decision": "Approved"}', "it names no user"),
    ('{"jobName": "test-gate", "decision": "Approved", "user": ""}', "it names no user"),
    ('{"jobName": "test-gate", "decision": "Approved", "user": ["alice"]}', "it names no user"),
])
def test_an_annotation_that_holds_no_answer_says_why(text, why):
    assert parse_answer(text) == why


def test_a_message_that_is_not_text_is_left_out():
    answer = parse_answer('{"jobName": "test-gate", "decision": "Approved", "user": "alice", "message": 42}')
    assert answer == Answer(job_name="test-gate", decision=APPROVED, user="alice")


# Who may answer


def approval(yaml_text: str = "{}") -> Approval:
    return jobflow(f"spec: {{flows: [{{name: gate, approval: {yaml_text}}}]}}").spec.flows[0].approval


@pytest.mark.parametrize(("approvers", "user", "groups", "allowed"), [
    ("", "anyone", [], True),
    ("approvers: {}", "anyone", [], True),
    ("approvers: {users: [alice]}", "alice", [], True),
    ("approvers: {users: [alice]}", "bob", ["alice"], False),  # a group named like a user is no user
    ("approvers: {users: [alice]}", "Alice", [], False),
    ("approvers: {groups: [ops]}", "bob", ["dev", "ops"], True),
    ("approvers: {groups: [ops]}", "ops", [], False),  # a user named like a group is in no group
    ("approvers: {users: [alice], groups: [ops]}", "carol", ["ops"], True),
    ("approvers: {users: [alice], groups: [ops]}", "carol", ["dev"], False),
    ("approvers: {users: [], groups: []}", "alice", ["ops"], False),  # empty lists: nobody (only events, timeout)
])
def test_approvers_name_users_and_groups_and_unset_means_anyone(approvers, user, groups, allowed):
    assert may_answer(approval(f"{{{approvers}}}"), user=user, groups=groups) is allowed


EVENTS = "{events: [{type: dev.ci.approved}, {type: dev.ci.verdict, source: 'https://ci.example/p'}]}"


@pytest.mark.parametrize(("type", "source", "accepted"), [
    ("dev.ci.approved", "https://anything.example", True),  # no source named: any source
    ("dev.ci.approved", "", True),
    ("dev.ci.Approved", "https://anything.example", False),  # the type exactly
    ("dev.ci.approved.v2", "https://anything.example", False),
    ("dev.ci", "https://anything.example", False),
    ("dev.ci.verdict", "https://ci.example/p", True),
    ("dev.ci.verdict", "https://ci.example/p/", False),  # the source exactly
    ("dev.ci.verdict", "https://ci.example", False),
    ("dev.ci.verdict", "https://evil.example/p", False),
])
def test_an_event_answers_a_gate_only_with_a_type_it_lists_and_the_source_named_there(type, source, accepted):
    assert event_accepted(approval(EVENTS), type=type, source=source) is accepted


def test_a_gate_that_lists_no_events_accepts_none():
    assert not event_accepted(approval(), type="dev.ci.approved", source="https://ci.example/p")
    assert not event_accepted(approval("{events: []}"), type="dev.ci.approved", source="https://ci.example/p")


NAMES = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
"""Kubernetes names (namespaces, JobFlows, flows)."""
SIGNED = st.fixed_dictionaries({"namespace": NAMES, "jobflow": NAMES, "flow": NAMES,
                                "decision": st.sampled_from(list(ApprovalDecision)), "source": st.text(),
                                "event_id": st.text()})


@given(key=st.binary(min_size=1), fields=SIGNED)
def test_a_signature_is_deterministic_hex_sha256(key, fields):
    first = signature(key, **fields)
    assert first == signature(key, **fields)
    assert len(first) == 64 and set(first) <= set("0123456789abcdef")


@given(key=st.binary(min_size=1), fields=SIGNED, other=SIGNED,
       which=st.sampled_from(["namespace", "jobflow", "flow", "decision", "source", "event_id"]))
def test_a_signature_changes_with_any_field(key, fields, other, which):
    changed = fields | {which: other[which]}
    if changed[which] != fields[which]:
        assert signature(key, **changed) != signature(key, **fields)


@given(key=st.binary(min_size=1), other=st.binary(min_size=1), fields=SIGNED)
def test_another_key_gives_another_signature(key, other, fields):
    if key != other:
        assert signature(key, **fields) != signature(other, **fields)


# A gate, planned

GATED = """
metadata: {creationTimestamp: '2026-01-02T03:04:05Z'}
spec:
  flows:
  - name: a
  - name: gate
    dependsOn: {targets: [a]}
    approval: {message: check the numbers, timeoutSeconds: 3600}
  - name: b
    dependsOn: {targets: [gate]}
  - name: h
    dependsOn: {targets: [gate], outcome: Failed}
  - name: z
    finally: true
"""
"""``a -> gate -> b``, ``gate -> h`` (its failure handler), and a ``finally`` flow; created at T0."""

UNHANDLED = GATED.replace("  - name: h\n    dependsOn: {targets: [gate], outcome: Failed}\n", "")
"""The same without the handler."""
TIMELESS = GATED.replace(", timeoutSeconds: 3600", "")
EVENT = Answer(job_name="test-gate", decision=APPROVED, source="https://ci.example/p", event_id="evt-1")
EVENT_REJECTS = Answer(job_name="test-gate", decision=REJECTED, source="https://ci.example/p", event_id="evt-2")


def by(user: str, decision: ApprovalDecision, *, job_name: str = "test-gate", message: str | None = None) -> str:
    return answer_text(Answer(job_name=job_name, decision=decision, user=user, message=message))


def annotated(flow: JobFlow, text: str, *, gate: str = "gate") -> JobFlow:
    """``flow`` with a person's answer to ``gate`` written (as ``kubectl jobflow approve|reject`` does)."""
    wire = flow.to_wire()
    wire["metadata"].setdefault("annotations", {})[gates.annotation_key(gate)] = text
    return JobFlow.model_validate(wire)


def step(cluster: Cluster, *, answers: dict[str, Answer] | None = None):
    """``Cluster.step`` with an event's answer offered, as the shell does after ``/trigger`` accepted one."""
    result = plan(cluster.flow, templates=cluster.templates, jobs=list(cluster.jobs.values()), now=cluster.now,
                  answers=answers)
    for create in result.creates:
        cluster.add_job(create)
    cluster.flow = cluster.flow.model_copy(update={"status": result.status})
    return result


def gate_open(spec: str = GATED) -> Cluster:
    """The gate's target completed: the gate waits for an answer. The gate has no JobTemplate."""
    flow = jobflow(spec)
    cluster = Cluster(flow, templates={name: t for name, t in templates_for(flow).items() if name != "gate"})
    assert [c.job_name for c in cluster.step().creates] == ["test-a"]
    cluster.move("a", P.COMPLETED)
    result = cluster.step()
    assert result.creates == []
    assert decision(result, "gate").verdict == "wait"
    return cluster


def decision(result, flow: str):
    return next(d for d in result.decisions if d.view.name == flow)


def record(cluster: Cluster, name: str = "test-gate"):
    return next((r for r in cluster.flow.status.job_status_list or () if r.name == name), None)


def created(result) -> list[str]:
    return [c.job_name for c in result.creates]


def test_a_waiting_gate_says_what_to_check_how_to_answer_and_when_it_times_out():
    cluster = gate_open()
    opened = cluster.jobs["test-a"].status.state.last_transition_time
    [waiting] = [w for w in cluster.flow.status.waiting_flows if w.name == "gate"]
    assert waiting.message == (
        'waiting for approval of "gate": check the numbers (kubectl jobflow approve -n default test gate, or reject; '
        f"record test-gate); without an answer by {format_time(opened + timedelta(hours=1))} it is Rejected")
    assert record(cluster) is None and cluster.flow.status.approvals is None
    assert cluster.phase is JobFlowPhase.RUNNING


def test_an_open_gate_has_no_expected_start_but_one_whose_targets_run_has_theirs():
    """When a person answers is nobody's forecast: an open gate says no expected start (the dashboard said "any
    moment now"); before it opens, it is expected when its targets end, as any flow."""
    flow = jobflow(GATED)
    templates = {name: t for name, t in templates_for(flow).items() if name != "gate"}
    templates["a"] = templates["a"].model_copy(update={"status": JobTemplateStatus(durationP50Seconds=600)})
    cluster = Cluster(flow, templates=templates)
    cluster.step()
    [before] = [w for w in cluster.flow.status.waiting_flows if w.name == "gate"]
    cluster.move("a", P.COMPLETED)
    cluster.step()
    [opened] = [w for w in cluster.flow.status.waiting_flows if w.name == "gate"]
    assert before.expected_start == flow.metadata.creation_timestamp + timedelta(seconds=600)  # a, planned then
    assert opened.expected_start is None


def test_approved_by_annotation_the_gate_is_completed_and_what_waits_for_it_starts_in_the_same_plan():
    cluster = gate_open()
    cluster.flow = annotated(cluster.flow, by("alice", APPROVED, message="numbers ok"))
    now = cluster.now
    result = cluster.step()
    assert created(result) == ["test-b"]
    gate = record(cluster)
    assert (gate.state, gate.reason, gate.start_timestamp, gate.end_timestamp) == (P.COMPLETED, "Approved", now, now)
    assert cluster.flow.status.approvals == [ApprovalRecord(flow="gate", jobName="test-gate", decision=APPROVED,
                                                            user="alice", time=now, message="numbers ok")]
    assert [(e.type, e.reason, e.message) for e in result.events if e.reason == "Approved"] == [
        ("Normal", "Approved", 'approval gate "gate" approved by alice: numbers ok')]
    assert [flow.name for flow in cluster.flow.status.skipped_flows] == ["h"]  # nothing failed for it to handle
    assert "test-gate" in cluster.flow.status.completed_jobs


def test_rejected_the_gate_is_failed_its_handler_starts_and_what_waits_for_success_is_skipped():
    cluster = gate_open()
    cluster.flow = annotated(cluster.flow, by("bob", REJECTED, message="numbers off"))
    now = cluster.now
    result = cluster.step()
    assert created(result) == ["test-h"]
    gate = record(cluster)
    assert (gate.state, gate.reason) == (P.FAILED, "Rejected")
    [entry] = cluster.flow.status.approvals
    assert (entry.decision, entry.user, entry.message, entry.time) == (REJECTED, "bob", "numbers off", now)
    assert [(e.type, e.message) for e in result.events if e.reason == "Rejected"] == [
        ("Warning", 'approval gate "gate" rejected by bob: numbers off')]
    assert [flow.name for flow in cluster.flow.status.skipped_flows] == ["b"]
    assert cluster.phase is JobFlowPhase.RUNNING  # handled: no failure of the JobFlow
    cluster.move("h", P.COMPLETED)
    assert created(cluster.step()) == ["test-z"]
    cluster.move("z", P.COMPLETED)
    cluster.step()
    assert (cluster.phase, cluster.flow.status.state.reason) == (JobFlowPhase.SUCCEED, None)


def test_rejected_with_nothing_to_handle_it_the_jobflow_fails_fast_and_only_its_finally_flow_runs():
    cluster = gate_open(UNHANDLED)
    cluster.flow = annotated(cluster.flow, by("bob", REJECTED))
    result = cluster.step()
    assert created(result) == ["test-z"]
    assert decision(result, "b").verdict in ("held", "skipped")
    state = cluster.flow.status.state
    assert (state.phase, state.reason) == (JobFlowPhase.FAILED, "JobFailed")
    assert "test-gate" in state.message


def test_an_event_answer_is_recorded_with_its_source_and_id():
    cluster = gate_open()
    now = cluster.now
    result = step(cluster, answers={"gate": EVENT})
    assert created(result) == ["test-b"]
    assert cluster.flow.status.approvals == [ApprovalRecord(
        flow="gate", jobName="test-gate", decision=APPROVED, source="https://ci.example/p", eventId="evt-1",
        time=now)]
    assert [e.message for e in result.events if e.reason == "Approved"] == [
        'approval gate "gate" approved by CloudEvent evt-1 from https://ci.example/p']


def at(cluster: Cluster, seconds: int) -> Cluster:
    """The clock ``seconds`` after the gate opened (when its target, a, ended)."""
    cluster.now = cluster.jobs["test-a"].status.state.last_transition_time + timedelta(seconds=seconds)
    return cluster


def test_without_an_answer_within_its_timeout_the_gate_is_rejected():
    cluster = at(gate_open(), 3599)
    assert decision(cluster.step(), "gate").verdict == "wait"
    now = at(cluster, 3600).now
    result = cluster.step()
    assert created(result) == ["test-h"]
    gate = record(cluster)
    assert (gate.state, gate.reason) == (P.FAILED, "ApprovalTimeout")
    assert cluster.flow.status.approvals == [ApprovalRecord(
        flow="gate", jobName="test-gate", decision=REJECTED, timedOut=True, time=now,
        message="no answer within timeoutSeconds (3600)")]
    assert [(e.type, e.message) for e in result.events if e.reason == "ApprovalTimeout"] == [
        ("Warning", 'approval gate "gate" rejected: no answer within timeoutSeconds (3600)')]


def test_on_timeout_approved_the_gate_completes_when_its_timeout_passes():
    cluster = at(gate_open(GATED.replace("timeoutSeconds: 3600", "timeoutSeconds: 3600, onTimeout: Approved")), 3600)
    result = cluster.step()
    assert created(result) == ["test-b"]
    gate = record(cluster)
    assert (gate.state, gate.reason) == (P.COMPLETED, "ApprovalTimeout")
    [entry] = cluster.flow.status.approvals
    assert (entry.decision, entry.timed_out, entry.user) == (APPROVED, True, None)


def test_an_answer_before_the_timeout_is_what_counts():
    cluster = at(gate_open(), 3599)
    cluster.flow = annotated(cluster.flow, by("alice", APPROVED))
    cluster.step()
    at(cluster, 7200)
    cluster.step()
    assert (record(cluster).reason, [e.timed_out for e in cluster.flow.status.approvals]) == ("Approved", [None])


ROOT_GATE = ("metadata: {creationTimestamp: '2026-01-02T03:04:05Z'}\n"
             "spec: {flows: [{name: gate, approval: {timeoutSeconds: 60}}, {name: b, dependsOn: {targets: [gate]}}]}")


@pytest.mark.parametrize(("seconds", "timed_out"), [(0, False), (59, False), (60, True), (3600, True)])
def test_a_gate_without_targets_opens_when_the_jobflow_was_created(seconds, timed_out):
    flow = jobflow(ROOT_GATE)
    result = plan(flow, templates={"b": templates_for(flow)["b"]}, jobs=[], now=T0 + timedelta(seconds=seconds))
    assert [e.timed_out for e in result.status.approvals or ()] == ([True] if timed_out else [])
    assert created(result) == []  # rejected by its timeout: b is skipped


def test_recheck_seconds_is_set_while_a_gate_with_a_timeout_waits_and_not_once_it_is_answered():
    cluster = gate_open()
    assert cluster.flow.status.recheck_seconds == 30  # a tenth of the hour, at most 30 s
    cluster.flow = annotated(cluster.flow, by("alice", APPROVED))
    cluster.step()
    assert cluster.flow.status.recheck_seconds is None


def test_a_gate_without_a_timeout_asks_for_no_recheck():
    assert gate_open(TIMELESS).flow.status.recheck_seconds is None


def test_a_jobflow_that_ended_before_its_gate_opened_asks_for_no_recheck():
    flow = jobflow(GATED)
    cluster = Cluster(flow, templates={name: t for name, t in templates_for(flow).items() if name != "gate"})
    cluster.step()
    cluster.move("a", P.FAILED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.FAILED
    cluster.move("z", P.COMPLETED)
    cluster.step()
    assert cluster.flow.status.recheck_seconds is None


# The first answer wins


def settle(cluster: Cluster) -> None:
    """Plan until the status says all there is to say (the vcjob just created, seen): no answer is involved."""
    for _ in range(3):
        if not cluster.step().status_changed:
            return
    raise AssertionError("the status never settled")


def approved_by_alice() -> Cluster:
    cluster = gate_open()
    cluster.flow = annotated(cluster.flow, by("alice", APPROVED))
    assert created(cluster.step()) == ["test-b"]
    settle(cluster)
    return cluster


def test_once_recorded_a_different_annotation_answer_changes_nothing():
    cluster = approved_by_alice()
    before = (record(cluster), cluster.flow.status.approvals)
    cluster.flow = annotated(cluster.flow, by("mallory", REJECTED))  # past a webhook, or without one
    result = cluster.step()
    assert result.creates == [] and not result.status_changed
    assert (record(cluster), cluster.flow.status.approvals) == before
    assert "test-h" not in cluster.jobs


def test_once_recorded_an_offered_event_answer_changes_nothing():
    cluster = approved_by_alice()
    before = cluster.flow.status
    result = step(cluster, answers={"gate": EVENT_REJECTS})
    assert (result.actions, cluster.flow.status) == ((), before)


def test_once_an_event_answered_a_persons_later_answer_changes_nothing():
    cluster = gate_open()
    assert created(step(cluster, answers={"gate": EVENT_REJECTS})) == ["test-h"]
    settle(cluster)
    before = cluster.flow.status
    cluster.flow = annotated(cluster.flow, by("alice", APPROVED))
    assert cluster.step().actions == ()
    assert cluster.flow.status == before
    assert [(e.decision, e.event_id) for e in cluster.flow.status.approvals] == [(REJECTED, "evt-2")]


def test_a_persons_answer_and_an_event_in_the_same_plan_the_persons_came_first():
    cluster = gate_open()
    cluster.flow = annotated(cluster.flow, by("alice", APPROVED))
    step(cluster, answers={"gate": EVENT_REJECTS})
    assert [(e.decision, e.user, e.event_id) for e in cluster.flow.status.approvals] == [(APPROVED, "alice", None)]


@pytest.mark.parametrize("job_name", ["test-gate-r1", "test-other", "other-gate"])
def test_an_answer_naming_another_record_is_ignored(job_name):
    cluster = gate_open()
    cluster.flow = annotated(cluster.flow, by("alice", APPROVED, job_name=job_name))
    result = step(cluster, answers={"gate": Answer(job_name=job_name, decision=APPROVED, event_id="e", source="s")})
    assert result.creates == [] and decision(result, "gate").verdict == "wait"
    assert record(cluster) is None and cluster.flow.status.approvals is None


def test_the_same_event_offered_twice_gives_one_record_and_one_approval():
    cluster = gate_open()
    first = step(cluster, answers={"gate": EVENT})
    assert created(first) == ["test-b"]
    again = step(cluster, answers={"gate": EVENT})
    assert (again.creates, [e for e in again.events if e.reason == "Approved"]) == ([], [])
    settle(cluster)
    assert step(cluster, answers={"gate": EVENT}).actions == ()
    assert [r.name for r in cluster.flow.status.job_status_list].count("test-gate") == 1
    assert len(cluster.flow.status.approvals) == 1


def test_an_answer_to_a_gate_that_has_not_opened_records_nothing():
    flow = jobflow(GATED)
    cluster = Cluster(flow, templates={name: t for name, t in templates_for(flow).items() if name != "gate"})
    cluster.step()
    cluster.move("a", P.RUNNING)
    cluster.flow = annotated(cluster.flow, by("alice", APPROVED))
    result = step(cluster, answers={"gate": EVENT})
    assert result.creates == [] and record(cluster) is None and cluster.flow.status.approvals is None


@dataclass
class Store:
    """The API server's JobFlow: each status written is a new version; a plan made from an older one loses its
    (guarded) write, and does nothing else."""

    flow: JobFlow
    templates: dict
    jobs: list
    versions: list[JobFlowStatus | None] = field(default_factory=list)
    now: datetime = T0

    def plan(self, status: JobFlowStatus | None, answers: dict[str, Answer]):
        self.now += timedelta(seconds=5)
        return plan(self.flow.model_copy(update={"status": status}), templates=self.templates, jobs=self.jobs,
                    now=self.now, answers=answers)


ANSWERS = st.sampled_from(list(ApprovalDecision))


@settings(max_examples=300)
@given(data=st.data())
def test_approve_racing_reject_the_first_recorded_answer_stays_whatever_the_order_and_the_stale_plans(data):
    opened = gate_open(TIMELESS)
    store = Store(opened.flow, opened.templates, list(opened.jobs.values()), [opened.flow.status])
    first: ApprovalRecord | None = None
    log: list[str] = []
    for _ in range(data.draw(st.integers(min_value=1, max_value=12), label="steps")):
        kind = data.draw(st.sampled_from(["annotate", "event", "plan", "stale plan"]))
        if kind == "annotate":  # a person writes an answer, or changes theirs (no webhook to refuse it)
            decision_ = data.draw(ANSWERS)
            store.flow = annotated(store.flow, by(data.draw(st.sampled_from(["alice", "bob"])), decision_))
            log.append(f"annotation {decision_}")
            continue
        answers = {"gate": Answer(job_name="test-gate", decision=data.draw(ANSWERS), source="https://ci.example/p",
                                  event_id=data.draw(st.sampled_from(["e1", "e2"])))} if kind == "event" else {}
        base = data.draw(st.integers(min_value=0, max_value=len(store.versions) - 1)) if kind == "stale plan" \
            else len(store.versions) - 1
        result = store.plan(store.versions[base], answers)
        entries = [e for e in result.status.approvals or () if e.job_name == "test-gate"]
        log.append(f"{kind} from version {base}: {[(e.decision, e.user, e.event_id) for e in entries]}")
        assert len(entries) <= 1, log
        if first is not None and base == len(store.versions) - 1:
            assert entries == [first], log  # a plan of the truth keeps the answer recorded
        if base == len(store.versions) - 1 and result.status_changed:  # the write is accepted
            store.flow = store.flow.model_copy(update={"status": result.status})
            store.versions.append(result.status)
            if first is None and entries:
                [first] = entries
                person = gates.annotated(store.flow).get("gate")
                expected = person or answers.get("gate")
                assert expected is not None and first.decision is expected.decision, log  # a person's first
        if first is not None:
            recorded = [e for e in store.flow.status.approvals if e.job_name == "test-gate"]
            gate = next(r for r in store.flow.status.job_status_list if r.name == "test-gate")
            assert recorded == [first], log
            assert gate.state is (P.COMPLETED if first.decision is APPROVED else P.FAILED), log


# A rerun opens the gate again


def rejected_and_failed(spec: str = UNHANDLED.replace(", timeoutSeconds: 3600", "")) -> Cluster:
    cluster = gate_open(spec)
    cluster.flow = annotated(cluster.flow, by("bob", REJECTED))
    cluster.step()
    assert cluster.phase is JobFlowPhase.FAILED
    return cluster


def rerun(cluster: Cluster, request: str = "1") -> None:
    wire = cluster.flow.to_wire()
    wire["metadata"]["annotations"]["flow.volcano.sh/rerun"] = request
    cluster.flow = JobFlow.model_validate(wire)


def test_a_rerun_gives_the_gate_a_new_record_which_the_old_answer_does_not_answer():
    cluster = rejected_and_failed()
    rerun(cluster)
    result = cluster.step()
    again = attempt_job_name(jobflow="test", flow="gate", attempt=2)
    assert again == "test-gate-r1"
    assert cluster.flow.status.rerun.from_attempt == {"gate": 2}
    assert decision(result, "gate").verdict == "wait"
    assert f"record {again}" in decision(result, "gate").message
    assert result.creates == [] and cluster.phase is JobFlowPhase.RUNNING
    assert [(e.job_name, e.decision) for e in cluster.flow.status.approvals] == [("test-gate", REJECTED)]
    assert cluster.step().creates == []  # the old answer is still there, and still answers nothing


def test_a_rerun_gate_takes_a_new_answer_naming_its_new_record():
    cluster = rejected_and_failed()
    rerun(cluster)
    cluster.step()
    cluster.flow = annotated(cluster.flow, by("alice", APPROVED, job_name="test-gate-r1"))
    assert created(cluster.step()) == ["test-b"]
    assert (record(cluster, "test-gate-r1").state, record(cluster, "test-gate").state) == (P.COMPLETED, P.FAILED)
    assert [(e.job_name, e.decision, e.user) for e in cluster.flow.status.approvals] == [
        ("test-gate", REJECTED, "bob"), ("test-gate-r1", APPROVED, "alice")]


def test_a_gate_rerun_long_after_its_rejection_waits_again_for_its_timeout():
    cluster = rejected_and_failed(UNHANDLED)  # timeoutSeconds: 3600
    cluster.now += timedelta(hours=3)  # the cause was fixed, then someone asks for the rerun
    rerun(cluster)
    result = cluster.step()
    assert decision(result, "gate").verdict == "wait"
    assert record(cluster, "test-gate-r1") is None


# A gate reads no JobTemplate, and has no vcjob to describe


def test_a_gate_is_never_a_reason_to_read_a_job_template():
    flow = jobflow(GATED)
    first = observe(flow, jobs=[], now=T0)  # the first reconcile reads every flow's, for its estimate
    assert "gate" not in templates_needed(first) and "a" in templates_needed(first)
    cluster = gate_open()
    opened = observe(cluster.flow, jobs=list(cluster.jobs.values()), now=cluster.now)
    needed = templates_needed(opened)
    assert "gate" not in needed
    assert {"b", "h"} <= set(needed)  # what the gate's answer may start in the same plan
    assert "gate" not in cluster.templates  # and planning never missed it: no TemplateNotFound
    assert all(d.verdict != "blocked" for d in plan(cluster.flow, templates=cluster.templates,
                                                    jobs=list(cluster.jobs.values()), now=cluster.now).decisions)


@pytest.mark.parametrize(("field_", "yaml_text"), [
    ("jobTemplate", "jobTemplate: a"),
    ("patch", "patch: {jobSpec: {minAvailable: 2}}"),
    ("retry", "retry: {limit: 1}"),
    ("retryPolicy", "retryPolicy: {maxRetries: 1}"),
    ("timeoutSeconds", "timeoutSeconds: 60"),
    ("forEach", "forEach: {items: [1, 2]}"),
    ("repeat", "repeat: {until: 'true', limit: 2}"),
    ("memoize", "memoize: {}"),
])
def test_a_gate_that_also_describes_a_vcjob_is_invalid_and_says_what_to_drop(field_, yaml_text):
    flow = jobflow(f"spec: {{flows: [{{name: a}}, {{name: gate, dependsOn: {{targets: [a]}}, approval: {{}}, "
                   f"{yaml_text}}}]}}")
    [error] = gates.errors(flow)
    assert (error.code, error.message) == ("InvalidApproval",
                                           f'flow "gate": {field_} on an approval gate, which runs no vcjob')
    assert error.hint == f"drop {field_}, or put it on a flow of its own"
    assert error in validate(flow)


@pytest.mark.parametrize(("yaml_text", "message"), [
    ("{timeoutSeconds: 0}", 'flow "gate": approval.timeoutSeconds 0 is not over 0'),
    ("{timeoutSeconds: -5}", 'flow "gate": approval.timeoutSeconds -5 is not over 0'),
    ("{events: [{type: ''}]}", 'flow "gate": approval.events has an entry without a type'),
])
def test_a_gate_with_a_timeout_not_over_zero_or_an_event_without_a_type_is_invalid(yaml_text, message):
    [error] = gates.errors(jobflow(f"spec: {{flows: [{{name: gate, approval: {yaml_text}}}]}}"))
    assert error.message == message


def test_a_jobflow_wide_retry_policy_puts_no_retry_on_a_gate():
    flow = jobflow("spec: {retryPolicy: {maxRetries: 2}, flows: [{name: a}, "
                   "{name: gate, dependsOn: {targets: [a]}, approval: {}}]}")
    assert validate(flow) == []
    observed = {view.name: view.flow.retry for view in observe(flow, jobs=[], now=T0).views}
    assert observed["gate"] is None and observed["a"] is not None


def test_a_rejected_gate_under_a_retry_policy_is_not_tried_again():
    cluster = gate_open(UNHANDLED.replace("spec:\n", "spec:\n  retryPolicy: {maxRetries: 2}\n"))
    cluster.flow = annotated(cluster.flow, by("bob", REJECTED))
    cluster.step()
    for _ in range(3):  # well past any backoff
        cluster.now += timedelta(hours=1)
        cluster.step()
    assert (cluster.phase, cluster.flow.status.state.reason) == (JobFlowPhase.FAILED, "JobFailed")
    assert [r.name for r in cluster.flow.status.job_status_list if r.name.startswith("test-gate")] == ["test-gate"]
    assert [e.job_name for e in cluster.flow.status.approvals] == ["test-gate"]
