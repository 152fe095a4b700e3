"""Who is who in the Kubernetes API: the three object types the engine knows, and the keys it stamps on them.

Every component names these objects on the wire: the handler reads and writes them, the event source watches them
and puts their kind and apiVersion in each CloudEvent, the command line lists them, the demo and the tests create
them. They all take the names from here, so that a group, a plural or a label key is spelled in one place.

========================  ================  ===========  ============  ===============
object                    group             version      kind          plural
========================  ================  ===========  ============  ===============
:data:`JOBFLOW`           flow.volcano.sh   v1alpha1     JobFlow       jobflows
:data:`JOBTEMPLATE`       flow.volcano.sh   v1alpha1     JobTemplate   jobtemplates
:data:`VCJOB`             batch.volcano.sh  v1alpha1     Job           jobs
:data:`JOBFLOWTEMPLATE`   flow.volcano.sh   v1alpha1     JobFlowTemplate  jobflowtemplates (ours)
========================  ================  ===========  ============  ===============

The label and annotation keys are upstream Volcano's (its tools select on them), except
:data:`RECORD_FINALIZER`, which is ours. How their values are built lives in :mod:`jobflow_core.vocabulary.naming`.
"""

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class ApiType:
    """One type of object in the Kubernetes API: its group, version, kind and (URL) plural."""

    group: str
    version: str
    kind: str
    plural: str

    @property
    def api_version(self) -> str:
        """``<group>/<version>``, as in an object's ``apiVersion``."""
        return f"{self.group}/{self.version}"

    def path(self, namespace: str, name: str) -> str:
        """The object's URL path, e.g. ``/apis/flow.volcano.sh/v1alpha1/namespaces/a/jobflows/x``."""
        return f"/apis/{self.api_version}/namespaces/{namespace}/{self.plural}/{name}"


JOBFLOW: Final = ApiType("flow.volcano.sh", "v1alpha1", "JobFlow", "jobflows")
JOBTEMPLATE: Final = ApiType("flow.volcano.sh", "v1alpha1", "JobTemplate", "jobtemplates")
VCJOB: Final = ApiType("batch.volcano.sh", "v1alpha1", "Job", "jobs")
JOBFLOWTEMPLATE: Final = ApiType("flow.volcano.sh", "v1alpha1", "JobFlowTemplate", "jobflowtemplates")
"""Ours: a JobFlow that starts itself, on a schedule, an event or by hand (:mod:`jobflow_core.schedules.firing`)."""
COMMAND: Final = ApiType("bus.volcano.sh", "v1alpha1", "Command", "commands")
QUEUE: Final = ApiType("scheduling.volcano.sh", "v1beta1", "Queue", "queues")
"""Volcano's queue (cluster-scoped): the engine reads its ``capability`` (:mod:`jobflow_core.queueing.line`)."""
"""Volcano's: an action for its job controller to carry out on a vcjob (we send ``AbortJob``)."""

API_TYPES: Final = (JOBFLOW, JOBTEMPLATE, VCJOB, JOBFLOWTEMPLATE)
"""The types the engine watches and reconciles."""


def api_type_of(api_version: object, kind: object) -> ApiType | None:
    """The type an object (or an event about one) names by ``apiVersion`` and ``kind``; None if not one of ours."""
    return next((t for t in API_TYPES if t.api_version == api_version and t.kind == kind), None)


CREATED_BY_JOBFLOW: Final = "volcano.sh/createdByJobFlow"
"""Label and annotation of a vcjob: ``<namespace>.<jobflow>`` of the JobFlow that created it (upstream's)."""
CREATED_BY_JOBTEMPLATE: Final = "volcano.sh/createdByJobTemplate"
"""Label and annotation of a vcjob: ``<namespace>.<flow>`` of the JobTemplate it was made from (upstream's)."""
ATTEMPT: Final = "flow.volcano.sh/attempt"
"""Ours, a label and annotation of a vcjob whose flow has ``retry``: which attempt of the flow it is (``"1"``...)."""
ITEM_INDEX: Final = "flow.volcano.sh/item-index"
"""Ours, a label and annotation of an item's vcjob (and its pods) in a ``forEach`` flow: the item's index."""
ITERATION: Final = "flow.volcano.sh/iteration"
"""Ours, a label and annotation of an iteration's vcjob (and its pods) in a ``repeat`` flow: its index, from 0."""
MEMO_KEY: Final = "flow.volcano.sh/memo-key"
"""Annotation of a memoized flow's vcjob: the cache key its run is stored under once it Completed."""
MEMO_CACHE: Final = "jobflow-memo"
"""The ConfigMap of each namespace that holds its memoized runs (:mod:`jobflow_core.flows.memo`)."""
RERUN: Final = "flow.volcano.sh/rerun"
"""Ours, an annotation of a JobFlow: a new value asks to run its failed flows again (``kubectl jobflow retry``)."""
RERUN_FLOWS: Final = "flow.volcano.sh/rerun-flows"
"""Ours, an annotation of a JobFlow: which flows a rerun runs again (comma-separated; default: the failed ones)."""
GANG_REQUESTS: Final = "flow.volcano.sh/gang-requests"
"""Ours, an annotation on each vcjob: what its gang requests at once (JSON ``{resource: quantity}``), which the
JobFlow reserves in its queue while the vcjob runs and charges for once it ended."""
RECORD_FINALIZER: Final = "flow.volcano.sh/keep-record"
"""Ours, additive: holds a deleted vcjob until its final phase is in the JobFlow's status (see ``jobs``)."""

JOBFLOW_EXTENSION: Final = "jobflow"
"""Ours, a CloudEvent extension our event source sets on a vcjob's event: the JobFlow that controls the vcjob (its
ownerReference), so the handler reads that JobFlow instead of searching the namespace. A hint like the rest of the
event; ApiServerSource does not set it, and the handler then finds the JobFlow itself."""

POD_JOB_NAME: Final = "volcano.sh/job-name"
"""Label Volcano puts on a vcjob's pods: the vcjob's name."""
POD_TASK_SPEC: Final = "volcano.sh/task-spec"
"""Label Volcano puts on a vcjob's pods: the name of the task the pod belongs to."""

RUN_OF: Final = "flow.volcano.sh/jobflow-template"
"""Ours, a label of a JobFlow a JobFlowTemplate started (a run): the template's name
(:mod:`jobflow_core.schedules.runs`)."""
RUN_CAUSE: Final = "flow.volcano.sh/run-cause"
"""Ours, an annotation of a run: what started it, ``schedule``, ``manual`` or ``event``."""
SCHEDULED_TIME: Final = "flow.volcano.sh/scheduled-time"
"""Ours, an annotation of a scheduled run: the scheduled time it was started for (RFC 3339, UTC)."""
RUN_TRIGGER: Final = "flow.volcano.sh/trigger"
"""Ours, an annotation of an event's run: the name of the trigger that matched."""
EVENT_ID: Final = "flow.volcano.sh/event-id"
"""Ours, an annotation of an event's run: the CloudEvent's ``id``."""
EVENT_SOURCE: Final = "flow.volcano.sh/event-source"
"""Ours, an annotation of an event's run: the CloudEvent's ``source``."""
APPROVAL_PREFIX: Final = "approval.flow.volcano.sh/"
"""Ours, annotations of a JobFlow: ``approval.flow.volcano.sh/<flow>`` is a person's answer to approval gate
``<flow>`` (JSON, :func:`jobflow_core.flows.gates.answer_text`), written by ``kubectl jobflow approve|reject`` and
the dashboard; the admission webhook checks that its ``user`` is the one who wrote it."""
APPROVAL_SIGNATURE: Final = "jobflowsignature"
"""Ours, a CloudEvent extension: an approval event signed with the engine's key
(:func:`jobflow_core.flows.gates.signature`), accepted by any gate whatever its ``events`` say."""

PARENT: Final = "flow.volcano.sh/parent"
"""Ours, a label of a child JobFlow (:mod:`jobflow_core.flows.children`): its parent JobFlow's name, so
``kubectl get jf -l flow.volcano.sh/parent=NAME`` lists a JobFlow's children (ownership is its ownerReference)."""
PARENT_FLOW: Final = "flow.volcano.sh/parent-flow"
"""Ours, a label of a child JobFlow: the parent's flow it runs for."""
CHILD_TEMPLATE: Final = "flow.volcano.sh/child-template"
"""Ours, a label of a child JobFlow: the JobFlowTemplate it was made from (not :data:`RUN_OF`: a child is no run of
its template, whose history limits and concurrency policy leave it alone)."""
DEPTH: Final = "flow.volcano.sh/depth"
"""Ours, a label of a child JobFlow: how deep it nests (``"1"`` for a child of a JobFlow that has no parent)."""
PARENT_STARTED: Final = "flow.volcano.sh/parent-started"
"""Ours, an annotation of a child JobFlow: ``"true"`` when its parent had started (created a vcjob or a started
child) before it: the child then counts as started in its queue's line (:mod:`jobflow_core.queueing.line`)."""
SUSPENDED_BY_PARENT: Final = "flow.volcano.sh/suspended-by-parent"
"""Ours, an annotation of a child JobFlow its parent suspended (with ``spec.suspend``): the parent's resume takes
back only what it did (:mod:`jobflow_core.flows.children`)."""
