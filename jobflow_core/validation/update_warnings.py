"""What an update cannot change: warnings for spec changes that vcjobs created earlier will not see.

A vcjob is made once, from its JobTemplate's spec and its flow's ``patch`` as they were at that moment, and is
never changed afterwards (neither upstream nor this engine patches or re-creates a vcjob because its JobFlow or
JobTemplate changed). Such an update is still allowed, because it applies to the vcjobs created from then on,
but the validating webhook says so in a warning, which kubectl prints as ``Warning: ...``:

* a JobFlow flow whose vcjob exists and whose ``patch``, ``dependsOn`` or ``jobTemplate`` changes (the vcjob keeps
  its spec, and it has already started, whatever it now depends on);
* a JobFlow flow whose vcjob exists and that is removed from the spec (its vcjob stays, owned by the JobFlow);
* a JobTemplate whose spec changes while vcjobs made from it exist.

Which vcjobs exist is read from the *old* object's status, which the AdmissionReview carries: a JobFlow's
``jobStatusList``, ``conditions`` and phase lists name every vcjob it created (kept after the vcjob is gone, which
is right here: a finished vcjob is not run again either), a JobTemplate's ``jobDependsOnList`` the vcjobs made
from it. The API server may shorten warnings longer than 256 characters, so each one names a few objects only.
"""

from collections.abc import Sequence

from jobflow_core.models import Flow, JobFlow, JobTemplate
from jobflow_core.vocabulary.naming import job_name

MAX_NAMED = 5
"""Flows (or vcjobs) named one by one; the rest are counted."""

AFTERWARDS = "the new spec applies to vcjobs created from now on"


def jobflow_update_warnings(old: JobFlow, new: JobFlow) -> list[str]:
    """Warnings for the flows of ``old`` whose vcjob exists and which ``new`` changes or removes."""
    created = created_jobs(old)
    if not created:
        return []
    new_flows = _first_by_name(new.spec.flows or [])
    changed: list[tuple[str, str]] = []
    removed: list[tuple[str, str]] = []
    for name, flow in _first_by_name(old.spec.flows or []).items():
        vcjob = job_name(jobflow=old.name, flow=name)
        if vcjob not in created:
            continue
        if name not in new_flows:
            removed.append((f'"{name}"', vcjob))
            continue
        now = new_flows[name]
        pairs = (("patch", flow.patch, now.patch), ("dependsOn", flow.depends_on, now.depends_on),
                 ("jobTemplate", flow.job_template, now.job_template))
        fields = [field for field, before, after in pairs if before != after]
        if fields:
            changed.append((f'"{name}" ({" and ".join(fields)})', vcjob))
    warnings = []
    if changed:
        unchanged = f"will not change ({AFTERWARDS})"
        warnings.append(_about(changed, done="changed", one=unchanged, many=unchanged))
    if removed:
        warnings.append(
            _about(
                removed,
                done="removed from spec.flows",
                one="stays (the JobFlow still owns it; delete it if it is no longer needed)",
                many="stay (the JobFlow still owns them; delete them if they are no longer needed)",
            )
        )
    return warnings


def _about(flows: Sequence[tuple[str, str]], *, done: str, one: str, many: str) -> str:
    """A sentence about ``flows`` (pairs of a flow as shown and its vcjob's name) and what happens to their vcjobs."""
    if len(flows) == 1:
        [(flow, vcjob)] = flows
        return f'flow {flow} {done}, but its vcjob "{vcjob}" already exists and {one}'
    return f"flows {_listed([flow for flow, _ in flows])} {done}, but their vcjobs already exist and {many}"


def jobtemplate_update_warnings(old: JobTemplate, new: JobTemplate) -> list[str]:
    """A warning when ``new`` changes the spec of a JobTemplate that vcjobs were made from."""
    made = (old.status.job_depends_on_list if old.status else None) or []
    if not made or old.spec.to_wire() == new.spec.to_wire():
        return []
    vcjobs = _listed([f'"{name}"' for name in made])
    return [f"vcjobs {vcjobs} were made from this JobTemplate and will not change ({AFTERWARDS})"]


def created_jobs(jobflow: JobFlow) -> set[str]:
    """The names of the vcjobs ``jobflow``'s status says it created."""
    status = jobflow.status
    if status is None:
        return set()
    names = {record.name for record in status.job_status_list or () if record.name}
    names.update(status.conditions or {})
    for listed in (
        status.pending_jobs,
        status.running_jobs,
        status.completed_jobs,
        status.failed_jobs,
        status.terminated_jobs,
        status.un_know_jobs,
    ):
        names.update(listed or ())
    return names


def _first_by_name(flows: Sequence[Flow]) -> dict[str, Flow]:
    first: dict[str, Flow] = {}
    for flow in flows:
        first.setdefault(flow.name, flow)
    return first


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(items[:MAX_NAMED])
    return f"{shown} and {len(items) - MAX_NAMED} more" if len(items) > MAX_NAMED else shown
