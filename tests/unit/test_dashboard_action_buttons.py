"""The dashboard's action buttons, as a person uses them: Run now sends only the parameters the person set (a field
left as drawn takes the template's default; one without a default, left empty, is not sent as "", so the run is
refused as ``kubectl jobflow run`` without ``-p`` refuses it), and every action button (Run now, Suspend, Resume;
Retry, Stop, Terminate, Approve, Reject) is disabled while its request is in flight, so a double click sends one
request, and a request that fails says so instead of leaving "…".

The pages' own scripts run in node against a stand-in of the DOM (tests/unit/page_in_node.js); the browser tier is
tests/cluster/test_dashboard_controls_in_browser.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "dashboard" / "static"
HARNESS = Path(__file__).resolve().parent / "page_in_node.js"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="needs node (Debian's nodejs) to run the pages' scripts")

TEMPLATE = {"page": "jobflowtemplate", "namespace": "ml", "name": "nightly", "token": "t0k", "actions": True}
JOBFLOW = {"page": "jobflow", "namespace": "ml", "name": "train", "token": "t0k", "actions": True, "logs": False}
NIGHTLY = {"name": "nightly", "namespace": "ml", "suspended": False, "schedule": "0 2 * * *", "triggers": "none",
           "runs": [], "parameters": [{"name": "lr", "value": "0.01", "description": "learning rate"},
                                      {"name": "date", "value": None, "description": None},
                                      {"name": "epochs", "value": "10", "description": None}]}


RUN = {"name": "nightly-m1", "namespace": "ml", "phase": "Running", "progress": "0/1", "created": None, "age": "1s"}


def failed_jobflow(*, gate: bool = False) -> dict:
    node = {"name": "ok", "state": "Waiting", "label": "Waiting", "tone": "waiting", "x": 0, "y": 0,
            "gate": {"question": "ship?", "open": True, "why": None, "answer": None} if gate else None}
    return {"name": "train", "namespace": "ml", "width": 200, "height": 80, "nodes": [node], "edges": [],
            "timeline": {"bars": [], "seconds": 0, "critical": []}, "events": [],
            "header": {"phase": "Running" if gate else "Failed", "progress": "0/1", "age": "1m", "ended": not gate,
                       "suspended": False, "stoppable": gate, "shutdown": None}}


def on_page(config: dict, scenario: str):
    done = subprocess.run([NODE, str(HARNESS), str(STATIC), json.dumps(config)], input=scenario, text=True,
                          capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_run_now_sends_only_the_fields_changed_from_their_defaults_and_never_an_empty_text_for_no_default() -> None:
    sent = on_page(TEMPLATE, f"""
        await view({json.dumps(NIGHTLY)});
        el("param-0").value = "0.5";
        await submit();
        return fetches.map((f) => [f.url, f.body]);
    """)
    assert sent == [["/api/jobflowtemplates/ml/nightly/run", {"parameters": {"lr": "0.5"}}]]


def test_run_now_sends_a_value_typed_for_a_parameter_without_a_default() -> None:
    sent = on_page(TEMPLATE, f"""
        await view({json.dumps(NIGHTLY)});
        el("param-1").value = "2026-11-25";
        await submit();
        return fetches.map((f) => f.body);
    """)
    assert sent == [{"parameters": {"date": "2026-11-25"}}]


def test_a_double_click_on_run_now_sends_one_request_and_the_buttons_stay_off_until_its_answer() -> None:
    seen = on_page(TEMPLATE, f"""
        await view({json.dumps(NIGHTLY)});
        await submit();
        await submit();
        const during = ["action-run", "action-suspend", "action-resume"].map((id) => el(id).disabled);
        await view({json.dumps({**NIGHTLY, "runs": [RUN]})});  // the stream draws meanwhile
        const redrawn = ["action-run", "action-suspend"].map((id) => el(id).disabled);
        const requests = fetches.length;
        fetches[0].answer(200, {{message: "Started run: ml/nightly-m1 (JobFlowTemplate nightly)"}});
        await settle();
        return {{requests, during, redrawn, waiting: el("action-result").textContent === "…",
                after: ["action-run", "action-suspend", "action-resume"].map((id) => el(id).disabled),
                said: el("action-result").textContent}};
    """)
    assert seen["requests"] == 1
    assert seen["during"] == [True, True, True] and seen["redrawn"] == [True, True]
    assert seen["after"] == [False, False, True]  # as the view says: not suspended
    assert seen["said"] == "Started run: ml/nightly-m1 (JobFlowTemplate nightly)"


def test_a_request_that_gets_no_answer_says_so_and_the_buttons_come_back() -> None:
    seen = on_page(TEMPLATE, f"""
        await view({json.dumps(NIGHTLY)});
        await click("action-suspend");
        fetches[0].fail("Failed to fetch");
        await settle();
        return {{said: el("action-result").textContent, ok: el("action-result").dataset.ok,
                run: el("action-run").disabled, suspend: el("action-suspend").disabled}};
    """)
    assert seen["said"].startswith("no answer from the dashboard (Failed to fetch)") and seen["ok"] == "false"
    assert seen["run"] is False and seen["suspend"] is False


def test_an_answer_that_is_not_json_says_its_http_status() -> None:
    said = on_page(TEMPLATE, f"""
        await view({json.dumps(NIGHTLY)});
        await click("action-suspend");
        fetches[0].answer(502);
        await settle();
        return el("action-result").textContent;
    """)
    assert said == "HTTP 502"


@pytest.mark.parametrize(("button", "running"), [("action-retry", False), ("action-stop", True),
                                               ("action-terminate", True)])
def test_a_double_click_on_a_jobflows_button_sends_one_request_and_a_failure_is_shown(button: str,
                                                                                      running: bool) -> None:
    seen = on_page(JOBFLOW, f"""
        await view({json.dumps(failed_jobflow(gate=running))});
        await click("{button}");
        await click("{button}");
        const during = el("{button}").disabled, requests = fetches.length;
        await view({json.dumps(failed_jobflow(gate=running))});
        const redrawn = el("{button}").disabled;
        fetches[0].fail("NetworkError when attempting to fetch resource.");
        await settle();
        return {{requests, during, redrawn, after: el("{button}").disabled, said: el("action-result").textContent}};
    """)
    assert seen["requests"] == 1 and seen["during"] is True and seen["redrawn"] is True
    assert seen["after"] is False and seen["said"].startswith("no answer from the dashboard (NetworkError")


def test_approve_is_sent_once_with_its_gate_and_message_and_the_gates_buttons_are_off_while_in_flight() -> None:
    seen = on_page(JOBFLOW, f"""
        await view({json.dumps(failed_jobflow(gate=True))});
        await pick("ok");
        el("gate-message").value = "fine";
        await click("gate-approve");
        await click("gate-approve");
        const during = [el("gate-approve").disabled, el("gate-reject").disabled, el("action-stop").disabled];
        const requests = fetches.map((f) => [f.url, f.body]);
        fetches[0].answer(409, {{error: "the gate was answered meanwhile"}});
        await settle();
        return {{requests, during, after: [el("gate-approve").disabled, el("action-stop").disabled],
                said: el("action-result").textContent, ok: el("action-result").dataset.ok}};
    """)
    assert seen["requests"] == [["/api/jobflows/ml/train/approve", {"flows": ["ok"], "message": "fine"}]]
    assert seen["during"] == [True, True, True] and seen["after"] == [False, False]
    assert seen["said"] == "the gate was answered meanwhile" and seen["ok"] == "false"
