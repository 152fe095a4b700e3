"""A cold start imports only what reconciling an event needs (docs/knative.md, "Cold start and memory").

Scaled to zero, the handler pays its imports on every wake, before the first event is answered. What only some
requests need is imported when one first needs it: the validating webhook's core, the CloudEvents envelope (for
``K_CE_OVERRIDES``, only with a ``K_SINK``), CEL (only for a ``when`` condition), the thread pool of HTTP/TCP probes,
and what only JobFlowTemplates need (their runs, schedules, cron expressions, triggers and models). Each check runs
in a fresh interpreter, as gunicorn's worker starts.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
LAZY = ("jobflow_core.validation.review", "jobflow_core.validation.update_warnings", "apiclient.cloudevents", "celpy",
        "concurrent.futures", "handlers.jobflowtemplates", "jobflow_core.schedules.runs",
        "jobflow_core.schedules.firing", "jobflow_core.schedules.cron", "jobflow_core.schedules.triggers",
        "jobflow_core.models.jobflowtemplate")


def loaded_after(code: str, env: dict[str, str] | None = None) -> set[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO,
                         env={"PATH": "/usr/bin:/bin", **(env or {})})
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_creating_the_app_imports_the_planner_but_nothing_only_some_requests_need():
    loaded = loaded_after("from handlers import create_app; create_app()")
    assert {"jobflow_core.planning.planner", "handlers.jobflows", "handlers.queues", "prometheus_client"} <= loaded
    assert loaded.isdisjoint(LAZY), sorted(loaded & set(LAZY))


@pytest.mark.parametrize("code, needed", [
    ("from handlers import create_app\n"
     "create_app().test_client().post('/validate/jobflows', json={'apiVersion': 'admission.k8s.io/v1', "
     "'kind': 'AdmissionReview', 'request': {'uid': '1', 'operation': 'CREATE', 'object': {}}})",
     "jobflow_core.validation.review"),
    ("from handlers import create_app; create_app()", "apiclient.cloudevents"),
    ("from handlers import create_app\n"
     "create_app().test_client().post('/trigger', data=b'{}', headers={'ce-specversion': '1.0', 'ce-id': '1', "
     "'ce-source': 'test', 'ce-type': 'build.finished', 'content-type': 'application/json'})",
     "jobflow_core.schedules.triggers"),
    ("from jobflow_core.models import JobFlowTemplate", "jobflow_core.models.jobflowtemplate"),
])
def test_what_a_request_or_a_setting_needs_is_imported_when_it_first_does(code, needed):
    sink = {"K_SINK": "http://127.0.0.1:1/", "K_CE_OVERRIDES": '{"extensions": {"team": "a"}}'}
    assert needed in loaded_after(code, env=sink if needed == "apiclient.cloudevents" else None)
