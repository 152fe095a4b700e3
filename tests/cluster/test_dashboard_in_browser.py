"""The dashboard as users see it: ``python -m dashboard`` on the real cluster, with the engine running, in Debian's
headless Chromium. Every step waits on the page's DOM (never sleeps); screenshots are checked for their colours.

Chromium and chromedriver are installed by the project (:mod:`devcluster.browser`, apt-get as root, as CI runs);
without root and without them, the tier is skipped, saying how to install them.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BytesIO
from pathlib import Path

import pytest

from browser import (RECORDER, SCREENSHOTS, Dashboard, Listener, chrome, node_states, phase_on_page,
                     start_dashboard, wait_for)
from devcluster.browser import BrowserMissing, ensure_browser
from devcluster.processes import free_port
from devcluster.testing import LocalCluster
from objects import DIAMOND, apply, jobflow, template, vcjobs
from seeds import diamond_yaml

pytestmark = pytest.mark.cluster

SEED = Path(__file__).resolve().parents[2] / "examples" / "diamond"
RANK = {"Waiting": 0, "Created": 1, "Pending": 1, "Running": 2, "Completed": 3}
TONES = {"done": (0xDF, 0xF3, 0xEA), "running": (0xDB, 0xEA, 0xF6), "waiting": (0xF3, 0xF3, 0xF3)}
"""The node fills of dashboard.css (--done-bg, --running-bg, --waiting-bg) a screenshot must contain."""


@pytest.fixture(scope="session")
def driver() -> Iterator:
    try:
        chromium, chromedriver = ensure_browser(log=lambda line: print(line, flush=True))
    except BrowserMissing as error:
        pytest.skip(str(error))
    browser = chrome(chromium, chromedriver)
    yield browser
    browser.quit()


@pytest.fixture
def dashboard(cluster: LocalCluster, namespace: str) -> Iterator[Dashboard]:
    running = start_dashboard(cluster, "--namespace", namespace)
    yield running
    running.stop()


def text_of(driver, element_id: str) -> str:
    return driver.execute_script("const e = document.getElementById(arguments[0]); return e ? e.innerText : ''",
                                 element_id)


def colours(png: bytes) -> dict[str, int]:
    from PIL import Image

    image = Image.open(BytesIO(png)).convert("RGB")
    counts = {rgb: n for n, rgb in image.getcolors(maxcolors=1 << 20)}
    return {tone: sum(n for rgb, n in counts.items() if all(abs(a - b) <= 2 for a, b in zip(rgb, want)))
            for tone, want in TONES.items()} | {"distinct": len(counts)}


def test_the_seed_diamond_goes_from_waiting_to_running_to_completed_live_on_its_page(
        cluster: LocalCluster, namespace: str, engine, dashboard: Dashboard, driver) -> None:
    apply(cluster, namespace, (SEED / "jobtemplates.yaml").read_text())
    driver.get(f"{dashboard.url}jobflows/{namespace}/test")
    wait_for(driver, "that the JobFlow does not exist yet", lambda d: "No such JobFlow" in d.page_source)
    driver.execute_script(RECORDER)
    apply(cluster, namespace, (SEED / "jobflow.yaml").read_text())

    wait_for(driver, "c and d running after a and b completed", lambda d: (s := node_states(d)) and
             s["a"] == s["b"] == "Completed" and "Running" in (s["c"], s["d"]) and s["e"] == "Waiting", timeout=90)
    running = driver.get_screenshot_as_png()
    wait_for(driver, "the JobFlow Succeed", lambda d: phase_on_page(d) == "Succeed", timeout=90)
    done = driver.get_screenshot_as_png()

    seen = driver.execute_script("return window.__seen")
    for flow, states in seen.items():
        assert states[-1] == "Completed" and "Running" in states, (flow, states)
        assert [RANK[s] for s in states] == sorted(RANK[s] for s in states), (flow, states)  # never backwards
    assert all(seen[flow][0] == "Waiting" for flow in "bcde"), seen  # a's vcjob is created as the JobFlow appears
    assert text_of(driver, "progress") == "5/5"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / "diamond-running.png").write_bytes(running)
    (SCREENSHOTS / "diamond-succeed.png").write_bytes(done)
    during, after = colours(running), colours(done)
    node_area = 150 * 50  # a node's fill, less its border and text, is about 186 x 62 pixels
    assert during["distinct"] > 50, "the running page's screenshot is (almost) blank"
    assert during["done"] > 2 * node_area and during["running"] > node_area and during["waiting"] > node_area, during
    assert after["done"] > 5 * node_area and after["running"] < node_area, after


def test_a_jobtemplate_page_shows_the_jobflow_using_it_and_counts_its_run_live(
        cluster: LocalCluster, namespace: str, engine, dashboard: Dashboard, driver) -> None:
    apply(cluster, namespace, template("a"))
    driver.get(f"{dashboard.url}jobtemplates/{namespace}/a")
    wait_for(driver, "the page live, no run yet", lambda d: text_of(d, "live") == "live"
             and text_of(d, "runs") in ("none yet", "0"))
    driver.execute_script("window.__loaded = true")  # gone if the page reloads
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: once}\n"
                              "spec:\n  flows:\n  - {name: a}\n")
    link = "const a = document.querySelector('#used-by a'); return a && a.getAttribute('href')"
    wait_for(driver, "the JobFlow using it", lambda d: d.execute_script(link) == f"/jobflows/{namespace}/once")

    def runs() -> int | None:
        found = cluster.custom.get_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace,
                                                            "jobtemplates", "a")
        return (found.get("status") or {}).get("runs")

    counted = cluster.wait_until("the engine counting the run", lambda: runs() == 1 and time.monotonic(),
                                 timeout=90, interval=0.05)
    wait_for(driver, "the run counted on the page", lambda d: text_of(d, "runs") == "1", timeout=10)
    shown = time.monotonic() - counted
    assert driver.execute_script("return window.__loaded === true"), "the page reloaded"
    assert shown < 2, f"the page showed the run {shown:.2f} s after the engine counted it"
    print(f"JobTemplate page: run shown {shown * 1000:.0f} ms after the engine counted it")


def test_the_retry_button_reruns_the_failed_flow_and_keeps_what_completed(
        cluster: LocalCluster, namespace: str, engine, dashboard: Dashboard, driver) -> None:
    apply(cluster, namespace, "---\n".join(template(name, fail_attempts=1 if name == "c" else 0) for name in "abcde"))
    apply(cluster, namespace, DIAMOND)
    driver.get(f"{dashboard.url}jobflows/{namespace}/diamond")
    wait_for(driver, "the JobFlow Failed with d Completed", lambda d: phase_on_page(d) == "Failed" and
             node_states(d).get("d") == "Completed", timeout=90)
    before = {name: job["metadata"]["uid"] for name, job in vcjobs(cluster, namespace).items()}
    assert sorted(before) == ["diamond-a", "diamond-b", "diamond-c", "diamond-d"]
    assert not driver.find_element("id", "action-suspend").is_enabled()  # an ended JobFlow cannot be suspended

    driver.find_element("id", "action-retry").click()
    said = wait_for(driver, "the retry's answer", lambda d: text_of(d, "action-result").strip("…"))
    assert said.startswith(f"Retrying JobFlow: {namespace}/diamond: its failed flows"), said
    wait_for(driver, "the JobFlow Succeed after the retry", lambda d: phase_on_page(d) == "Succeed", timeout=90)

    after = {name: job["metadata"]["uid"] for name, job in vcjobs(cluster, namespace).items()}
    assert sorted(after) == ["diamond-a", "diamond-b", "diamond-c", "diamond-c-r1", "diamond-d", "diamond-e"]
    assert all(after[name] == before[name] for name in before)  # a, b, d (and the failed c) kept their vcjobs
    assert jobflow(cluster, namespace, "diamond")["status"]["rerun"]["fromAttempt"] == {"c": 2}


def test_a_waiting_gate_is_approved_from_its_panel_with_a_message_and_what_waits_for_it_runs(
        cluster: LocalCluster, namespace: str, engine, dashboard: Dashboard, driver) -> None:
    apply(cluster, namespace, template("evaluate") + "---\n" + template("deploy"))
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: release}
spec:
  flows:
  - name: evaluate
  - name: ok
    dependsOn: {targets: [evaluate]}
    approval: {message: check the evaluation}
  - name: deploy
    dependsOn: {targets: [ok]}
""")
    driver.get(f"{dashboard.url}jobflows/{namespace}/release")
    wait_for(driver, "evaluate Completed", lambda d: node_states(d).get("evaluate") == "Completed", timeout=90)
    driver.execute_script("document.getElementById('node-ok').dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    wait_for(driver, "the gate's Approve button", lambda d: d.find_elements("id", "gate-approve"), timeout=30)
    assert "check the evaluation" in text_of(driver, "panel")
    driver.find_element("id", "gate-message").send_keys("numbers look right")
    driver.find_element("id", "gate-approve").click()
    wait_for(driver, "the JobFlow Succeed after the approval", lambda d: phase_on_page(d) == "Succeed", timeout=90)
    [answer] = jobflow(cluster, namespace, "release")["status"]["approvals"]
    assert (answer["flow"], answer["decision"], answer["message"]) == ("ok", "Approved", "numbers look right")
    assert answer["user"]  # who the API server says the dashboard's user is (a SelfSubjectReview), not typed in
    assert sorted(vcjobs(cluster, namespace)) == ["release-deploy", "release-evaluate"]  # the gate has no vcjob
    wait_for(driver, "the gate's answer in its panel", lambda d: "Approved by" in text_of(d, "panel"))
    assert "vcjob" not in text_of(driver, "panel")  # nor does its panel speak of one
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / "gate-approved.png").write_bytes(driver.get_screenshot_as_png())


def test_the_keyboard_reaches_every_node_and_every_state_is_written_not_only_coloured(
        cluster: LocalCluster, namespace: str, dashboard: Dashboard, driver) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    apply(cluster, namespace, DIAMOND)  # no engine: every flow waits
    driver.get(f"{dashboard.url}jobflows/{namespace}/diamond")
    wait_for(driver, "five nodes", lambda d: len(node_states(d)) == 5)
    driver.execute_script("document.querySelector('.brand').focus()")  # the page's first link; Tab from there
    reached = []
    for _ in range(40):
        ActionChains(driver).send_keys(Keys.TAB).perform()
        flow = driver.execute_script("return document.activeElement.dataset.flow || null")
        if flow and flow not in reached:
            reached.append(flow)
        if len(reached) == 5:
            break
    assert reached == ["a", "b", "c", "d", "e"]  # in DAG order
    ActionChains(driver).send_keys(Keys.ENTER).perform()
    wait_for(driver, "e's panel", lambda d: text_of(d, "panel-title") == "e")
    assert "Waits for\nc, d" in text_of(driver, "panel")
    for node in driver.find_elements("css selector", "#dag .node"):
        assert node.get_attribute("data-state") in node.text and node.get_attribute("aria-label"), node.text
    legend = text_of(driver, "legend")
    assert all(word in legend for word in ("Completed", "Running", "Pending", "Failed", "Waiting", "Skipped"))
    # Nothing changes in the cluster, yet the JobFlow's age counts up on the page.
    age = "return document.querySelector('#summary [data-since]').textContent"
    first = driver.execute_script(age)
    wait_for(driver, "the age counting up", lambda d: d.execute_script(age) != first, timeout=5)


def test_a_read_only_dashboard_shows_no_buttons_and_refuses_posts(
        cluster: LocalCluster, namespace: str, driver) -> None:
    apply(cluster, namespace, DIAMOND)
    read_only = start_dashboard(cluster, "--namespace", namespace, "--read-only")
    try:
        driver.get(f"{read_only.url}jobflows/{namespace}/diamond")
        wait_for(driver, "the DAG", lambda d: len(node_states(d)) == 5)
        assert driver.find_elements("id", "actions") == []
        assert "read-only" in driver.find_element("tag name", "header").text
        status = driver.execute_script(
            "return fetch(arguments[0], {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'})"
            ".then(r => r.status)", f"{read_only.url}api/jobflows/{namespace}/diamond/suspend")
        assert status == 403
        assert "suspend" not in jobflow(cluster, namespace, "diamond")["spec"]
    finally:
        read_only.stop()


def test_a_post_from_another_origin_is_refused(cluster: LocalCluster, namespace: str, dashboard: Dashboard,
                                              driver) -> None:
    apply(cluster, namespace, DIAMOND)
    target = f"{dashboard.url}api/jobflows/{namespace}/diamond/suspend"
    page = f"""<!doctype html><form id="f" method="post" action="{target}" enctype="text/plain">
<input name='{{"a":"' value='"}}'></form>"""

    class Other(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page.encode())

        def log_message(self, *args) -> None:
            pass

    port = free_port()
    other = ThreadingHTTPServer(("127.0.0.1", port), Other)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        driver.get(f"http://localhost:{port}/")
        driver.execute_script("fetch(arguments[0], {method: 'POST', mode: 'no-cors', body: '{}'})", target)
        driver.execute_script("document.getElementById('f').submit()")
        wait_for(driver, "the dashboard's refusal of the form", lambda d: "another site" in d.page_source)
    finally:
        other.shutdown()
    # The same request with the right token, but from another origin, is refused too: the token alone is not enough.
    driver.get(f"{dashboard.url}jobflows/{namespace}/diamond")
    token = json.loads(driver.find_element("id", "config").get_attribute("textContent"))["token"]
    request = urllib.request.Request(target, data=b"{}", method="POST", headers={
        "Content-Type": "application/json", "X-JobFlow-Token": token, "Origin": f"http://localhost:{port}"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 403
    assert "suspend" not in jobflow(cluster, namespace, "diamond")["spec"]


def test_a_two_thousand_flow_dag_draws_every_flow_and_answers_a_click(
        cluster: LocalCluster, namespace: str, dashboard: Dashboard, driver) -> None:
    flows = [{"name": "start"}] + [{"name": f"step-{i}", "dependsOn": {"targets": ["start"]}} for i in range(1998)] \
        + [{"name": "end", "dependsOn": {"targets": [f"step-{i}" for i in range(0, 1998, 50)]}}]
    cluster.custom.create_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows", {
        "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "wide"},
        "spec": {"flows": flows}})
    driver.get(f"{dashboard.url}jobflows/{namespace}/wide")
    wait_for(driver, "2,000 nodes", lambda d: len(node_states(d)) == 2000, timeout=60)
    # ms since navigation to the view painted (set two animation frames after the DOM was built)
    timing = float(wait_for(driver, "the view painted",
                            lambda d: d.execute_script("return document.body.dataset.rendered")))
    node = driver.find_element("id", "node-step-1500")
    driver.execute_script("arguments[0].scrollIntoView()", node)
    node.click()
    wait_for(driver, "the clicked node's panel", lambda d: text_of(d, "panel-title") == "step-1500")
    print(f"2,000-flow DAG rendered {timing:.0f} ms after navigation (benchmarks/dashboard.py measures it)")


def test_fifty_open_pages_all_see_a_change_and_the_server_still_answers(
        cluster: LocalCluster, namespace: str, dashboard: Dashboard) -> None:
    apply(cluster, namespace, DIAMOND)
    pages = [Listener(dashboard.url, f"/stream?namespace={namespace}&name=diamond") for _ in range(50)]
    for page in pages:
        page.start()
    assert all(page.ready.wait(30) for page in pages), "a page got no first view"

    def header(page: Listener) -> dict:
        # A stream opened before the dashboard's watch saw the new JobFlow first says it is missing (no header).
        return json.loads(page.views[-1][1]).get("header") or {}

    cluster.wait_until("all 50 pages to show the JobFlow", lambda: all(map(header, pages)), timeout=10)
    assert urllib.request.urlopen(f"{dashboard.url}api/jobflows", timeout=5).status == 200  # not pinned by streams

    cluster.custom.patch_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows", "diamond",
                                                  {"spec": {"suspend": True}})
    cluster.wait_until("all 50 pages to show the JobFlow suspended",
                       lambda: all(header(page).get("suspended") for page in pages), timeout=10)


def test_eight_tabs_all_load_and_go_live_because_a_hidden_tab_lets_go_of_its_stream(
        cluster: LocalCluster, namespace: str, dashboard: Dashboard, driver) -> None:
    """A browser opens at most 6 HTTP/1.1 connections to one host, and a live page holds one: were every tab to keep
    its stream, the 7th would never load. A hidden tab closes its stream; shown again, it catches up."""
    apply(cluster, namespace, DIAMOND)
    page = f"{dashboard.url}jobflows/{namespace}/diamond"
    phase = "const badge = document.querySelector('#summary .badge'); return badge && badge.dataset.phase"
    first = driver.current_window_handle
    driver.get(page)
    wait_for(driver, "the DAG in the first tab", lambda d: len(node_states(d)) == 5)
    try:
        for tab in range(2, 9):
            driver.switch_to.new_window("tab")  # the new tab is shown, the one before it hidden
            driver.execute_script("location.href = arguments[0]", page)  # not driver.get: it would wait for ever
            wait_for(driver, f"the DAG in tab {tab}", lambda d: len(node_states(d)) == 5
                     and text_of(d, "live") == "live", timeout=20)
        cluster.custom.patch_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows",
                                                      "diamond", {"spec": {"suspend": True}})
        wait_for(driver, "the 8th tab live: Suspended", lambda d: d.execute_script(phase) == "Suspended", timeout=10)
        driver.switch_to.window(first)  # shown again: it opens its stream, whose first view is the JobFlow now
        wait_for(driver, "the first tab live again, Suspended", lambda d: text_of(d, "live") == "live"
                 and d.execute_script(phase) == "Suspended", timeout=10)
    finally:
        for handle in driver.window_handles:
            if handle != first:
                driver.switch_to.window(handle)
                driver.close()
        driver.switch_to.window(first)


def test_an_api_server_outage_and_a_dashboard_restart_leave_an_open_page_live(
        cluster: LocalCluster, namespace: str, driver) -> None:
    """Faults: the watches resume after the API server comes back; a page whose server died reconnects by itself
    to the new one and shows what changed meanwhile, without a reload."""
    apply(cluster, namespace, DIAMOND)
    port = free_port()
    first = start_dashboard(cluster, "--namespace", namespace, "--port", str(port))
    driver.get(f"{first.url}jobflows/{namespace}/diamond")
    wait_for(driver, "the DAG", lambda d: len(node_states(d)) == 5)
    phase = "const badge = document.querySelector('#summary .badge'); return badge && badge.dataset.phase"

    cluster.api_server_outage(3)
    cluster.custom.patch_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows", "diamond",
                                                  {"spec": {"suspend": True}})
    wait_for(driver, "Suspended after the outage", lambda d: d.execute_script(phase) == "Suspended", timeout=60)

    first.stop()
    wait_for(driver, "the page noticing its server is gone", lambda d: text_of(d, "live") == "reconnecting…")
    cluster.custom.patch_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows", "diamond",
                                                  {"spec": {"suspend": False}})
    second = start_dashboard(cluster, "--namespace", namespace, "--port", str(port))
    try:
        wait_for(driver, "the page live again, showing the resume", lambda d: text_of(d, "live") == "live"
                 and d.execute_script(phase) != "Suspended", timeout=30)
    finally:
        second.stop()


def test_the_list_shows_every_jobflow_and_filters_them_by_words_and_phase(
        cluster: LocalCluster, namespace: str, dashboard: Dashboard, driver) -> None:
    apply(cluster, namespace, DIAMOND)
    apply(cluster, namespace, diamond_yaml("other"))
    rows = "return [...document.querySelectorAll('#jobflows tbody tr[data-jobflow]')].map(r => r.dataset.jobflow)"
    driver.get(dashboard.url)
    wait_for(driver, "both JobFlows", lambda d: sorted(d.execute_script(rows)) == [f"{namespace}/diamond",
                                                                                   f"{namespace}/other"])
    driver.find_element("id", "filter").send_keys("diam")
    wait_for(driver, "only diamond", lambda d: d.execute_script(rows) == [f"{namespace}/diamond"])
    assert driver.current_url.endswith("?q=diam")
    driver.get(f"{dashboard.url}?phase=Failed")  # none failed: the filter comes from the URL
    wait_for(driver, "no row", lambda d: "no JobFlow matches" in text_of(d, "jobflows"))
    driver.get(dashboard.url)
    wait_for(driver, "both again", lambda d: len(d.execute_script(rows)) == 2)
    driver.find_element("link text", "other").click()
    wait_for(driver, "other's page", lambda d: text_of(d, "title") == f"{namespace}/other")
