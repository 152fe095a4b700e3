"""The README's copy-pasteable curl really drives the handler (behaviour 12 of the reconciler issue)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from devcluster.testing import LocalCluster
from objects import apply, jobflow, template, vcjobs

pytestmark = pytest.mark.cluster

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_curl() -> str:
    text = README.read_text()
    block = re.search(r"<!-- readme-curl-start -->\n```sh\n(.*?)```\n<!-- readme-curl-end -->", text, re.S)
    assert block, "the README lost its curl example markers"
    return block.group(1)


def test_the_readme_curl_reconciles_the_example_jobflow(cluster: LocalCluster, namespace: str, handler) -> None:
    assert shutil.which("curl"), "curl is needed for this test (Debian: apt-get install curl)"
    apply(cluster, namespace, template("a", run_for="30s") + "---\n"
          "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: test}\nspec: {flows: [{name: a}]}")
    command = readme_curl().replace("http://127.0.0.1:8080/", handler.url).replace("default", namespace)

    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60)

    head, _, body = result.stdout.replace("\r\n", "\n").partition("\n\n")
    assert head.startswith("HTTP/1.1 202"), result.stdout + result.stderr
    assert body == ""
    assert "test-a" in vcjobs(cluster, namespace)
    assert jobflow(cluster, namespace, "test")["status"]["pendingJobs"] == ["test-a"]
