"""What if (``jobflow_core.queueing.whatif``, ``kubectl jobflow plan -f FILE --queue``): a JobFlow of a file, as if
created now, on today's queue: its place in line, its widest stage, its expected start, end and cost, its deadline;
and the command that tells it asks the API server nothing but reads."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest
import yaml

from api_standin import send_json, serving
from apiclient.cluster import Cluster, Target
from jobflow_core import observe
from jobflow_core.models import JobFlow, JobTemplate
from jobflow_core.queueing.deadline import DeadlineState
from jobflow_core.queueing.line import InLine, QueueView
from jobflow_core.queueing.whatif import WhatIf, what_if
from jobflow_core.vocabulary import resources
from kubectl_jobflow import cli
from kubectl_jobflow.plan import queue_view

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)

PIPELINE = """
metadata: {name: train, namespace: ml}
spec:
  flows:
  - name: prep
  - {name: fit-a, dependsOn: {targets: [prep]}}
  - {name: fit-b, dependsOn: {targets: [prep]}}
"""
"""prep (8 CPU, 1 min), then fit-a and fit-b together (8 CPU each, 2 and 3 min): 4 minutes, 2,880 CPU·s."""


def template(name: str, *, cpu: str = "8", seconds: int | None = None, replicas: int = 1) -> JobTemplate:
    """A JobTemplate on queue ``gpu`` whose earlier runs took ``seconds`` (None: it never ran)."""
    return JobTemplate.model_validate(yaml.safe_load(f"""
metadata: {{name: {name}, namespace: ml}}
spec:
  queue: gpu
  minAvailable: {replicas}
  tasks:
  - name: main
    replicas: {replicas}
    template: {{spec: {{containers: [{{name: main, image: trainer, resources: {{requests: {{cpu: "{cpu}"}}}}}}]}}}}
""") | ({"status": {"durationP50Seconds": seconds}} if seconds is not None else {}))


TEMPLATES = {"prep": template("prep", seconds=60), "fit-a": template("fit-a", seconds=120),
             "fit-b": template("fit-b", seconds=180)}


def started(name: str, *, cpu: int, ends_in: timedelta | None) -> InLine:
    """A JobFlow that runs on queue gpu, holding ``cpu`` cores until ``ends_in`` from now (None: not known)."""
    return InLine(namespace="ml", name=name, created=NOW - 10 * MINUTE, queue="gpu", started=True, ended=False,
                  reserved={"cpu": cpu * 1000}, expected_end=NOW + ends_in if ends_in else None)


def waiting(name: str, *, cpu: int, seconds: int | None, created: timedelta = -MINUTE) -> InLine:
    return InLine(namespace="ml", name=name, created=NOW + created, queue="gpu", started=False, ended=False,
                  requests={"cpu": cpu * 1000}, seconds=seconds)


def ask(spec: str = PIPELINE, *, templates=TEMPLATES, line: tuple[InLine, ...] = (), cpu: int | None = 32,
        deadline: datetime | None = None) -> WhatIf:
    body = yaml.safe_load(spec)
    if deadline is not None:
        body["spec"]["deadline"] = deadline.strftime("%Y-%m-%dT%H:%M:%SZ")
    jobflow = JobFlow.model_validate(body)
    view = QueueView(name="gpu", capacity={"cpu": cpu * 1000} if cpu else None, jobflows=line,
                     capacity_source="capability" if cpu else "the Queue has no capability")
    return what_if(observe(jobflow, jobs=[], now=NOW), templates=templates, view=view, now=NOW)


# --- place, start and end ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("line", "position", "start"), [
    ((), 0, NOW),
    ((started("busy", cpu=32, ends_in=10 * MINUTE),), 1, NOW + 10 * MINUTE),
    ((started("half", cpu=16, ends_in=10 * MINUTE),), 0, NOW),
    ((started("busy", cpu=32, ends_in=10 * MINUTE), waiting("older", cpu=32, seconds=300)), 2, NOW + 15 * MINUTE),
    ((started("busy", cpu=32, ends_in=10 * MINUTE), waiting("newer", cpu=32, seconds=300, created=MINUTE)), 1,
     NOW + 10 * MINUTE),
], ids=["empty queue: starts now", "behind a started JobFlow: at its expected end", "room left: starts now",
        "behind one waiting: after it ran", "a JobFlow created after it stands behind it"])
def test_its_place_and_start_come_from_the_line_and_its_end_from_its_critical_path(line, position, start):
    answer = ask(line=line)
    assert (answer.position, answer.start, answer.end) == (position, start, start + 4 * MINUTE)
    assert answer.critical_path == ("prep", "fit-b")


def test_a_queue_whose_capacity_is_not_known_holds_nothing_back():
    answer = ask(cpu=None, line=(started("busy", cpu=32, ends_in=10 * MINUTE),))
    assert (answer.position, answer.start) == (0, NOW)
    assert answer.lines()[0] == ("Queue gpu: would start now (its capacity is not known: the Queue has no capability; "
                                 "nothing is held back)")


def test_a_started_jobflow_without_an_expected_end_counts_as_running_as_long_as_it():
    answer = ask(line=(started("busy", cpu=32, ends_in=None),))
    assert answer.start == NOW + 4 * MINUTE


# --- what can never run ------------------------------------------------------------------------------------------

def test_a_gang_wider_than_the_queue_never_starts_and_says_why():
    answer = ask(templates={**TEMPLATES, "fit-b": template("fit-b", cpu="40", seconds=180)})
    assert (answer.position, answer.start, answer.end, answer.cost) == (None, None, None, None)
    [why] = answer.never_runs
    assert 'flow "fit-b" (JobTemplate "fit-b"): its gang needs 40 CPU at once' in why
    assert answer.lines()[:2] == ["Queue gpu: would never start: Unschedulable (8 CPU of 32 CPU, its capability)",
                                  f"  {why}"]


@pytest.mark.parametrize(("whole", "verdict", "position"), [
    (False, "more cpu than the queue holds at once: its vcjobs run as room frees", 0),
    (True, "can never be held at once (wholeFlowAdmission waits for that)", None),
])
def test_the_widest_stage_fits_or_not(whole, verdict, position):
    wide = {**TEMPLATES, "fit-a": template("fit-a", cpu="20", seconds=120),
            "fit-b": template("fit-b", cpu="20", seconds=180)}
    answer = ask(PIPELINE.replace("spec:\n", f"spec:\n  wholeFlowAdmission: {str(whole).lower()}\n"), templates=wide)
    assert answer.widest.flows == ("fit-a", "fit-b")
    assert f"Widest stage: 40 CPU (fit-a, fit-b): {verdict}" in answer.lines()
    assert answer.position == position


def test_a_widest_stage_that_fits_says_so():
    assert "Widest stage: 16 CPU (fit-a, fit-b): fits" in ask().lines()


# --- cost --------------------------------------------------------------------------------------------------------

def test_the_cost_is_each_gangs_requests_times_its_templates_median():
    answer = ask(templates={**TEMPLATES, "fit-a": template("fit-a", cpu="500m", replicas=4, seconds=120)})
    assert answer.cost.cpu_seconds == 8 * 60 + 4 * 0.5 * 120 + 8 * 180
    assert "Expected cost: 2160 CPU·s" in answer.lines()


# --- unknown, and why ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "templates", "why"), [
    (PIPELINE, {**TEMPLATES, "fit-a": template("fit-a")}, 'no JobTemplate statistics yet for "fit-a": it never ran'),
    (PIPELINE, {"prep": TEMPLATES["prep"], "fit-b": TEMPLATES["fit-b"]}, 'JobTemplate "fit-a" not found'),
    (PIPELINE.replace("- {name: fit-b, dependsOn: {targets: [prep]}}",
                      "- {name: fit-b, dependsOn: {targets: [prep]}, approval: {message: 'go?'}}"),
     TEMPLATES, 'flow "fit-b" waits for a person\'s approval'),
])
def test_an_unknown_run_makes_end_and_cost_unknown_and_says_why(spec, templates, why):
    answer = ask(spec, templates=templates)
    assert (answer.start, answer.end, answer.cost, answer.unknown) == (NOW, None, None, why)
    assert f"Expected end: unknown: {why}" in answer.lines()
    assert f"Expected cost: unknown: {why}" in answer.lines()


def test_behind_a_jobflow_without_an_expected_run_an_unknown_run_makes_the_start_unknown():
    answer = ask(templates={**TEMPLATES, "fit-a": template("fit-a")},
                 line=(started("busy", cpu=32, ends_in=None),))
    assert answer.start is None
    assert answer.lines()[2].startswith("Expected start: unknown: the JobFlows ahead have no expected end")


def test_a_for_each_flow_is_timed_but_not_costed():
    spec = PIPELINE.replace("- {name: fit-b, dependsOn: {targets: [prep]}}",
                            "- {name: fit-b, dependsOn: {targets: [prep]}, forEach: {items: [x, y], parallelism: 1}}")
    answer = ask(spec)
    assert answer.end == NOW + 7 * MINUTE  # two items one after the other: 1 + 2 x 3 minutes
    assert (answer.cost, answer.cost_unknown) == (
        None, 'forEach flow "fit-b" is not costed: each item\'s vcjob may ask differently')


# --- the deadline --------------------------------------------------------------------------------------------------

BUSY = (started("busy", cpu=32, ends_in=10 * MINUTE), waiting("older", cpu=32, seconds=300))
"""It would start in 15 minutes (behind busy, then older) and end in 19; steered ahead of older, in 10 and 14."""


@pytest.mark.parametrize(("deadline", "state", "message"), [
    (NOW + 30 * MINUTE, DeadlineState.ON_TIME, "on time: expected to end 11m0s before it"),
    (NOW + 17 * MINUTE, DeadlineState.AT_RISK, "at risk: expected to end 2m0s after it; it would go ahead of 1 "
                                               "JobFlow (its vcjobs created at once), expected end then "
                                               "2026-03-02T09:14:00Z"),
    (NOW + 12 * MINUTE, DeadlineState.AT_RISK, "at risk: expected to end 7m0s after it; it would go ahead of 1 "
                                               "JobFlow (its vcjobs created at once), expected end then "
                                               "2026-03-02T09:14:00Z (still late)"),
    (NOW + 3 * MINUTE, DeadlineState.MISSED, "missed: even starting now it would end 1m0s after it"),
    (NOW - MINUTE, DeadlineState.MISSED, "missed: it has passed"),
], ids=["met", "at risk, made when steered", "at risk, late even when steered", "impossible", "passed"])
def test_the_deadline_is_met_at_risk_or_missed(deadline, state, message):
    verdict = ask(line=BUSY, deadline=deadline).deadline
    assert (verdict.state, verdict.why) == (state, message)


def test_at_risk_it_says_where_steering_would_put_it():
    verdict = ask(line=BUSY, deadline=NOW + 17 * MINUTE).deadline
    # ahead of every JobFlow not at risk, its vcjobs are created at once; they run when busy's end leaves room
    assert (verdict.overtakes, verdict.steered_position, verdict.steered_end) == (1, 0, NOW + 14 * MINUTE)


def test_without_a_deadline_there_is_no_verdict_and_with_an_unknown_end_it_is_unknown():
    assert ask().deadline is None
    verdict = ask(templates={**TEMPLATES, "fit-a": template("fit-a")}, deadline=NOW + 30 * MINUTE).deadline
    assert (verdict.state, verdict.why) == (DeadlineState.UNKNOWN,
                                            'unknown: no JobTemplate statistics yet for "fit-a": it never ran')


def test_a_jobflow_that_never_starts_misses_its_deadline():
    answer = ask(templates={**TEMPLATES, "fit-b": template("fit-b", cpu="40", seconds=180)},
                 deadline=NOW + 30 * MINUTE)
    assert answer.deadline.why == "missed: it would never start"


def test_the_lines_a_person_reads():
    assert ask(line=BUSY, deadline=NOW + 17 * MINUTE).lines() == [
        "Queue gpu: 2nd in line (8 CPU of 32 CPU, its capability)",
        "Widest stage: 16 CPU (fit-a, fit-b): fits",
        "Expected start: 2026-03-02T09:15:00Z (in 15m0s)",
        "Expected end: 2026-03-02T09:19:00Z (in 19m0s), critical path prep -> fit-b",
        "Expected cost: 2880 CPU·s",
        "Deadline 2026-03-02T09:17:00Z: at risk: expected to end 2m0s after it; it would go ahead of 1 JobFlow (its "
        "vcjobs created at once), expected end then 2026-03-02T09:14:00Z",
    ]


# --- kubectl jobflow plan --queue: reads only ---------------------------------------------------------------------

FILE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {{name: train}}
spec:
  deadline: "{deadline}"
  flows:
  - name: prep
  - {{name: fit-a, dependsOn: {{targets: [prep]}}}}
  - {{name: fit-b, dependsOn: {{targets: [prep]}}}}
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {{name: prep}}
spec:
  queue: gpu
  minAvailable: 1
  tasks: [{{name: main, replicas: 1, template: {{spec: {{containers: [{{name: main, image: trainer,
                                                                        resources: {{requests: {{cpu: "8"}}}}}}]}}}}}}]
"""


def listed(raw: InLine) -> dict[str, Any]:
    """A JobFlow of the line as the API server lists it."""
    status: dict[str, Any] = {"queue": {"name": "gpu", "state": "Admitted" if raw.started else "Waiting",
                                        "reserved": resources.to_wire(raw.reserved),
                                        **({"requests": resources.to_wire(raw.requests), "expectedSeconds": raw.seconds}
                                           if raw.requests else {})},
                              "state": {"phase": "Running" if raw.started else "Pending"}}
    if raw.expected_end:
        status["expectedCompletion"] = raw.expected_end.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"metadata": {"name": raw.name, "namespace": raw.namespace,
                         "creationTimestamp": raw.created.strftime("%Y-%m-%dT%H:%M:%SZ")},
            "spec": {"flows": [{"name": "a"}]}, "status": status}


class ApiServer(BaseHTTPRequestHandler):
    """Ml's cluster: queue gpu (32 CPU) with BUSY in line, the JobTemplates fit-a and fit-b, prep with statistics;
    every request recorded (method, path), and any that is not a GET answered 405."""

    seen: ClassVar[list[tuple[str, str]]] = []
    OBJECTS: ClassVar[dict[str, Any]] = {
        "/apis/scheduling.volcano.sh/v1beta1/queues/gpu": {"spec": {"capability": {"cpu": "32"}}},
        "/apis/flow.volcano.sh/v1alpha1/jobflows": {"items": [listed(entry) for entry in BUSY]},
        "/apis/batch.volcano.sh/v1alpha1/namespaces/ml/jobs": {"items": []},
        **{f"/apis/flow.volcano.sh/v1alpha1/namespaces/ml/jobtemplates/{name}": {
            **made.to_wire(), "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate"}
           for name, made in TEMPLATES.items()},
    }

    def _seen(self) -> None:
        """Every request, whatever its verb."""
        ApiServer.seen.append((self.command, self.path))

    def do_GET(self) -> None:
        self._seen()
        path = self.path.split("?")[0]
        if path in self.OBJECTS:
            send_json(self, self.OBJECTS[path])
        else:
            name = path.rsplit("/", 1)[-1]
            send_json(self, {"kind": "Status", "code": 404, "reason": "NotFound", "message": f'"{name}" not found',
                             "details": {"name": name}}, status=404)

    def _write(self) -> None:
        self._seen()
        send_json(self, {"kind": "Status", "code": 405, "message": "no writes here"}, status=405)

    do_POST = do_PUT = do_PATCH = do_DELETE = _write

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def cluster(monkeypatch, tmp_path):
    """Serves :class:`ApiServer`; gives a function that writes FILE with a deadline and plans it with ``--queue``."""
    monkeypatch.setattr("kubectl_jobflow.plan.utc_now", lambda: NOW)
    ApiServer.seen = []

    def plan(deadline: datetime, *argv: str) -> tuple[int, str, str]:
        path = tmp_path / "train.yaml"
        path.write_text(FILE.format(deadline=deadline.strftime("%Y-%m-%dT%H:%M:%SZ")))
        out, err = io.StringIO(), io.StringIO()
        code = cli.run(["plan", "-f", str(path), "--queue", "-n", "ml", "--kubeconfig", str(tmp_path / "config"),
                        *argv], out=out, err=err)
        return code, out.getvalue(), err.getvalue()

    with serving(ApiServer, tmp_path / "config"):
        yield plan


@pytest.mark.parametrize(("deadline", "starts"), [
    (NOW + 30 * MINUTE, "  start now: nothing"),
    (NOW + 17 * MINUTE, "  start now:"),
], ids=["on time: it waits for room", "at risk: it goes ahead, as the engine would steer it"])
def test_plan_queue_tells_the_place_times_cost_and_deadline_and_writes_nothing(cluster, deadline, starts):
    code, out, err = cluster(deadline)
    assert (code, err) == (0, "")
    assert out.splitlines()[-6:] == [f"  {line}" for line in ask(line=BUSY, deadline=deadline).lines()]
    assert starts in out.splitlines()  # the plan is the engine's, with the queue
    assert {method for method, _ in ApiServer.seen} == {"GET"}
    assert ("GET", "/apis/scheduling.volcano.sh/v1beta1/queues/gpu") in ApiServer.seen


def test_plan_queue_as_json_keeps_the_plans_keys_and_adds_the_queue(cluster):
    code, out, _ = cluster(NOW + 17 * MINUTE, "-o", "json")
    result = json.loads(out)
    assert {"phase", "start", "wait", "expectedCompletion", "jobs"} <= set(result)
    queue = result["queue"]
    assert (queue["name"], queue["position"], queue["expectedStart"], queue["expectedCompletion"]) == (
        "gpu", 2, "2026-03-02T09:15:00Z", "2026-03-02T09:19:00Z")
    assert queue["expectedCost"] == {"cpuSeconds": 2880.0, "memoryGiBSeconds": 0.0, "gpuSeconds": 0.0}
    assert queue["deadline"] | {"message": None} == {
        "at": "2026-03-02T09:17:00Z", "state": "AtRisk", "message": None, "goesAheadOf": 1, "steeredPosition": 0,
        "steeredCompletion": "2026-03-02T09:14:00Z"}
    assert {method for method, _ in ApiServer.seen} == {"GET"}


def test_plan_queue_with_local_is_refused_saying_what_to_do(tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text(FILE.format(deadline="2026-03-02T09:30:00Z"))
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["plan", "-f", str(path), "--queue", "--local"], out=out, err=err) == 2
    assert err.getvalue() == ("Failed to plan: --queue reads the queue, its line and the JobTemplates' statistics "
                              "from the cluster, which --local does not ask: drop one of them\n")


class RestrictedApiServer(ApiServer):
    """A Queue without capability, two nodes (one cordoned), and a user who may list JobFlows of ml only."""

    OBJECTS: ClassVar[dict[str, Any]] = {
        "/apis/scheduling.volcano.sh/v1beta1/queues/gpu": {"spec": {}},
        "/api/v1/nodes": {"items": [
            {"status": {"allocatable": {"cpu": "16"}, "conditions": [{"type": "Ready", "status": "True"}]}},
            {"spec": {"unschedulable": True},
             "status": {"allocatable": {"cpu": "64"}, "conditions": [{"type": "Ready", "status": "True"}]}}]},
        "/apis/flow.volcano.sh/v1alpha1/namespaces/ml/jobflows": {"items": [listed(BUSY[0])]},
    }

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/apis/flow.volcano.sh/v1alpha1/jobflows":
            self._seen()
            send_json(self, {"kind": "Status", "code": 403, "reason": "Forbidden", "message": (
                'jobflows.flow.volcano.sh is forbidden: User "ana" cannot list resource "jobflows" at the cluster '
                "scope")}, status=403)
            return
        super().do_GET()


def test_queue_view_counts_ready_nodes_and_says_when_only_its_namespace_could_be_listed(tmp_path):
    ApiServer.seen = []
    with serving(RestrictedApiServer, tmp_path / "config"):
        connection = Cluster(Target(kubeconfig=str(tmp_path / "config")))
        try:
            view, notes = queue_view(connection, "gpu", namespace="ml")
        finally:
            connection.close()
    assert (view.capacity, view.capacity_source) == ({"cpu": 16000}, "nodes' allocatable")
    assert [entry.name for entry in view.jobflows] == ["busy"]
    [note] = notes
    assert note.startswith("only the JobFlows of namespace ml are counted in the line: listing every namespace's was "
                           'refused (jobflows.flow.volcano.sh is forbidden: User "ana" cannot list')
    assert {method for method, _ in ApiServer.seen} == {"GET"}
