"""Test helpers: JobFlows written as YAML, vcjobs in a chosen phase, and a tiny cluster that carries out plans.

``Cluster`` does what the shell will do with a plan (create the vcjobs, delete the ones asked, write the status
back), and lets a test move a vcjob to a new phase as Volcano would. Times come from a fake clock that advances
one minute per action, so every test is deterministic.
"""

from datetime import UTC, datetime, timedelta
from typing import Any

import yaml

from jobflow_core import Create, Plan, plan
from jobflow_core.models import JobFlow, JobTemplate, VcJob, VcJobPhase
from jobflow_core.vocabulary.naming import job_name, owner_reference
from seeds import diamond_yaml

UID = "0d4f6f5e-7b7c-4c55-9a5e-2f1f5c0e0001"
T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

TEMPLATE_SPEC = """
minAvailable: 1
queue: default
tasks:
  - name: nginx
    replicas: 1
    template:
      spec:
        restartPolicy: OnFailure
        containers:
          - name: nginx
            image: nginx:1.27
            command: ["sh", "-c", "sleep 10s"]
"""

_JOB_SPEC = yaml.safe_load(TEMPLATE_SPEC)


def jobflow(text: str, *, status: dict[str, Any] | None = None) -> JobFlow:
    """A JobFlow from the YAML a user would write; name ``test``, namespace ``default`` and a UID if not given."""
    data = yaml.safe_load(text)
    data.setdefault("apiVersion", "flow.volcano.sh/v1alpha1")
    data.setdefault("kind", "JobFlow")
    metadata = data.setdefault("metadata", {})
    metadata.setdefault("name", "test")
    metadata.setdefault("namespace", "default")
    metadata.setdefault("uid", UID)
    if status is not None:
        data["status"] = status
    return JobFlow.model_validate(data)


def template(name: str, *, namespace: str = "default", spec: str = TEMPLATE_SPEC) -> JobTemplate:
    return JobTemplate.model_validate(
        {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": yaml.safe_load(spec),
        }
    )


def templates_for(flow: JobFlow) -> dict[str, JobTemplate]:
    """A JobTemplate for every flow of ``flow``."""
    return {f.name: template(f.name, namespace=flow.namespace) for f in flow.spec.flows or ()}


def vcjob(
    owner: JobFlow,
    flow: str,
    phase: VcJobPhase | None = None,
    *,
    created: datetime = T0,
    changed: datetime | None = None,
    retry_count: int | None = None,
    conditions: list[tuple[VcJobPhase, datetime]] | None = None,
    owner_uid: str | None = None,
) -> VcJob:
    """The vcjob of ``flow`` as the API server would return it, controlled by ``owner`` (or by ``owner_uid``)."""
    reference = owner_reference(owner) | ({"uid": owner_uid} if owner_uid else {})
    status: dict[str, Any] = {}
    if phase is not None:
        status["state"] = {"phase": phase, "lastTransitionTime": changed or created}
    if retry_count is not None:
        status["retryCount"] = retry_count
    if conditions is not None:
        status["conditions"] = [{"status": p, "lastTransitionTime": t} for p, t in conditions]
    return VcJob.model_validate(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {
                "name": job_name(jobflow=owner.name, flow=flow),
                "namespace": owner.namespace,
                "uid": f"uid-{flow}",
                "creationTimestamp": created,
                "ownerReferences": [reference],
            },
            "spec": _JOB_SPEC,
            "status": status or None,
        }
    )


class Cluster:
    """A fake API server plus the shell: it holds one JobFlow and its vcjobs, and carries out plans."""

    def __init__(self, flow: JobFlow, *, templates: dict[str, JobTemplate] | None = None,
                 notify: bool = False) -> None:
        self.flow = flow
        self.notify = notify
        self.templates = templates_for(flow) if templates is None else templates
        self.jobs: dict[str, VcJob] = {}
        self.now = T0

    def tick(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now

    def step(self) -> Plan:
        """Plan, then create, delete and write the status as the shell would."""
        result = plan(self.flow, templates=self.templates, jobs=list(self.jobs.values()), now=self.now,
                      notify=self.notify)
        for create in result.creates:
            self.add_job(create)
        for name in result.deletes:
            del self.jobs[name]
        self.flow = self.flow.model_copy(update={"status": result.status})
        return result

    def add_job(self, create: Create) -> None:
        """The API server stores the vcjob a plan creates, one tick later."""
        created = self.tick()
        manifest, name = create.manifest, create.job_name
        metadata = manifest["metadata"] | {"uid": f"uid-{name}", "creationTimestamp": created}
        self.jobs[name] = VcJob.model_validate(manifest | {"metadata": metadata})

    def move(self, flow: str, phase: VcJobPhase) -> None:
        """Volcano moves the (first) vcjob of ``flow`` to ``phase``: new state and one more condition."""
        self.move_job(job_name(jobflow=self.flow.name, flow=flow), phase)

    def move_job(self, name: str, phase: VcJobPhase) -> None:
        """Volcano moves vcjob ``name`` to ``phase``: new state and one more condition."""
        job = self.jobs[name].to_wire()
        changed = self.tick()
        status = job.setdefault("status", {})
        status["state"] = {"phase": phase, "lastTransitionTime": changed}
        status.setdefault("conditions", []).append({"status": phase, "lastTransitionTime": changed})
        self.jobs[name] = VcJob.model_validate(job)

    def delete(self, flow: str) -> None:
        """Someone (a user, the TTL controller) deletes the vcjob of ``flow``."""
        del self.jobs[job_name(jobflow=self.flow.name, flow=flow)]

    @property
    def phase(self) -> str | None:
        state = self.flow.status.state if self.flow.status else None
        return state.phase if state else None

    def job_names(self) -> list[str]:
        return sorted(self.jobs)


DIAMOND = diamond_yaml(retain="delete")
"""The seed diamond (``seeds.py``) named ``test``, its jobs deleted once the flow succeeds."""
