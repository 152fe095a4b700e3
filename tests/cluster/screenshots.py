"""``make screenshots``: the documentation's pictures of the dashboard, made again from the dashboard as it is.

It does what the browser tier does (``tests/cluster/browser.py``, ``engine.py``): the engine in-process,
``python -m dashboard -n default``, Debian's headless Chromium. In namespace ``default`` it runs what the README
shows: the demo's diamond (``examples/diamond/``, JobFlow ``test``), and a JobFlow with an approval gate, ``release``
(flows ``a`` -> ``approve`` -> ``e`` of the same JobTemplates). Two clusters, each started if it is not running and
stopped again if it was started here, unless JOBFLOW_KEEP_CLUSTER=1:

- the tests' control plane (``.devcluster/tests/``, kwok's nodes: the pods run for the example's
  ``kwok.jobflow.dev/run-for``, so the diamond takes seconds), for ``test`` applied by
  :func:`demo.__main__.apply_example` as ``make demo`` applies it, and ``release``:

  - ``dashboard-running.png``: ``test`` while c and d run, c's panel open;
  - ``dashboard-succeed.png``: ``test`` Succeed, the critical path starred, e's panel open;
  - ``dashboard-gate.png``: ``release`` waiting at its gate, the gate's panel with its Approve and Reject buttons;
  - ``dashboard-list.png``: the list, both JobFlows in it;
  - ``dashboard-child.png``: ``pipeline``, whose flow ``prep`` is a child JobFlow (made from JobFlowTemplate
    ``prepare``, applied after the list's picture) in its second step, its panel open;

- the install tier's cluster with its pod node (``.devcluster/tests-install/``, as the ``pods_cluster`` fixture
  starts it: the engine's image built and loaded there), for ``dashboard-logs.png``: kwok's pods run no container
  and write no logs, so the logs pane needs a real kubelet. There ``test`` runs the diamond's JobTemplates adapted
  (:func:`on_the_pod_node`): on the pod node, in the engine's image, each printing what a step of a training
  pipeline would (c trains, an epoch a line); the picture is c's logs pane while c runs.

The pod node needs root (podman, network namespaces, iptables): without it the command makes no picture and says
so, since the pictures are made together from one state of the dashboard's pages.

Each picture records the digest of the dashboard's pages and scripts (``tests/pictures.py``); the digest is taken
before and after, and nothing is written if the pages changed meanwhile. What it creates in ``default`` (the two
JobFlows, JobTemplates a..e, on the pod node's cluster the PriorityClass the engine wants if it was missing) is
deleted before (a fresh start, as the demo's first run) and after, their vcjobs and pods waited gone.

``make screenshots`` runs it (``PYTHONPATH=tests python tests/cluster/screenshots.py``: it imports the tests' helpers
as pytest does); it needs chromium and chromedriver, which it installs with apt-get as root, as the browser tier does.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from browser import chrome, node_states, phase_on_page, start_dashboard, wait_for
from demo.__main__ import EXAMPLE, NAMESPACE, apply_example
from devcluster import cluster as devcluster
from devcluster import image, objects, pod_node
from devcluster.browser import BrowserMissing, ensure_browser
from devcluster.build import BuildError
from devcluster.podman import PodmanError, is_root
from devcluster.testing import LocalCluster
from engine import start_engine
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE, PARENT
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
PIPELINE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {name: prepare}
spec:
  jobFlow:
    spec:
      parameters: [{name: dataset, value: none}]
      flows:
      - {name: fetch, jobTemplate: a}
      - name: clean
        jobTemplate: b
        dependsOn: {targets: [fetch]}
        patch: {jobSpec: {tasks: [{name: nginx, template: {metadata: {annotations: {kwok.jobflow.dev/run-for: 600s}}}}]}}
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: pipeline}
spec:
  flows:
  - {name: prep, jobFlow: {template: prepare, parameters: [{name: dataset, value: cats}]}}
  - {name: train, jobTemplate: e, dependsOn: {targets: [prep]}}
"""
"""For ``dashboard-child.png``: a JobFlow whose first flow is a child JobFlow, held in its second step."""
JOBFLOWS = ("test", "release", "pipeline")
JOBTEMPLATES = tuple("abcde")
JOBFLOWTEMPLATES = ("prepare",)

LOGS_PANE = "#logs-lines"
"""The logs pane's lines (``dashboard/static/logs.js``), opened by a flow panel's ``#show-logs``."""

EPOCHS = 10


def accuracy(epoch: int) -> float:
    return 0.92 - 0.55 * 0.7 ** epoch


def training() -> list[tuple[str, float]]:
    """c's lines: a made-up but plausible run, the same every time (the picture should not change by chance)."""
    lines = [(f"resnet-18 on 50000 images: {EPOCHS} epochs, batch 128, lr 0.1", 1.0)]
    lines += [(f"epoch {epoch:2}/{EPOCHS}  loss {2.3 * 0.78 ** epoch:.3f}  "
               f"val accuracy {accuracy(epoch):.1%}", 1.5) for epoch in range(1, EPOCHS + 1)]
    return lines + [(f"saved checkpoint model-{EPOCHS}.pt", 0.0)]


WHAT_EACH_FLOW_PRINTS: dict[str, tuple[str, list[tuple[str, float]]]] = {
    "a": ("fetch", [(f"fetched shard {n}/3: 20000 images", 1.0) for n in (1, 2, 3)]
          + [("dataset: 60000 images, 10 classes", 0.0)]),
    "b": ("prepare", [("normalised 60000 images (mean 0, std 1)", 1.0), ("split: 50000 train, 10000 test", 1.0),
                      ("wrote /data/prepared, 1.2 GB", 0.0)]),
    "c": ("train", training()),
    "d": ("baseline", [("logistic regression on the same split", 4.0), ("baseline val accuracy 39.8%", 0.0)]),
    "e": ("report", [(f"model-{EPOCHS}.pt: {accuracy(EPOCHS):.1%} val accuracy, baseline 39.8%: promoted", 0.0)]),
}
"""What each of the diamond's flows does on the pod node: its task's (and container's) name, and the lines it prints,
each with the seconds until the next (c's first epochs are on screen a few seconds after it starts)."""


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


def child_running(driver: Driver, url: str) -> bytes:
    driver.get(f"{url}jobflows/{NAMESPACE}/pipeline")
    open_panel(driver, "prep")
    wait_for(driver, "the child prep Running, one of its two flows ended", lambda d: live(d) and d.execute_script(
        "const n = document.getElementById('node-prep'); return n && n.textContent") and "1/2" in d.execute_script(
        "return document.getElementById('node-prep').textContent"), timeout=120)
    return driver.get_screenshot_as_png()


def the_list(driver: Driver, url: str) -> bytes:
    size = driver.get_window_size()
    driver.set_window_size(size["width"], 600)  # two rows: the rest of a full window would be empty
    try:
        driver.get(url)
        wait_for(driver, "both JobFlows in the list", lambda d: live(d) and all(
            name in d.find_element("id", "jobflows").text for name in ("test", "release")))
        return driver.get_screenshot_as_png()
    finally:
        driver.set_window_size(size["width"], size["height"])


def training_logs(driver: Driver, url: str) -> bytes:
    """c's logs pane while c trains: its first epochs shown under their prefix, the pane live."""
    driver.get(f"{url}jobflows/{NAMESPACE}/test")
    wait_for(driver, "c Running", lambda d: live(d) and node_states(d).get("c") == "Running", timeout=180)
    open_panel(driver, "c")
    # The panel is drawn again on every change of the JobFlow: the button is found and pressed in one step.
    wait_for(driver, "c's logs pane", lambda d: d.execute_script(
        "const b = document.querySelector('#show-logs[data-flow=\"c\"]'); if (b) b.click();"
        "const t = document.getElementById('logs-title'); return !!t && t.textContent === 'Logs of flow c'"))
    wait_for(driver, "five epochs in c's pane, c still Running", lambda d: d.execute_script(
        "return document.getElementById('logs-state').textContent") == "live" and d.execute_script(
        f"return document.querySelector('{LOGS_PANE}').innerText").count(f"/{EPOCHS}  loss") >= 5
        and node_states(d).get("c") == "Running", timeout=60)
    return driver.get_screenshot_as_png()


def on_the_pod_node(node: str) -> list[dict]:
    """The diamond's JobTemplates (examples/diamond/jobtemplates.yaml) as they run on the pod node: its taint
    tolerated, selected by hostname, the engine's image loaded there (``imagePullPolicy: Never``: there is no registry),
    whose ``python3`` prints :data:`WHAT_EACH_FLOW_PRINTS`; the rest (queue, scheduler, the CPU each asks) as it is."""
    templates = list(yaml.safe_load_all((EXAMPLE / "jobtemplates.yaml").read_text()))
    for template in templates:
        task_name, lines = WHAT_EACH_FLOW_PRINTS[template["metadata"]["name"]]
        [task] = template["spec"]["tasks"]
        pod = task["template"]
        pod.pop("metadata", None)  # kwok's run-for: the pod node's pods run their command
        [container] = pod["spec"]["containers"]
        script = f"import time\nfor line, pause in {lines!r}:\n    print(line, flush=True)\n    time.sleep(pause)\n"
        container.update(name=task_name, image=image.manifest_image(), imagePullPolicy="Never",
                         command=["python3", "-c", script])
        pod["spec"].update(nodeSelector={"kubernetes.io/hostname": node}, tolerations=[
            {"key": "jobflow.dev/pods", "operator": "Equal", "value": "true", "effect": "NoSchedule"}])
        task["name"] = task_name
    return templates


def the_diamond_on_the_pod_node(local: LocalCluster) -> None:
    [node] = [n.metadata.name for n in local.core.list_node().items if n.metadata.name.startswith("pods-")]
    for template in on_the_pod_node(node):
        local.custom.create_namespaced_custom_object(JOBTEMPLATE.group, JOBTEMPLATE.version, NAMESPACE,
                                                     JOBTEMPLATE.plural, template)
    jobflow = yaml.safe_load((EXAMPLE / "jobflow.yaml").read_text())
    local.custom.create_namespaced_custom_object(JOBFLOW.group, JOBFLOW.version, NAMESPACE, JOBFLOW.plural, jobflow)
    log(f"applied JobFlow test in {NAMESPACE} on {local.state.server}, its JobTemplates on node {node}")


def the_demo_and_the_gate(local: LocalCluster) -> None:
    apply_example(local)
    apply(local, NAMESPACE, GATE)
    log(f"applied {EXAMPLE.relative_to(devcluster.REPO)} (JobFlow test) and JobFlow release in {NAMESPACE}")


def the_pipeline(local: LocalCluster) -> None:
    apply(local, NAMESPACE, PIPELINE)
    log(f"applied JobFlowTemplate prepare and JobFlow pipeline in {NAMESPACE}")


def delete_what_it_made(local: LocalCluster) -> None:
    """The JobFlows and JobTemplates of :data:`JOBFLOWS` and :data:`JOBTEMPLATES` in ``default``, waited gone, and
    their vcjobs and pods (the garbage collector deletes them after their JobFlow)."""
    for api_type, names in ((JOBFLOW, JOBFLOWS), (JOBTEMPLATE, JOBTEMPLATES), (JOBFLOWTEMPLATE, JOBFLOWTEMPLATES)):
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

    def ours(name: str) -> bool:
        return name.startswith(tuple(f"{flow}-" for flow in JOBFLOWS))

    def none_left() -> bool:
        vcjobs = local.custom.list_namespaced_custom_object("batch.volcano.sh", "v1alpha1", NAMESPACE, "jobs")
        pods = local.core.list_namespaced_pod(NAMESPACE).items
        return not any(ours(name) for name in [item["metadata"]["name"] for item in vcjobs["items"]]
                       + [pod.metadata.name for pod in pods])

    release_children(local)
    local.wait_until(f"their vcjobs and pods deleted from {NAMESPACE}", none_left, timeout=90)


def release_children(local: LocalCluster) -> None:
    """The child JobFlows of ``pipeline`` keep the engine's finalizer when the engine stopped before their parent
    was deleted: let go, as ``kubectl jobflow release`` does."""
    listed = local.custom.list_namespaced_custom_object(JOBFLOW.group, JOBFLOW.version, NAMESPACE, JOBFLOW.plural,
                                                        label_selector=PARENT)["items"]
    for child in listed:
        if child["metadata"]["name"].startswith(tuple(f"{flow}-" for flow in JOBFLOWS)):
            local.custom.patch_namespaced_custom_object(JOBFLOW.group, JOBFLOW.version, NAMESPACE, JOBFLOW.plural,
                                                        child["metadata"]["name"], {"metadata": {"finalizers": None}})


def missing_priority_classes(local: LocalCluster) -> list[str]:
    """The PriorityClasses of manifests/priorityclasses.yaml this cluster lacks (the install tier's cluster has them
    only while the manifests are applied): without them the engine warns in every started JobFlow's status, which the
    picture would show."""
    scheduling = client.SchedulingV1Api(local.api)
    present = {item.metadata.name for item in scheduling.list_priority_class().items}
    return [doc["metadata"]["name"] for doc in yaml.safe_load_all(devcluster.PRIORITY_CLASSES.read_text())
            if doc and doc.get("kind") == "PriorityClass" and doc["metadata"]["name"] not in present]


Step = Callable[["Driver", str], bytes]
ON_KWOK: tuple[tuple[str, Step], ...] = (
    ("dashboard-running.png", diamond_running),
    ("dashboard-succeed.png", diamond_succeed),
    ("dashboard-gate.png", gate_waiting),
    ("dashboard-list.png", the_list),
    ("dashboard-child.png", child_running),
)
ON_THE_POD_NODE: tuple[tuple[str, Step], ...] = ((LOGS_PICTURE, training_logs),)


def capture(local: LocalCluster, chromium: Path, chromedriver: Path, *, create: Callable[[LocalCluster], None],
            steps: tuple[tuple[str, Step], ...]) -> dict[str, bytes]:
    """The engine and the dashboard on ``local``, what ``create`` creates, then each step's picture, in order."""
    engine = start_engine(local, NAMESPACE)
    dashboard = start_dashboard(local, "--namespace", NAMESPACE)
    driver = chrome(chromium, chromedriver)
    taken: dict[str, bytes] = {}
    try:
        create(local)
        for name, step in steps:
            if step is child_running:  # after the list's picture, which shows the two JobFlows above only
                the_pipeline(local)
            started = time.monotonic()
            taken[name] = step(driver, dashboard.url)
            log(f"{name}: taken ({time.monotonic() - started:.1f} s)")
    finally:
        driver.quit()
        dashboard.stop()
        engine.stop()
    return taken


def on_kwok(chromium: Path, chromedriver: Path) -> dict[str, bytes]:
    with ExitStack() as undo:  # in reverse order, each even if one before it failed
        state, started_here = devcluster.up(devcluster.TEST_ROOT, log=log)
        if started_here and not os.environ.get("JOBFLOW_KEEP_CLUSTER"):
            undo.callback(devcluster.down, devcluster.TEST_ROOT, log=lambda line: None)
        local = LocalCluster(state)
        undo.callback(local.close)
        delete_what_it_made(local)
        undo.callback(delete_what_it_made, local)
        return capture(local, chromium, chromedriver, create=the_demo_and_the_gate, steps=ON_KWOK)


def on_the_pod_nodes_cluster(chromium: Path, chromedriver: Path) -> dict[str, bytes]:
    """As the ``pods_cluster`` fixture (tests/cluster/conftest.py): the image of this tree, the cluster with the pod
    node, the image loaded on it; and the PriorityClasses the engine wants, if missing, for as long as it runs."""
    built = image.ensure_image(log=log)
    with ExitStack() as undo:
        state, started_here = devcluster.up(devcluster.INSTALL_ROOT, log=log, pods=True)
        if started_here and not os.environ.get("JOBFLOW_KEEP_CLUSTER"):
            undo.callback(devcluster.down, devcluster.INSTALL_ROOT, log=lambda line: None)
        local = LocalCluster(state)
        undo.callback(local.close)
        pod_node.load_image(state, built)
        delete_what_it_made(local)
        for name in missing_priority_classes(local):
            undo.callback(client.SchedulingV1Api(local.api).delete_priority_class, name)
        objects.install_priority_classes(local.api, devcluster.PRIORITY_CLASSES)
        undo.callback(delete_what_it_made, local)
        return capture(local, chromium, chromedriver, create=the_diamond_on_the_pod_node, steps=ON_THE_POD_NODE)


def main() -> int:
    started = time.monotonic()
    if not is_root():
        print(f"screenshots: {LOGS_PICTURE} (the logs pane) needs root: its pods run on the pod node, which needs "
              "podman and network namespaces (docs/control-plane.md, \"The pod node\"); run `sudo make screenshots` "
              "(CI runs it as root). No picture was made: they are made together, from one state of the dashboard's "
              "pages", file=sys.stderr)
        return 1
    # The engine runs in this process: its INFO lines (one per event) would bury the steps' own; set before the
    # handler's app sets INFO for a process with no logging configured.
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "WARNING"), format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("werkzeug").setLevel(logging.root.level)  # it would set INFO on itself otherwise
    try:
        chromium, chromedriver = ensure_browser(log=log)
    except BrowserMissing as error:
        print(f"screenshots: {error}", file=sys.stderr)
        return 1
    digest = dashboard_digest()
    taken: dict[str, bytes] = {}
    for where, take in (("the tests' control plane", on_kwok), ("the pod node's cluster", on_the_pod_nodes_cluster)):
        try:
            taken |= take(chromium, chromedriver)
        except (BuildError, devcluster.ClusterError, PodmanError) as error:  # each says what failed, what to do
            print(f"screenshots: {where} could not start; no picture was written:\n{error}", file=sys.stderr)
            return 1
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
