"""The pieces of ``manifests/`` and the ``Dockerfile`` fit together; checked without a cluster.

The event source's K_SINK reaches the handler's Service, the Service reaches the port the probes use, every
Deployment (the dashboard's of ``manifests/dashboard/`` too) runs as a ServiceAccount that a ClusterRoleBinding grants
rights to, and the handler Deployment's command, run here as the container would run it, answers GET /healthz. The
dashboard's Service reaches the port its probe uses, it runs read-only, and its role only reads.
(tests/cluster/test_manifests.py checks the same manifests against the real API server; the install tier runs them.)
"""

from __future__ import annotations

import json
import re
import itertools
import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from devcluster.processes import free_port
from healthz import wait_for_healthz

REPO = Path(__file__).resolve().parents[2]
KUSTOMIZATIONS = ("manifests", "manifests/dashboard")
"""The kustomizations of plain objects (the webhook's has tests of its own: test_webhook_manifests.py)."""


def installed(kustomization: str = "manifests") -> dict[tuple[str, str], dict]:
    """Every object the kustomization lists, by (kind, name), read as written (kustomize only adds a label)."""
    directory = REPO / kustomization
    listed = yaml.safe_load((directory / "kustomization.yaml").read_text())
    docs = [doc for file in listed["resources"] for doc in yaml.safe_load_all((directory / file).read_text()) if doc]
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in docs}


def container(deployment: dict) -> dict:
    [only] = deployment["spec"]["template"]["spec"]["containers"]
    return only


def env(deployment: dict) -> dict[str, str]:
    return {item["name"]: item.get("value") for item in container(deployment).get("env", [])}  # None: valueFrom


def test_the_event_source_sends_its_events_to_the_handler_service() -> None:
    objects = installed()
    service = objects[("Service", "jobflow-handler")]
    sink = urlsplit(env(objects[("Deployment", "jobflow-eventsource")])["K_SINK"])

    assert sink.hostname == f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc.cluster.local"
    assert (sink.port or 80) in [port["port"] for port in service["spec"]["ports"]]


def test_the_handler_service_reaches_the_port_gunicorn_binds_and_the_probes_use() -> None:
    objects = installed()
    service, deployment = objects[("Service", "jobflow-handler")], objects[("Deployment", "jobflow-handler")]
    pod = deployment["spec"]["template"]
    handler = container(deployment)
    [port] = handler["ports"]

    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert [p["targetPort"] for p in service["spec"]["ports"]] == [port["name"]]
    assert str(port["containerPort"]) == env(deployment)["PORT"]
    assert "0.0.0.0:$(PORT)" in handler["command"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert handler[probe]["httpGet"] == {"path": "/healthz", "port": port["name"]}


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_every_deployment_runs_as_a_bound_service_account_in_its_namespace(kustomization: str) -> None:
    objects = installed(kustomization)
    bound = {(s["namespace"], s["name"]) for (kind, _), doc in objects.items() if kind == "ClusterRoleBinding"
             for s in doc["subjects"] if s["kind"] == "ServiceAccount"}
    for (kind, _), doc in objects.items():
        if kind == "Deployment":
            account = doc["spec"]["template"]["spec"]["serviceAccountName"]
            assert ("ServiceAccount", account) in objects
            assert (doc["metadata"]["namespace"], account) in bound


def test_the_dashboard_service_reaches_the_port_it_listens_on_and_the_probe_uses() -> None:
    objects = installed("manifests/dashboard")
    service, deployment = objects[("Service", "jobflow-dashboard")], objects[("Deployment", "jobflow-dashboard")]
    dashboard = container(deployment)
    [port] = dashboard["ports"]
    command = dashboard["command"]

    assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert [(p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [(80, port["name"])]
    assert command[:3] == ["python", "-m", "dashboard"]
    assert command[command.index("--port") + 1] == str(port["containerPort"])
    assert command[command.index("--address") + 1] == "0.0.0.0"
    assert dashboard["readinessProbe"]["httpGet"] == {"path": "/", "port": port["name"]}


def test_the_dashboard_runs_read_only_with_a_role_that_only_reads() -> None:
    objects = installed("manifests/dashboard")
    command = container(objects[("Deployment", "jobflow-dashboard")])["command"]
    rules = objects[("ClusterRole", "jobflow-dashboard")]["rules"]

    assert "--read-only" in command and "--user-header" not in command
    assert {verb for rule in rules for verb in rule["verbs"]} <= {"get", "list", "watch"}
    assert all("/" not in resource and "resourceNames" not in rule for rule in rules for resource in rule["resources"])


def test_the_dashboard_runs_the_handlers_image_as_the_handler_runs_it() -> None:
    dashboard = installed("manifests/dashboard")[("Deployment", "jobflow-dashboard")]
    handler = installed()[("Deployment", "jobflow-handler")]

    assert container(dashboard)["image"] == container(handler)["image"]
    assert (dashboard["spec"]["template"]["spec"]["securityContext"]
            == handler["spec"]["template"]["spec"]["securityContext"])
    assert container(dashboard)["securityContext"] == container(handler)["securityContext"]


def image_cmd() -> list[str]:
    """The Dockerfile's CMD (exec form, possibly continued over several lines)."""
    cmd = re.search(r"^CMD ((?:.*\\\n)*.*)$", (REPO / "Dockerfile").read_text(), re.MULTILINE).group(1)
    return json.loads(cmd.replace("\\\n", " "))


def test_the_image_runs_the_same_server_as_the_handler_deployment() -> None:
    command = container(installed()[("Deployment", "jobflow-handler")])["command"]

    # gunicorn binds 0.0.0.0:$PORT when no --bind is given, which is what the Deployment spells out.
    assert image_cmd() == [arg for arg in command if arg not in ("--bind", "0.0.0.0:$(PORT)")]


def test_the_image_runs_the_procfiles_web_line() -> None:
    [web] = [line.split(":", 1)[1] for line in (REPO / "Procfile").read_text().splitlines() if line.startswith("web:")]
    procfile = list(itertools.dropwhile(lambda word: "=" in word, shlex.split(web)))  # after its VAR=value words
    bind = procfile.index("--bind")

    assert image_cmd() == procfile[:bind] + procfile[bind + 2:]


def test_the_handler_deployments_command_answers_healthz(tmp_path: Path) -> None:
    deployment = installed()[("Deployment", "jobflow-handler")]
    port = str(free_port())
    # The kubelet expands $(PORT) from the container's env; here the port is a free one. gunicorn comes from this
    # interpreter's environment; HOME is the image's writable one (/tmp there).
    command = [arg.replace("$(PORT)", port) for arg in container(deployment)["command"]]
    command[0] = str(Path(sys.executable).parent / command[0])
    server = subprocess.Popen(command, cwd=tmp_path, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert wait_for_healthz(f"http://127.0.0.1:{port}/", timeout=15, server=server) == b"ok"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_every_manifest_deploys_the_image_make_image_tags_at_the_projects_version() -> None:
    from devcluster.image import manifest_image

    version = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.MULTILINE).group(1)
    named = {match for path in [*(REPO / "manifests").rglob("*.yaml"), *(REPO / "knative").rglob("*.yaml")]
             for match in re.findall(r"image: (ghcr\.io/volcano-jobflow/\S+)", path.read_text())}

    assert named == {manifest_image()}
    assert manifest_image().endswith(f":{version}")


def test_the_image_is_labelled_by_default_with_the_projects_version() -> None:
    version = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.MULTILINE).group(1)

    assert f"ARG VERSION={version}\n" in (REPO / "Dockerfile").read_text()


def test_the_event_source_serves_its_metrics_on_the_port_its_service_and_annotations_name() -> None:
    objects = installed()
    deployment = objects[("Deployment", "jobflow-eventsource")]
    service = objects[("Service", "jobflow-eventsource")]
    [port] = container(deployment)["ports"]

    assert env(deployment)["METRICS_PORT"] == str(port["containerPort"])
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert [(p["name"], p["targetPort"]) for p in service["spec"]["ports"]] == [("metrics", port["name"])]
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert (annotations["prometheus.io/scrape"], annotations["prometheus.io/port"]) == ("true", env(deployment)[
        "METRICS_PORT"])


def test_each_servicemonitor_selects_a_service_by_its_labels_and_names_a_port_it_has() -> None:
    services = installed()
    for monitor in installed("manifests/monitoring").values():
        matches = [svc for svc in services.values() if svc["kind"] == "Service" and
                   monitor["spec"]["selector"]["matchLabels"].items() <= (svc["metadata"].get("labels") or {}).items()]
        assert len(matches) == 1, monitor["metadata"]["name"]
        assert {e["port"] for e in monitor["spec"]["endpoints"]} <= {p["name"] for p in matches[0]["spec"]["ports"]}


def test_the_webhooks_disruption_budget_keeps_one_of_its_replicas() -> None:
    webhook = installed("manifests/webhook/base")
    budget = webhook[("PodDisruptionBudget", "jobflow-admission")]
    deployment = webhook[("Deployment", "jobflow-admission")]

    assert budget["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert 1 == budget["spec"]["minAvailable"] < deployment["spec"]["replicas"]
