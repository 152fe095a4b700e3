"""A JobTemplate's status: the vcjobs made from it, across every JobFlow that uses it.

Upstream's list only ever grew (it had no delete handler) and was never written when it became empty. Here it
is recomputed from the vcjobs that exist now, so it shrinks when they go; a vcjob being deleted no longer counts.
The rest of the status (our run statistics, :mod:`jobflow_core.insight.template_stats`) is kept as it is.
"""

from collections.abc import Iterable

from jobflow_core.models import JobTemplate, JobTemplateStatus, VcJob
from jobflow_core.vocabulary.naming import template_of


def template_status(template: JobTemplate, /, *, jobs: Iterable[VcJob],
                    known: Iterable[str] | None = None) -> JobTemplateStatus:
    """The status ``template`` should have, given the vcjobs of its namespace (any superset will do).

    ``known``: the names the template's status listed when it was read, before ``jobs`` were listed. Only those
    may be taken off: a name added since may be a vcjob created after the LIST, which the reconcile that created it
    recorded (replacing the list with the LIST's view lost it, and nothing wrote it back until a resync). None: the
    listing is the truth (``jobs`` were listed after every write to the template).
    """
    listed = {
        job.name
        for job in jobs
        if job.namespace == template.namespace
        and template_of(job) == template.name
        and job.metadata.deletion_timestamp is None
    }
    if known is None:
        names = sorted(listed)
    else:
        now = set((template.status.job_depends_on_list if template.status else None) or ())
        names = sorted(listed | (now - set(known)))
    return (template.status or JobTemplateStatus()).model_copy(update={"job_depends_on_list": names})


def template_status_changed(template: JobTemplate, new: JobTemplateStatus) -> bool:
    old = (template.status.job_depends_on_list if template.status else None) or []
    return old != (new.job_depends_on_list or [])


def template_status_with(template: JobTemplate, /, *, added: Iterable[str] = (),
                         removed: Iterable[str] = ()) -> JobTemplateStatus:
    """The status of ``template`` with vcjobs ``added`` to and ``removed`` from its list, the rest kept."""
    old = set((template.status.job_depends_on_list if template.status else None) or ())
    names = sorted((old | set(added)) - set(removed))
    return (template.status or JobTemplateStatus()).model_copy(update={"job_depends_on_list": names})
