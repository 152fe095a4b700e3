"""The browser tier's tools: the dashboard as users run it (``python -m dashboard``, a process of its own) and
Debian's headless Chromium driven through its chromedriver (selenium, the W3C WebDriver protocol).

Pages are waited on, never slept on: :func:`wait_for` polls a condition in the page (WebDriverWait, every 50 ms),
and :data:`RECORDER` keeps in the page every state each DAG node showed, so a test can assert the order a node
went through even when it passed through a state between two polls.
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from devcluster.testing import LocalCluster

T = TypeVar("T")
SCREENSHOTS = Path(__file__).resolve().parents[2] / ".devcluster" / "tests" / "screenshots"

RECORDER = """
window.__seen = window.__seen || {};
const note = () => {
  for (const g of document.querySelectorAll('#dag .node')) {
    const seen = (window.__seen[g.dataset.flow] = window.__seen[g.dataset.flow] || []);
    if (seen[seen.length - 1] !== g.dataset.state) seen.push(g.dataset.state);
  }
};
new MutationObserver(note).observe(document.getElementById('dag'), {childList: true, subtree: true});
note();
"""
"""Records, in the page, each node's states in the order shown (each re-render replaces the DAG's nodes)."""


@dataclass
class Dashboard:
    url: str
    process: subprocess.Popen

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start_dashboard(cluster: LocalCluster, *args: str) -> Dashboard:
    """``python -m dashboard`` on a free loopback port against the tests' cluster; returns once it listens."""
    process = subprocess.Popen([sys.executable, "-m", "dashboard", "--kubeconfig", str(cluster.state.kubeconfig),
                                "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines = []
    for line in process.stdout:
        lines.append(line)
        if "http://" in line:
            url = line.rsplit(" ", 1)[-1].strip()
            # keep draining its output, so a chatty server never blocks on a full pipe
            threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
            return Dashboard(url=url, process=process)
    process.wait(timeout=10)
    raise AssertionError("the dashboard did not start:\n" + "".join(lines))


def chrome(chromium: Path, chromedriver: Path, *, width: int = 1400, height: int = 1000):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={width},{height}", "--lang=en-US", "--disable-extensions",
                     "--no-first-run", "--password-store=basic"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(str(chromedriver)), options=options)


def wait_for(driver, what: str, condition: Callable[[Any], T], *, timeout: float = 60) -> T:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.05).until(condition)
    except TimeoutException:
        raise AssertionError(f"the page never showed {what} within {timeout:g}s; it shows:\n"
                             + driver.find_element("tag name", "body").text[:3000]) from None


def phase_on_page(driver) -> str | None:
    """The JobFlow page's phase, read in the page in one step: each update redraws the view, so an element found
    earlier may be gone."""
    return driver.execute_script("const t = document.getElementById('title'); return t ? t.dataset.phase : null")


def node_states(driver) -> dict[str, str]:
    return driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#dag .node')].map(g => [g.dataset.flow, "
        "g.dataset.state]))")


class Listener(threading.Thread):
    """One live page: reads the stream, timestamps every view it receives."""

    def __init__(self, url: str, path: str) -> None:
        super().__init__(daemon=True)
        self.url, self.path = urlsplit(url), path
        self.views: list[tuple[float, str]] = []
        self.ready = threading.Event()

    def run(self) -> None:
        connection = http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=120)
        connection.request("GET", self.path, headers={"Accept": "text/event-stream"})
        response = connection.getresponse()
        data = []
        while True:
            line = response.fp.readline()
            if not line:
                return
            text = line.decode().rstrip("\n")
            if text.startswith("data: "):
                data.append(text[6:])
            elif text == "" and data:
                self.views.append((time.monotonic(), "\n".join(data)))
                data = []
                self.ready.set()
