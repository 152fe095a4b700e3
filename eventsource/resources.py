"""The three kinds of object the event source watches, and how to name them on the wire."""

from __future__ import annotations

from dataclasses import dataclass

CREATED_BY_JOBFLOW = "volcano.sh/createdByJobFlow"


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    label_selector: str | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def subject(self, namespace: str, name: str) -> str:
        """ApiServerSource's pseudo self-link, e.g. ``/apis/flow.volcano.sh/v1alpha1/namespaces/a/jobflows/x``."""
        return f"/apis/{self.api_version}/namespaces/{namespace}/{self.plural}/{name}"


JOBFLOWS = Resource("flow.volcano.sh", "v1alpha1", "jobflows", "JobFlow")
JOBTEMPLATES = Resource("flow.volcano.sh", "v1alpha1", "jobtemplates", "JobTemplate")
# Only the vcjobs a JobFlow created: a cluster's other vcjobs are none of our business.
VCJOBS = Resource("batch.volcano.sh", "v1alpha1", "jobs", "Job", label_selector=CREATED_BY_JOBFLOW)

WATCHED = (JOBFLOWS, JOBTEMPLATES, VCJOBS)
