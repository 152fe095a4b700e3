"""``dependsOn.probe``: start a flow when its targets' tasks are in a phase or their servers answer.

Upstream declares these probes and never evaluates them. Here, a flow with a ``probe`` starts when, for every
target, every listed probe passes; the target need not be Completed (a serving job waits for a server to answer,
a TensorFlow flow for its workers to succeed while ``ps`` may end badly).

- ``taskStatusList[{taskName, phase}]`` is decided here, purely: it passes when the target vcjob's
  ``status.taskStatusCount[taskName].phase[phase]`` reaches the task's ``minAvailable`` (else its ``replicas``).
  Volcano drops the counts once a vcjob is Completed, so a Completed target passes a ``Succeeded`` probe.
- ``httpGetList`` and ``tcpSocketList`` need the network, so the shell performs them: :func:`network_checks`
  says which (one :class:`NetworkCheck` per probe and running target), the shell answers each with a
  :class:`CheckResult`, and :func:`evaluate` decides. A check the shell has not answered counts as not passed.

A probe naming a task its target does not have can never pass: that is reported as a blocker, not a wait.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from jobflow_core.models import Flow, Probe, VcJob, VcJobPhase

DEFAULT_RECHECK_SECONDS = 10
"""How often a probe that has not passed yet is looked at again (the status tells the event source)."""


class CheckKind(StrEnum):
    HTTP_GET = "httpGet"
    TCP_SOCKET = "tcpSocket"


@dataclass(frozen=True)
class NetworkCheck:
    """One network probe of one target: ``GET http://<pod IP>:<port><path>`` or a TCP connect to a pod of the task."""

    kind: CheckKind
    job_name: str
    namespace: str
    task_name: str
    port: int
    path: str = "/"
    header: tuple[str, str] | None = None

    def describe(self) -> str:
        where = f"task {self.task_name!r} of vcjob {self.job_name!r}"
        if self.kind is CheckKind.HTTP_GET:
            return f"HTTP GET :{self.port}{self.path} on {where}"
        return f"TCP :{self.port} on {where}"


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    detail: str
    """What happened, e.g. ``HTTP 200 from 127.1.0.4`` or ``connection refused``."""


@dataclass(frozen=True)
class ProbeVerdict:
    """Whether a flow's probe passes for all its targets, and if not, what it waits for or what is wrong."""

    passed: bool
    waiting: tuple[str, ...] = ()
    """Probes that have not passed yet, in words."""
    errors: tuple[str, ...] = ()
    """Probes that can never pass as written (unknown task names), in words with what to do."""


def _task_names(job: VcJob) -> list[str]:
    return [task.name for task in (job.spec.tasks if job.spec else None) or () if task.name]


def _required(job: VcJob, task: str) -> int:
    for spec in (job.spec.tasks if job.spec else None) or ():
        if spec.name == task:
            return spec.min_available if spec.min_available is not None else (spec.replicas or 0)
    return 0


def _unknown_task(job: VcJob, task: str | None, probe: str) -> str | None:
    if task in _task_names(job):
        return None
    known = ", ".join(repr(name) for name in _task_names(job)) or "none"
    return (f"{probe} probe names task {task!r}, but vcjob {job.name!r} has tasks {known}: "
            "fix taskName in dependsOn.probe")


def _task_status_waits(probe: Probe, job: VcJob) -> tuple[list[str], list[str]]:
    waiting, errors = [], []
    for item in probe.task_status_list or ():
        error = _unknown_task(job, item.task_name, "taskStatus")
        if error:
            errors.append(error)
            continue
        if job.phase is VcJobPhase.COMPLETED and item.phase == "Succeeded":
            continue
        counts = (job.status.task_status_count or {}) if job.status else {}
        task_state = counts.get(item.task_name)
        have = ((task_state.phase if task_state else None) or {}).get(item.phase or "", 0)
        need = max(_required(job, item.task_name), 1)
        if have < need:
            waiting.append(f"task {item.task_name!r} of vcjob {job.name!r}: {have}/{need} pods {item.phase}")
    return waiting, errors


def network_checks(probe: Probe, job: VcJob) -> list[NetworkCheck]:
    """The HTTP and TCP checks ``probe`` needs against target ``job`` (tasks it does not have are left out)."""
    tasks = set(_task_names(job))
    checks = [
        NetworkCheck(CheckKind.HTTP_GET, job.name, job.namespace, item.task_name, item.port, item.path or "/",
                     (item.http_header.name, item.http_header.value) if item.http_header else None)
        for item in probe.http_get_list or () if item.task_name in tasks and item.port
    ]
    checks += [NetworkCheck(CheckKind.TCP_SOCKET, job.name, job.namespace, item.task_name, item.port)
               for item in probe.tcp_socket_list or () if item.task_name in tasks and item.port]
    return checks


def evaluate(flow: Flow, *, targets: Mapping[str, VcJob | None],
             results: Mapping[NetworkCheck, CheckResult]) -> ProbeVerdict:
    """Whether ``flow``'s probe passes against every target (target flow name -> its live vcjob, if any)."""
    probe = flow.depends_on.probe if flow.depends_on else None
    assert probe is not None, "evaluate() is for flows with a probe"
    waiting: list[str] = []
    errors: list[str] = []
    for target, job in targets.items():
        if job is None:
            waiting.append(f"flow {target!r} has no running vcjob yet")
            continue
        task_waits, task_errors = _task_status_waits(probe, job)
        waiting += task_waits
        errors += task_errors
        for kind, items in (("httpGet", probe.http_get_list), ("tcpSocket", probe.tcp_socket_list)):
            errors += [e for item in items or () if (e := _unknown_task(job, item.task_name, kind))]
        for check in network_checks(probe, job):
            result = results.get(check)
            if result is None or not result.passed:
                waiting.append(f"{check.describe()}: {result.detail if result else 'not checked yet'}")
    return ProbeVerdict(passed=not waiting and not errors, waiting=tuple(waiting), errors=tuple(errors))
