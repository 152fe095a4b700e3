"""A dashboard people leave open (issue 44), in headless Chromium against the tests' cluster with the engine running:
the header names the cluster, the list narrows to a namespace and a label selector that stay in its URL, a
JobFlowTemplate's page runs it now and suspends and resumes it, and Stop stops a running JobFlow; each control is
reached with Tab and worked with Enter or Space, and every coloured badge says its state in words.

The driver and the dashboard are those of tests/cluster/test_dashboard_in_browser.py (its fixtures, imported).
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

import test_dashboard_in_browser as shown
from apiclient.kubeconfig import contexts, merged
from browser import Dashboard, node_states, start_dashboard, wait_for
from devcluster.testing import LocalCluster
from objects import apply, jobflow, template

pytestmark = pytest.mark.cluster
driver, dashboard = shown.driver, shown.dashboard
"""The fixtures of the dashboard's other browser tests: one Chromium, and ``python -m dashboard -n NAMESPACE``."""
phase_on_page, text_of = shown.phase_on_page, shown.text_of

ROWS = "return [...document.querySelectorAll('#jobflows tbody tr[data-jobflow]')].map(r => r.dataset.jobflow)"
NIGHTLY = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {name: nightly}
spec:
  schedule: "0 2 * * *"
  jobFlow:
    spec:
      parameters: [{name: lr, value: "0.01", description: learning rate}]
      flows: [{name: a}]
"""


def labelled(name: str, labels: str) -> str:
    return (f"apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {{name: {name}, labels: {labels}}}\n"
            "spec:\n  flows:\n  - {name: a}\n")


def tab_to(driver, element_id: str, *, limit: int = 60) -> None:
    """Press Tab from the page's first link until ``element_id`` has the focus (fails if it never does)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    driver.execute_script("document.querySelector('.brand').focus()")
    for _ in range(limit):
        ActionChains(driver).send_keys(Keys.TAB).perform()
        if driver.execute_script("return document.activeElement.id") == element_id:
            return
    raise AssertionError(f"Tab never reached #{element_id}")


def press(driver, key: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(key).perform()


def every_badge_says_its_state(driver) -> None:
    for badge in driver.find_elements("css selector", ".badge[data-phase]"):
        assert badge.text.strip() and (badge.get_attribute("data-phase") or "no status yet") in badge.text, badge.text


@pytest.fixture
def everywhere(cluster: LocalCluster) -> Iterator[Dashboard]:
    """A dashboard of every namespace, as ``kubectl jobflow dashboard`` without -n."""
    running = start_dashboard(cluster)
    yield running
    running.stop()


def test_the_header_names_the_context_the_server_and_the_namespace(
        cluster: LocalCluster, namespace: str, dashboard: Dashboard, driver) -> None:
    kubeconfig = cluster.state.kubeconfig
    context = contexts(kubeconfig)[0]
    config = merged(kubeconfig)
    server = config["clusters"][config["contexts"][context]["cluster"]]["server"]
    for path in ("", f"jobflowtemplates/{namespace}/nightly"):
        driver.get(f"{dashboard.url}{path}")
        wait_for(driver, "the cluster band", lambda d: text_of(d, "cluster-context") == context)
        assert text_of(driver, "cluster-server") == urlsplit(server).netloc
        assert text_of(driver, "cluster-namespaces") == f"namespace {namespace}"
        band = driver.find_element("id", "cluster")
        assert band.value_of_css_property("background-color") == "rgba(31, 45, 61, 1)"  # its own, dark band


def test_the_namespace_selector_and_the_label_filter_narrow_the_list_and_stay_in_its_url(
        cluster: LocalCluster, namespace: str, everywhere: Dashboard, driver) -> None:
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    other = cluster.create_namespace()
    try:
        apply(cluster, namespace, labelled("train-prod", "{app: train, tier: prod}"))
        apply(cluster, namespace, labelled("train-dev", "{app: train, tier: dev}"))
        apply(cluster, other, labelled("serve", "{app: serve}"))
        driver.get(everywhere.url)
        wait_for(driver, "both namespaces' JobFlows", lambda d: {f"{namespace}/train-prod", f"{namespace}/train-dev",
                                                                 f"{other}/serve"} <= set(d.execute_script(ROWS)))
        wait_for(driver, "both namespaces to choose from", lambda d: {namespace, other} <= {
            o.get_attribute("value") for o in Select(d.find_element("id", "namespace")).options})
        Select(driver.find_element("id", "namespace")).select_by_value(namespace)
        wait_for(driver, "only its namespace", lambda d: sorted(d.execute_script(ROWS)) == [
            f"{namespace}/train-dev", f"{namespace}/train-prod"])

        tab_to(driver, "labels")  # the keyboard reaches the label filter; Enter applies it
        driver.switch_to.active_element.send_keys("app=train,tier!=dev")
        press(driver, Keys.ENTER)
        wait_for(driver, "only train-prod", lambda d: d.execute_script(ROWS) == [f"{namespace}/train-prod"])
        query = parse_qs(urlsplit(driver.current_url).query)
        assert query == {"ns": [namespace], "l": ["app=train,tier!=dev"]}
        every_badge_says_its_state(driver)

        driver.get(driver.current_url)  # a bookmark of the filtered list: the same rows
        wait_for(driver, "the same rows from the URL", lambda d: d.execute_script(ROWS) == [f"{namespace}/train-prod"]
                 and d.find_element("id", "labels").get_attribute("value") == "app=train,tier!=dev")

        labels = driver.find_element("id", "labels")
        labels.clear()
        labels.send_keys("tier in (prod", Keys.ENTER)
        wait_for(driver, "why the selector is not valid", lambda d: "is never closed" in text_of(d, "selector-error"))
        assert "not valid" in text_of(driver, "jobflows") and driver.execute_script(ROWS) == []
        assert labels.get_attribute("aria-invalid") == "true"
    finally:
        cluster.delete_namespace(other)


def test_run_now_starts_a_run_that_appears_on_the_jobflowtemplate_page_then_suspend_and_resume_it(
        cluster: LocalCluster, namespace: str, engine, dashboard: Dashboard, driver) -> None:
    from selenium.webdriver.common.keys import Keys

    apply(cluster, namespace, template("a"))
    apply(cluster, namespace, NIGHTLY)
    driver.get(f"{dashboard.url}jobflowtemplates/{namespace}/nightly")
    wait_for(driver, "Run now enabled, Suspend enabled, Resume not", lambda d: text_of(d, "live") == "live"
             and d.find_element("id", "action-run").is_enabled() and d.find_element("id", "action-suspend")
             .is_enabled() and not d.find_element("id", "action-resume").is_enabled())
    assert driver.find_element("id", "param-0").get_attribute("value") == "0.01"  # the declared default
    tab_to(driver, "param-0")  # the form's field is reached with Tab too
    field = driver.find_element("id", "param-0")
    field.clear()
    field.send_keys("0.5")
    tab_to(driver, "action-run")
    press(driver, Keys.ENTER)
    wait_for(driver, "the answer", lambda d: text_of(d, "action-result").startswith("Started run:"))
    run = text_of(driver, "action-result").split("/", 1)[1].split(" ", 1)[0]
    wait_for(driver, "the run on the page, Succeed", lambda d: d.execute_script(
        "const r = document.querySelector(`#runs tr[data-jobflow='${arguments[0]}'] .badge`);"
        "return r && r.dataset.phase", run) == "Succeed", timeout=90)
    every_badge_says_its_state(driver)
    started = jobflow(cluster, namespace, run)
    assert started["spec"]["parameters"] == [{"name": "lr", "value": "0.5"}]

    tab_to(driver, "action-suspend")
    press(driver, Keys.SPACE)
    wait_for(driver, "suspended, Resume enabled", lambda d: text_of(d, "suspended") == "yes"
             and d.find_element("id", "action-resume").is_enabled()
             and not d.find_element("id", "action-suspend").is_enabled())
    assert cluster.custom.get_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace,
                                                       "jobflowtemplates", "nightly")["spec"]["suspend"] is True
    tab_to(driver, "action-resume")
    press(driver, Keys.ENTER)
    wait_for(driver, "resumed", lambda d: text_of(d, "suspended") == "no"
             and d.find_element("id", "action-suspend").is_enabled())
    assert text_of(driver, "action-result").startswith(f"Resumed JobFlowTemplate: {namespace}/nightly")


def test_stop_stops_a_running_jobflow_after_asking(
        cluster: LocalCluster, namespace: str, engine, dashboard: Dashboard, driver) -> None:
    from selenium.webdriver.common.keys import Keys

    apply(cluster, namespace, template("a", keep_running=True))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: long}\n"
                              "spec:\n  flows:\n  - {name: a}\n")
    driver.get(f"{dashboard.url}jobflows/{namespace}/long")
    wait_for(driver, "a running, Stop enabled", lambda d: node_states(d).get("a") == "Running"
             and d.find_element("id", "action-stop").is_enabled(), timeout=90)
    tab_to(driver, "action-stop")
    press(driver, Keys.ENTER)
    alert = wait_for(driver, "the confirmation", lambda d: d.switch_to.alert)
    assert alert.text.startswith(f"Stop {namespace}/long?")
    alert.accept()
    wait_for(driver, "the JobFlow Failed", lambda d: phase_on_page(d) == "Failed", timeout=90)
    assert jobflow(cluster, namespace, "long")["spec"]["shutdown"] == "Stop"
    assert not driver.find_element("id", "action-stop").is_enabled()
    every_badge_says_its_state(driver)
