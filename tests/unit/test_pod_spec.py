"""The pod node reads a pod spec as the kubelet does (``devcluster/pods/spec.py``): the rules a manifest relies on.

The install tier shows the manifests' pods running; these pin down the reading itself, where a mistake would let a
wrong manifest pass (a ``$(PORT)`` left unexpanded, a root user admitted under ``runAsNonRoot``, a writable root).
"""

from __future__ import annotations

import json

import pytest
import yaml

from devcluster.pods import spec
from devcluster.pods.probes import ProbeState, check_supported

POD = yaml.safe_load("""
metadata: {name: web-1, namespace: team-a, uid: u-1, labels: {app: web}}
spec:
  serviceAccountName: web
  nodeName: pods-1
  securityContext: {runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001}
  containers:
  - name: web
    image: example/web:1
    command: [server, --port, "$(PORT)", --literal, "$$(PORT)", --unknown, "$(NOPE)"]
    args: [--name, "$(POD_NAME)"]
    env:
    - {name: PORT, value: "8080"}
    - {name: URL, value: "http://$(POD_IP):$(PORT)/"}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: APP, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
    - {name: MEMORY, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    resources: {limits: {memory: 256Mi}}
    ports: [{name: http, containerPort: 8080}]
    securityContext: {readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
status: {podIP: 10.244.1.7, hostIP: 10.245.1.2}
""")


def env() -> dict[str, str]:
    return spec.container_env(POD, POD["spec"]["containers"][0], services={}, lookup=lambda *_: None)


def test_env_values_see_earlier_variables_only_and_field_refs_read_the_pod() -> None:
    values = env()

    assert values["URL"] == "http://$(POD_IP):8080/"  # POD_IP comes later in the list, so it is not expanded
    assert (values["POD_NAME"], values["POD_IP"], values["APP"]) == ("web-1", "10.244.1.7", "web")
    assert values["MEMORY"] == "256"


def test_command_and_args_expand_variables_and_keep_escapes_and_unknown_names() -> None:
    args = spec.run_args(POD, POD["spec"]["containers"][0], env=env(), image_user="10001:10001", mounts=[])
    entrypoint = json.loads(args[args.index("--entrypoint") + 1])

    assert entrypoint == ["server", "--port", "8080", "--literal", "$(PORT)", "--unknown", "$(NOPE)"]
    assert args[-3:] == ["example/web:1", "--name", "web-1"]


def test_the_security_context_leaves_nothing_writable_but_volumes() -> None:
    args = spec.run_args(POD, POD["spec"]["containers"][0], env={}, image_user="", mounts=[])

    assert ["--user", "10001:10001"] == args[args.index("--user"):args.index("--user") + 2]
    assert "--read-only" in args and "--read-only-tmpfs=false" in args
    assert ["--cap-drop", "ALL"] == args[args.index("--cap-drop"):args.index("--cap-drop") + 2]
    assert "no-new-privileges" in args and str(256 * 2**20) in args


@pytest.mark.parametrize("context, image_user, refused", [
    ({"runAsNonRoot": True}, "0", "image will run as root"),
    ({"runAsNonRoot": True}, "jobflow", "non-numeric user"),
    ({"runAsNonRoot": True}, "", "non-numeric user"),
    ({"runAsNonRoot": True, "runAsUser": 0}, "10001", "image will run as root"),
])
def test_run_as_non_root_refuses_what_the_kubelet_refuses(context: dict, image_user: str, refused: str) -> None:
    with pytest.raises(spec.SpecError, match=refused):
        spec.user_flag(context, image_user)


def test_run_as_non_root_admits_a_numeric_image_user() -> None:
    assert spec.user_flag({"runAsNonRoot": True}, "10001:10001") == []


def test_services_give_the_kubelets_variables_and_hosts_lines() -> None:
    services = [{"metadata": {"name": "jobflow-handler", "namespace": "team-a"},
                 "spec": {"clusterIP": "10.96.1.20", "ports": [{"name": "http", "port": 80}]}},
                {"metadata": {"name": "other", "namespace": "team-b"},
                 "spec": {"clusterIP": "10.96.1.21", "ports": [{"port": 443}]}}]

    variables = spec.service_env(services[:1], kubernetes=("10.96.1.1", 443))
    hosts = spec.hosts_file(POD, "10.244.1.7", services)

    assert variables["KUBERNETES_SERVICE_HOST"] == "10.96.1.1"
    assert variables["JOBFLOW_HANDLER_SERVICE_PORT_HTTP"] == "80"
    assert "10.244.1.7\tweb-1" in hosts
    assert ("10.96.1.20\tjobflow-handler.team-a.svc.cluster.local\tjobflow-handler.team-a.svc\tjobflow-handler.team-a"
            "\tjobflow-handler") in hosts
    assert "other.team-b.svc.cluster.local\tother.team-b.svc\tother.team-b\n" in hosts  # no short name elsewhere


def test_probes_act_after_their_thresholds() -> None:
    probe = ProbeState({"periodSeconds": 5, "failureThreshold": 2, "initialDelaySeconds": 3}, started=100.0)

    assert not probe.due(102.0) and probe.due(103.0)
    probe.record(False, 103.0)
    assert not probe.failed and probe.next_due == 108.0
    probe.record(False, 108.0)
    assert probe.failed
    probe.record(True, 113.0)
    assert probe.success and not probe.failed


def test_a_probe_on_an_undeclared_port_name_is_refused_before_the_start() -> None:
    with pytest.raises(spec.SpecError, match="not a named port"):
        check_supported({"httpGet": {"path": "/healthz", "port": "https"}}, POD["spec"]["containers"][0])
