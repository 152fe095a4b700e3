"""``make screenshots``: the documentation's pictures of the dashboard, made again from the dashboard as it is.

It does what the browser tier does (``tests/cluster/browser.py``, ``engine.py``), on the tests' own control plane
(``.devcluster/tests/``, started if it is not running, stopped again if it was started here, unless
JOBFLOW_KEEP_CLUSTER=1): the engine in-process, ``python -m dashboard -n default``, Debian's headless Chromium. In
namespace ``default`` it runs what the README shows: the demo's diamond (``examples/diamond/``, JobFlow ``test``,
applied by :func:`demo.__main__.apply_example` as ``make demo`` applies it), and a JobFlow with an approval gate,
``release`` (flows ``a`` -> ``approve`` -> ``e`` of the same JobTemplates). It writes into ``docs/images/``:

- ``dashboard-running.png``: ``test`` while c and d run, c's panel open;
- ``dashboard-succeed.png``: ``test`` Succeed, the critical path starred, e's panel open;
- ``dashboard-gate.png``: ``release`` waiting at its gate, the gate's panel with its Approve and Reject buttons;
- ``dashboard-list.png``: the list, both JobFlows in it;
- ``dashboard-logs.png``: a node's logs pane, once the dashboard has one (:data:`LOGS_PANE`); skipped until then.

Each picture records the digest of the dashboard's pages and scripts (``tests/pictures.py``); the digest is taken
before and after, and nothing is written if the pages changed meanwhile. What it created in ``default`` (the two
JobFlows, JobTemplates a..e) is deleted before (a fresh start, as the demo's first run) and after.

``make screenshots`` runs it (``PYTHONPATH=tests python tests/cluster/screenshots.py``: it imports the tests' helpers
as pytest does); it needs chromium and chromedriver, which it installs with apt-get as root, as the browser tier does.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kubernetes.client.rest import ApiException

from browser import chrome, node_states, phase_on_page, start_dashboard, wait_for
from demo.__main__ import EXAMPLE, NAMESPACE, apply_example
from devcluster import cluster as devcluster
from devcluster.browser import BrowserMissing, ensure_browser
from devcluster.testing import LocalCluster
from engine import start_engine
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE
from objects import apply
from pictures import DIGEST_KEY, IMAGES, LOGS_PICTURE, dashboard_digest, with_text

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver as Driver

GATE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: release}
spec:
  jobRetainPolicy: delete
  flows:
  - name: a
  - name: approve
    dependsOn: {targets: [a]}
    approval: {message: look at a's result before e runs}
  - name: e
    dependsOn: {targets: [approve]}
"""
JOBFLOWS = ("test", "release")
JOBTEMPLATES = tuple("abcde")

LOGS_PANE: str | None = None
"""The CSS selector of a node panel's logs pane. None while the dashboard has none (it is being built, issue 44):
the logs step then says it is skipped. Once it exists, set this, check that the step shows what a reader should
see, and add ``dashboard-logs.png`` to docs/dashboard.md (the unit test checks it from then on). The pods here are
kwok's: they run no container, and kwok serves no logs for them unless it is given a ``Logs`` configuration
(``devcluster/config/`` has none), so look at what the pane shows for them before keeping its picture."""


def log(line: str) -> None:
    print(f"screenshots: {line}", flush=True)


def open_panel(driver: Driver, flow: str) -> None:
    """Select node ``flow`` as a click does; the panel stays open while the page redraws."""
    wait_for(driver, f"node {flow}", lambda d: flow in node_states(d), timeout=60)
    driver.execute_script("document.getElementById('node-' + arguments[0])"
                          ".dispatchEvent(new MouseEvent('click', {bubbles: true}))", flow)
    wait_for(driver, f"{flow}'s panel", lambda d: d.execute_script(
        "const t = document.getElementById('panel-title'); return t && t.textContent === arguments[0]", flow))


def live(driver: Driver) -> bool:
    return driver.execute_script("const e = document.getElementById('live'); return e && e.textContent") == "live"


def diamond_running(driver: Driver, url: str) -> bytes:
    driver.get(f"{url}jobflows/{NAMESPACE}/test")
    open_panel(driver, "c")
    wait_for(driver, "c and d Running, e waiting for them", lambda d: live(d) and (s := node_states(d)) and
             s["a"] == s["b"] == "Completed" and s["c"] == s["d"] == "Running" and s["e"] == "Waiting", timeout=120)
    return driver.get_screenshot_as_png()


def diamond_succeed(driver: Driver, url: str) -> bytes:
    wait_for(driver, "the JobFlow Succeed", lambda d: phase_on_page(d) == "Succeed", timeout=120)
    open_panel(driver, "e")
    wait_for(driver, "the critical path starred", lambda d: d.execute_script(
        "return document.querySelectorAll('#dag .node.critical').length") >= 4)
    return driver.get_screenshot_as_png()


def gate_waiting(driver: Driver, url: str) -> bytes:
    driver.get(f"{url}jobflows/{NAMESPACE}/release")
    open_panel(driver, "approve")
    wait_for(driver, "the gate's Approve button", lambda d: live(d) and d.find_elements("id", "gate-approve"),
             timeout=120)
    return driver.get_screenshot_as_png()


def the_list(driver: Driver, url: str) -> bytes:
    size = driver.get_window_size()
    driver.set_window_size(size["width"], 600)  # two rows: the rest of a full window would be empty
    try:
        driver.get(url)
        wait_for(driver, "both JobFlows in the list", lambda d: live(d) and all(
            name in d.find_element("id", "jobflows").text for name in JOBFLOWS))
        return driver.get_screenshot_as_png()
    finally:
        driver.set_window_size(size["width"], size["height"])


def logs_pane(driver: Driver, url: str) -> bytes | None:
    """The slot for the logs pane's picture (issue 44): skipped, saying so, until :data:`LOGS_PANE` is set."""
    if LOGS_PANE is None:
        log(f"{LOGS_PICTURE}: skipped, the dashboard has no logs pane yet (set LOGS_PANE in {Path(__file__).name} "
            "once it has)")
        return None
    driver.get(f"{url}jobflows/{NAMESPACE}/release")
    open_panel(driver, "a")
    wait_for(driver, f"the logs pane ({LOGS_PANE})", lambda d: d.find_elements("css selector", LOGS_PANE))
    return driver.get_screenshot_as_png()


def delete_what_it_made(local: LocalCluster) -> None:
    """The JobFlows and JobTemplates of :data:`JOBFLOWS` and :data:`JOBTEMPLATES` in ``default``, waited gone."""
    for api_type, names in ((JOBFLOW, JOBFLOWS), (JOBTEMPLATE, JOBTEMPLATES)):
        for name in names:
            try:
                local.custom.delete_namespaced_custom_object(api_type.group, api_type.version, NAMESPACE,
                                                             api_type.plural, name)
            except ApiException as error:
                if error.status != 404:
                    raise

        def gone(api_type=api_type, names=names) -> bool:
            listed = local.custom.list_namespaced_custom_object(api_type.group, api_type.version, NAMESPACE,
                                                                api_type.plural)["items"]
            return not {item["metadata"]["name"] for item in listed} & set(names)

        local.wait_until(f"{api_type.kind}s {', '.join(names)} deleted from {NAMESPACE}", gone, timeout=60)


STEPS: tuple[tuple[str, Callable[[Driver, str], bytes | None]], ...] = (
    ("dashboard-running.png", diamond_running),
    ("dashboard-succeed.png", diamond_succeed),
    ("dashboard-gate.png", gate_waiting),
    ("dashboard-list.png", the_list),
    (LOGS_PICTURE, logs_pane),
)


def capture(local: LocalCluster, chromium: Path, chromedriver: Path) -> dict[str, bytes]:
    engine = start_engine(local, NAMESPACE)
    dashboard = start_dashboard(local, "--namespace", NAMESPACE)
    driver = chrome(chromium, chromedriver)
    taken: dict[str, bytes] = {}
    try:
        apply_example(local)
        apply(local, NAMESPACE, GATE)
        log(f"applied {EXAMPLE.relative_to(devcluster.REPO)} (JobFlow test) and JobFlow release in {NAMESPACE}")
        for name, step in STEPS:
            started = time.monotonic()
            png = step(driver, dashboard.url)
            if png is not None:
                taken[name] = png
                log(f"{name}: taken ({time.monotonic() - started:.1f} s)")
    finally:
        driver.quit()
        dashboard.stop()
        engine.stop()
    return taken


def main() -> int:
    started = time.monotonic()
    # The engine runs in this process: its INFO lines (one per event) would bury the steps' own; set before the
    # handler's app sets INFO for a process with no logging configured.
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "WARNING"), format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("werkzeug").setLevel(logging.root.level)  # it would set INFO on itself otherwise
    try:
        chromium, chromedriver = ensure_browser(log=log)
    except BrowserMissing as error:
        print(f"screenshots: {error}", file=sys.stderr)
        return 1
    try:
        state, started_here = devcluster.up(devcluster.TEST_ROOT, log=log)
    except Exception as error:  # the message says which component failed and what to do
        print(f"screenshots: the tests' control plane could not start:\n{error}", file=sys.stderr)
        return 1
    local = LocalCluster(state)
    digest = dashboard_digest()
    try:
        delete_what_it_made(local)
        taken = capture(local, chromium, chromedriver)
    finally:
        delete_what_it_made(local)
        local.close()
        if started_here and not os.environ.get("JOBFLOW_KEEP_CLUSTER"):
            devcluster.down(devcluster.TEST_ROOT, log=lambda line: None)
    if dashboard_digest() != digest:
        print("screenshots: the dashboard's pages or scripts changed while the pictures were taken; nothing was "
              "written: run `make screenshots` again", file=sys.stderr)
        return 1
    for name, png in taken.items():
        (IMAGES / name).write_bytes(with_text(png, key=DIGEST_KEY, value=digest))
    log(f"wrote {', '.join(sorted(taken))} into {IMAGES.relative_to(devcluster.REPO)} (digest {digest[:12]}) "
        f"in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
