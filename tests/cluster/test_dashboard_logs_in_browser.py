"""The dashboard's logs pane on real containers, in headless Chromium: the install tier's pod node (a real kubelet;
kwok's pods write no logs) runs JobFlow ``logs`` (``a``, then ``b`` over three items; test_logs_on_the_pod_node.py's
JobFlow and JobTemplates, its fixture imported; ``a`` prints for 10 s here), the engine runs in-process and
``python -m dashboard`` serves it, as ``kubectl jobflow dashboard`` does (the logs pane on: a person's kubeconfig).

b's pane is opened while ``a`` still runs: live, with no lines yet, then it follows each item's pod as it starts; it
ends showing the lines ``kubectl jobflow logs logs b`` prints, under the same prefixes, and says the logs ended; its
item selector then shows one item's lines alone.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import test_dashboard_in_browser as shown
import test_logs_on_the_pod_node as pod_logs
from browser import Dashboard, node_states, start_dashboard, wait_for
from devcluster.testing import LocalCluster

pytestmark = pytest.mark.cluster

driver = shown.driver
fan_out = pod_logs.fan_out
"""JobFlow ``logs`` and its JobTemplates on the pod node, the engine running it."""

LINES_SHOWN = "return document.getElementById('logs-lines').innerText"


@pytest.fixture
def pods_dashboard(pods_cluster: LocalCluster, pods_namespace: str) -> Iterator[Dashboard]:
    running = start_dashboard(pods_cluster, "--namespace", pods_namespace)
    yield running
    running.stop()


@pytest.fixture
def running_late(monkeypatch: pytest.MonkeyPatch, pods_dashboard: Dashboard, request: pytest.FixtureRequest) -> str:
    """JobFlow ``logs`` created once the dashboard listens, its ``a`` printing for 10 s: time to open b's pane before
    b starts."""
    monkeypatch.setitem(pod_logs.LINES, "a", 10)
    return request.getfixturevalue("fan_out")


def open_logs(driver, flow: str) -> None:
    """Select the flow's node (Enter) and press its panel's Logs button (Enter), as with a keyboard. The panel is
    drawn again on every change of the JobFlow: a button found a moment ago may be gone, so it is found again."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.keys import Keys

    def press(d, element_id: str, wanted: str) -> bool:
        try:
            found = [e for e in d.find_elements("id", element_id) if e.get_attribute("data-flow") == flow]
            if found:
                d.execute_script("arguments[0].focus()", found[0])
                found[0].send_keys(Keys.ENTER)
        except StaleElementReferenceException:
            return False
        return wanted in d.execute_script("return document.body.innerText")

    wait_for(driver, f"{flow}'s panel", lambda d: press(d, f"node-{flow}", "Logs"))
    wait_for(driver, f"the logs pane of {flow}", lambda d: press(d, "show-logs", f"Logs of flow {flow}"))


def test_the_logs_pane_follows_a_later_flows_items_and_shows_what_kubectl_jobflow_logs_prints(
        pods_cluster: LocalCluster, pods_namespace: str, pods_dashboard: Dashboard, running_late: str,
        driver) -> None:
    fan_out = running_late
    driver.get(f"{pods_dashboard.url}jobflows/{pods_namespace}/{fan_out}")

    wait_for(driver, "a running", lambda d: node_states(d).get("a") == "Running", timeout=60)
    open_logs(driver, "b")  # before b started: live, with no lines yet; then it follows each item as it starts
    wait_for(driver, "b's pane live", lambda d: d.execute_script(
        "return document.getElementById('logs-state').textContent") == "live", timeout=30)
    assert node_states(driver)["b"] == "Waiting" and driver.execute_script(LINES_SHOWN) == ""
    wait_for(driver, "b's first lines", lambda d: "b line 0" in d.execute_script(LINES_SHOWN), timeout=90)
    wait_for(driver, "the end of the logs",
             lambda d: "no more lines" in d.execute_script("return document.getElementById('logs-notices').innerText"),
             timeout=90)

    code, printed, said = pod_logs.jobflow_logs(pods_cluster, pods_namespace, fan_out, "b")
    assert (code, said) == (0, "")
    assert sorted(driver.execute_script(LINES_SHOWN).splitlines()) == sorted(printed.splitlines())
    assert sorted(printed.splitlines()) == sorted(line for line in pod_logs.expected() if line.startswith("[b/"))
    assert driver.execute_script("return document.getElementById('logs-state').textContent") == "ended"

    # Three containers: the select shows one of them.
    driver.execute_script("const s = document.getElementById('logs-filter'); s.value = 'logs-b-1-main-0/main';"
                          "s.dispatchEvent(new Event('change'))")
    assert driver.execute_script(LINES_SHOWN).splitlines() == [
        "[b/1/main/logs-b-1-main-0/main] b line 0", "[b/1/main/logs-b-1-main-0/main] b line 1"]

    # A forEach flow: the pane asks the server for one item's logs only (&item=N).
    assert driver.execute_script("return [...document.getElementById('logs-item').options].map((o) => o.text)") == [
        "every item", "item 0", "item 1", "item 2"]
    driver.execute_script("const s = document.getElementById('logs-item'); s.value = '2';"
                          "s.dispatchEvent(new Event('change'))")
    wait_for(driver, "item 2's lines alone", lambda d: d.execute_script(LINES_SHOWN).splitlines() == [
        "[b/2/main/logs-b-2-main-0/main] b line 0", "[b/2/main/logs-b-2-main-0/main] b line 1"], timeout=30)

    open_logs(driver, "a")  # an ended flow: its lines at once, in order, the same as the command's
    wait_for(driver, "a's lines", lambda d: d.execute_script(LINES_SHOWN).count("a line") == pod_logs.LINES["a"],
             timeout=30)
    assert driver.execute_script(LINES_SHOWN).splitlines() == \
        pod_logs.jobflow_logs(pods_cluster, pods_namespace, fan_out, "a")[1].splitlines()
