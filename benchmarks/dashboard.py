"""The dashboard under load, measured where users meet it: a 2,000-flow DAG in Chromium, and 50 live pages.

1. **Large DAG.** A JobFlow of 2,000 flows (``start`` -> 1,998 steps -> ``end``, plus a 1,000-item fan-out in a
   second JobFlow) is opened in headless Chromium: time from navigation to the DAG drawn (every flow a node),
   then the time a click on a node on screen takes to show its panel (the click handler and the next two frames,
   so the paint is included), and the time to open the fan-out's 1,000 items.
2. **50 live pages.** 50 clients hold ``/stream`` of one JobFlow open (server-sent events, as the pages do) while
   the JobFlow is patched 10 times (suspend/resume): for each change, the time from the patch's answer to each
   client receiving the new view; meanwhile a GET of the list page is timed, to show the server stays responsive.
   The clients are HTTP clients, not 50 browsers (50 Chromium tabs would measure Chromium on 2 cores, not the
   server). The server's CPU seconds and RSS are read from /proc.

Run: ``.venv/bin/python -m benchmarks.dashboard`` on a running ``make cluster`` (as root, or with Debian's chromium
and chromium-driver installed). Writes ``benchmarks/results/dashboard.json``.
"""

from __future__ import annotations

import http.client
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from benchmarks.common import connect, cpu_seconds, machine, new_namespace, percentile, proc_status, write_result
from devcluster.browser import ensure_browser

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "cluster"))
from browser import Listener, chrome, start_dashboard  # noqa: E402

PAGES = 50
CHANGES = 10

CLICK = """
const done = arguments[arguments.length - 1];
const node = document.getElementById(arguments[0]);
node.scrollIntoView();  // a user clicks what is on screen: scroll, let it paint, then click
requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => {
  const start = performance.now();
  node.dispatchEvent(new MouseEvent('click', {bubbles: true}));
  requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - start)));
}, 50)));
"""


OPEN_ITEMS = """
const done = arguments[arguments.length - 1];
const start = performance.now();
document.getElementById('show-items').click();
const wait = () => document.querySelectorAll('#items tbody tr').length === 1000
  ? requestAnimationFrame(() => done(performance.now() - start)) : setTimeout(wait, 5);
wait();
"""


def wide_jobflow(name: str, width: int) -> dict:
    flows = [{"name": "start"}] + [{"name": f"step-{i}", "dependsOn": {"targets": ["start"]}} for i in range(width)]
    flows.append({"name": "end", "dependsOn": {"targets": [f"step-{i}" for i in range(0, width, 50)]}})
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": name},
            "spec": {"flows": flows}}


def fan_out_jobflow(name: str, items: int) -> dict:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": name},
            "spec": {"flows": [{"name": "shard", "forEach": {"items": [str(i) for i in range(items)]}}]}}


def large_dag(local, namespace: str, url: str, *, runs: int = 3) -> dict:
    custom = local.custom
    custom.create_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows",
                                           wide_jobflow("wide", 1998))
    custom.create_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows",
                                           fan_out_jobflow("shards", 1000))
    chromium, driver_path = ensure_browser()
    driver = chrome(chromium, driver_path)
    renders, clicks = [], []
    try:
        for _ in range(runs):
            driver.get(f"{url}jobflows/{namespace}/wide")
            deadline = time.monotonic() + 60
            while not driver.execute_script("return document.body.dataset.rendered || null"):
                if time.monotonic() > deadline:
                    raise RuntimeError("the 2,000-flow page never rendered")
                time.sleep(0.05)
            count = driver.execute_script("return document.querySelectorAll('#dag .node').length")
            assert count == 2000, count
            renders.append(float(driver.execute_script("return Number(document.body.dataset.rendered)")))
            for node in ("node-step-10", "node-step-1000", "node-end"):
                clicks.append(driver.execute_async_script(CLICK, node))
        items = []
        for _ in range(runs):
            driver.get(f"{url}jobflows/{namespace}/shards")
            while not driver.execute_script("return document.getElementById('node-shard')"):
                time.sleep(0.05)
            driver.execute_async_script(CLICK, "node-shard")
            items.append(driver.execute_async_script(OPEN_ITEMS))
    finally:
        driver.quit()
    return {"flows": 2000, "render_ms": renders, "click_ms": clicks,
            "render_ms_median": statistics.median(renders), "click_ms_max": max(clicks),
            "open_1000_items_ms": items}


def live_pages(local, namespace: str, dashboard) -> dict:
    custom = local.custom
    custom.create_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows",
                                           wide_jobflow("live", 8))
    time.sleep(1)
    listeners = [Listener(dashboard.url, f"/stream?namespace={namespace}&name=live") for _ in range(PAGES)]
    for listener in listeners:
        listener.start()
    for listener in listeners:
        if not listener.ready.wait(30):
            raise RuntimeError("a live page got no first view within 30 s")
    pid = dashboard.process.pid
    cpu_before = cpu_seconds(pid)
    latencies, gets = [], []
    for change in range(CHANGES):
        counts = [len(listener.views) for listener in listeners]
        custom.patch_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows", "live",
                                              {"spec": {"suspend": change % 2 == 0}})
        patched = time.monotonic()
        started = time.monotonic()
        connection = http.client.HTTPConnection(urlsplit(dashboard.url).hostname, urlsplit(dashboard.url).port)
        connection.request("GET", "/api/jobflows")
        connection.getresponse().read()
        gets.append(time.monotonic() - started)
        deadline = patched + 10
        while any(len(l.views) <= c for l, c in zip(listeners, counts)) and time.monotonic() < deadline:
            time.sleep(0.01)
        latencies += [l.views[c][0] - patched for l, c in zip(listeners, counts) if len(l.views) > c]
        time.sleep(0.5)
    missed = PAGES * CHANGES - len(latencies)
    return {"pages": PAGES, "changes": CHANGES, "missed": missed,
            "update_ms_p50": percentile(latencies, 50) * 1000, "update_ms_p99": percentile(latencies, 99) * 1000,
            "update_ms_max": max(latencies) * 1000, "list_get_ms_max": max(gets) * 1000,
            "server_cpu_seconds": round(cpu_seconds(pid) - cpu_before, 2),
            "server_rss_mib": round(int(proc_status(pid, "VmRSS").split()[0]) / 1024, 1)}


def main() -> int:
    local = connect()
    namespace = new_namespace(local, "dashboard")
    dashboard = start_dashboard(local, "--namespace", namespace)
    try:
        result = {"machine": machine(), "large_dag": large_dag(local, namespace, dashboard.url),
                  "live_pages": live_pages(local, namespace, dashboard)}
    finally:
        dashboard.stop()
        local.delete_namespace(namespace)
    print(result)
    print(f"wrote {write_result('dashboard', result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
