"""Child JobFlows in Chromium: the parent's DAG shows the child as a JobFlow node with its progress, live; its link
opens the child's own DAG, whose breadcrumb leads back to the parent.

No cluster is needed: the dashboard's app runs in this process on a store filled by hand with
``tests/child_jobflows.py``'s family (train -> train-prep -> train-prep-fetch), as the in-memory tier fills it, and
a change to the child is noted in the store as its watch would note it. The engine does not make children on the
cluster yet (its shell is under way), so the app's data comes from objects, and what is tested is what Chromium
draws and does with them. Chromium and chromedriver as the other browser tests get them
(:func:`devcluster.browser.ensure_browser`: skipped, saying how to install them, where they cannot be).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from browser import chrome, node_states, wait_for
from child_jobflows import family, prep
from dashboard.app import Settings, create_app
from dashboard.pages import Pages
from dashboard.store import Store
from devcluster.browser import BrowserMissing, ensure_browser
from jobflow_core.vocabulary.api import JOBFLOW, VCJOB

NOW = datetime(2026, 1, 2, 3, 10, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def driver() -> Iterator:
    try:
        chromium, chromedriver = ensure_browser(log=lambda line: print(line, flush=True))
    except BrowserMissing as error:
        pytest.skip(str(error))
    browser = chrome(chromium, chromedriver)
    yield browser
    browser.quit()


@pytest.fixture
def served() -> Iterator[tuple[Store, str]]:
    """The dashboard's app on a free loopback port, on a store holding the family; (store, base URL)."""
    from werkzeug.serving import make_server

    store = Store()
    store.fill(JOBFLOW, [obj for obj in family() if obj["kind"] == "JobFlow"])
    store.fill(VCJOB, [obj for obj in family() if obj["kind"] == "Job"])
    app = create_app(store, Pages(store, None, clock=lambda: NOW), Settings())
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield store, f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    thread.join(timeout=10)


def child_node(driver, flow: str) -> dict | None:
    """What the DAG's node of ``flow`` says of its child JobFlow, read in one step (a redraw replaces nodes)."""
    return driver.execute_script(
        "const g = document.getElementById('node-' + arguments[0]);"
        "return g && g.dataset.child ? {child: g.dataset.child, progress: g.dataset.progress,"
        " card: !!g.querySelector('rect.behind'), link: (g.querySelector('a.open-child') || {}).textContent} : null",
        flow)


def test_the_parents_dag_shows_the_child_live_and_its_link_opens_the_childs_dag_which_leads_back(
        driver, served) -> None:
    store, url = served
    driver.get(f"{url}jobflows/default/train")
    shown = wait_for(driver, "the child JobFlow node of prep", lambda d: child_node(d, "prep"))
    assert shown == {"child": "train-prep", "progress": "1/2", "card": True, "link": "❐ JobFlow Running ↗"}
    assert node_states(driver) == {"prep": "Running", "fit": "Waiting"}

    further = prep()
    further["metadata"]["resourceVersion"] = "40"
    further["status"].update({"state": {"phase": "Succeed"}, "progress": "2/2"})
    store.note(JOBFLOW, further, deleted=False)
    wait_for(driver, "the child's new progress on the parent's page",
             lambda d: (child_node(d, "prep") or {}).get("progress") == "2/2", timeout=15)

    driver.execute_script("document.querySelector('#node-prep a.open-child').dispatchEvent("
                          "new MouseEvent('click', {bubbles: true, cancelable: true}))")
    wait_for(driver, "the child's own page", lambda d: d.current_url.endswith("/jobflows/default/train-prep"))
    wait_for(driver, "the child's DAG", lambda d: node_states(d) == {"fetch": "Completed", "clean": "Running"})
    assert child_node(driver, "fetch")["child"] == "train-prep-fetch"  # its own child, one level down
    crumb = wait_for(driver, "the breadcrumb to the parent", lambda d: d.execute_script(
        "const p = document.getElementById('parent'); return p && !p.hidden ? p.innerText : ''"))
    assert crumb == "parent: train / flow prep"

    driver.execute_script("document.getElementById('parent-link').click()")
    wait_for(driver, "the parent's page again", lambda d: d.current_url.endswith("/jobflows/default/train")
             and (child_node(d, "prep") or {}).get("progress") == "2/2")
