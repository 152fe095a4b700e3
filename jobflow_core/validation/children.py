"""What would be wrong with a child JobFlow (:mod:`jobflow_core.flows.children`) before it is created.

The planner asks this of a child flow about to start, with its JobFlowTemplate read: parameters the template does
not declare, a nesting deeper than :data:`~jobflow_core.flows.children.MAX_DEPTH`, and every check of
:func:`jobflow_core.validation.jobflows.validate` on the child as it would be created (its names under the
parent's, its flows, its own child flows). One that fails blocks the flow (``InvalidTemplate``) with the message.
"""

from typing import TYPE_CHECKING, Any

from jobflow_core.flows.children import MAX_DEPTH, depth_of, parameters_of
from jobflow_core.flows.parameters import values
from jobflow_core.models import Flow, JobFlow
from jobflow_core.validation.jobflows import validate
from jobflow_core.vocabulary.spec_errors import SpecError

if TYPE_CHECKING:
    from jobflow_core.models import JobFlowTemplate


def child_errors(parent: JobFlow, *, flow: Flow, template: "JobFlowTemplate",
                 manifest: dict[str, Any]) -> list[SpecError]:
    """The problems of the child ``manifest`` that ``flow`` of ``parent`` would create from ``template``."""
    found = []
    _, unknown = parameters_of(flow, template, params=values(parent), item=None, targets={})
    if unknown:
        declared = ", ".join(p.name for p in template.spec.job_flow.spec.parameters or ()) or "none"
        found.append(SpecError(code="UnknownParameter",
                               message=f"jobFlow.parameters sets {', '.join(unknown)}, which JobFlowTemplate "
                               f'"{template.name}" does not declare (it declares: {declared})',
                               hint="set only the template's parameters, or declare them in its "
                               "spec.jobFlow.spec.parameters"))
    if depth_of(parent) + 1 > MAX_DEPTH:
        found.append(SpecError(code="TooDeep", message=f"the child would nest {depth_of(parent) + 1} levels deep, more "
                               f"than {MAX_DEPTH}", hint="does the JobFlowTemplate include itself? flatten the "
                               "pipeline, or make a deep part a JobFlow of its own"))
    found += validate(JobFlow.model_validate(manifest))
    return found
