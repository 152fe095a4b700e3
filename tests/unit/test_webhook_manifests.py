"""The pieces of ``manifests/webhook/`` fit together and with the app; checked without a cluster.

The registration calls paths the app answers, through the Service, which reaches the port gunicorn serves TLS on,
with the certificate from the Secret that make-cert.sh (or cert-manager) makes for the Service's name.
(tests/cluster/test_webhook.py runs make-cert.sh and the webhook against the real API server.)
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
from pathlib import Path

import yaml

from devcluster.processes import free_port
from handlers import create_app
from healthz import wait_for_healthz

REPO = Path(__file__).resolve().parents[2]
WEBHOOK = REPO / "manifests" / "webhook"
MAKE_CERT = WEBHOOK / "make-cert.sh"


def documents(*parts: str) -> dict[tuple[str, str], dict]:
    docs = [doc for part in parts for doc in yaml.safe_load_all((WEBHOOK / part).read_text()) if doc]
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in docs}


def base() -> dict[tuple[str, str], dict]:
    kustomization = yaml.safe_load((WEBHOOK / "base" / "kustomization.yaml").read_text())
    return documents(*(f"base/{file}" for file in kustomization["resources"]))


def container(objects: dict) -> dict:
    [only] = objects[("Deployment", "jobflow-admission")]["spec"]["template"]["spec"]["containers"]
    return only


def script_default(name: str) -> str:
    for line in MAKE_CERT.read_text().splitlines():
        if line.startswith(f"{name}=${{{name}:-"):
            return line.split(":-", 1)[1].rstrip("}")
    raise AssertionError(f"make-cert.sh has no default for {name}")


def test_the_registration_checks_creates_and_updates_of_each_kind_and_fails_closed():
    [config] = [doc for (kind, _), doc in base().items() if kind == "ValidatingWebhookConfiguration"]
    resources = []
    for hook in config["webhooks"]:
        [rule] = hook["rules"]
        assert rule["operations"] == ["CREATE", "UPDATE"]
        assert rule["apiGroups"] == ["flow.volcano.sh"] and rule["apiVersions"] == ["v1alpha1"]
        assert (hook["failurePolicy"], hook["sideEffects"], hook["admissionReviewVersions"]) == ("Fail", "None", ["v1"])
        assert hook["timeoutSeconds"] <= 5
        resources += rule["resources"]
    assert resources == ["jobflows", "jobtemplates", "jobflowtemplates"]  # not their status: the engine writes that


def test_the_registration_calls_paths_the_app_answers_through_the_service():
    objects = base()
    [config] = [doc for (kind, _), doc in objects.items() if kind == "ValidatingWebhookConfiguration"]
    service = objects[("Service", "jobflow-admission")]
    client = create_app().test_client()
    for hook in config["webhooks"]:
        target = hook["clientConfig"]["service"]
        assert (target["name"], target["namespace"]) == (service["metadata"]["name"], service["metadata"]["namespace"])
        assert target["port"] in [port["port"] for port in service["spec"]["ports"]]
        kind = {"jobflows": "JobFlow", "jobtemplates": "JobTemplate",
                "jobflowtemplates": "JobFlowTemplate"}[hook["rules"][0]["resources"][0]]
        reply = client.post(target["path"], json={
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
                "uid": "1", "operation": "CREATE", "object": {"metadata": {"name": "x"}},
                "kind": {"group": "flow.volcano.sh", "version": "v1alpha1", "kind": kind}}})
        assert reply.status_code == 200, target["path"]


def test_the_service_reaches_the_tls_port_with_the_certificate_of_the_secret_make_cert_makes():
    objects = base()
    service, admission = objects[("Service", "jobflow-admission")], container(objects)
    pod = objects[("Deployment", "jobflow-admission")]["spec"]["template"]["spec"]
    [port] = admission["ports"]
    assert [p["targetPort"] for p in service["spec"]["ports"]] == [port["name"]]
    assert {e["name"]: e["value"] for e in admission["env"]}["PORT"] == str(port["containerPort"])
    [tls] = [v for v in pod["volumes"] if "secret" in v]
    assert tls["secret"]["secretName"] == script_default("SECRET")
    [mount] = [m for m in admission["volumeMounts"] if m["name"] == tls["name"]]
    command = admission["command"]
    for flag, file in (("--certfile", "tls.crt"), ("--keyfile", "tls.key")):
        assert command[command.index(flag) + 1] == f"{mount['mountPath']}/{file}"
    assert script_default("SERVICE") == service["metadata"]["name"]
    assert script_default("NAMESPACE") == service["metadata"]["namespace"]
    assert script_default("WEBHOOK_CONFIGURATION") == "jobflow-admission"


CALLS = {"list_jobtemplates": ("flow.volcano.sh", "jobtemplates", "list"),
         "list_jobflowtemplates": ("flow.volcano.sh", "jobflowtemplates", "list"),
         "list_jobflows": ("flow.volcano.sh", "jobflows", "list"),
         "get_queue": ("scheduling.volcano.sh", "queues", "get"), "list_nodes": ("", "nodes", "list"),
         "get_crd": ("apiextensions.k8s.io", "customresourcedefinitions", "get")}
"""What each KubeApi call the webhook makes asks of RBAC."""


class Recording:
    """A MemoryKube that notes which of its calls were made."""

    def __init__(self, kube) -> None:
        self.kube, self.called = kube, []

    def __getattr__(self, name: str):
        self.called.append(name)
        return getattr(self.kube, name)


def test_the_webhook_account_has_a_token_and_may_only_read_what_its_capacity_warnings_read():
    """The warnings of a JobFlow that can never be scheduled read the JobTemplates, the queue and (a queue without
    capability) the nodes, the check of vcjob fields Volcano's vcjob CRD, the check of child flows the
    JobFlowTemplates, and that of JobFlows waiting for each other by name the JobFlows: the account's ClusterRole grants exactly those reads, and the pod gets the token."""
    from memory_kube import MemoryKube
    from scenario import template

    kube = MemoryKube()
    kube.queues["gpu"] = {"metadata": {"name": "gpu"}, "spec": {}}
    kube.nodes.append({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "6"},
                                                             "conditions": [{"type": "Ready", "status": "True"}]}})
    kube.put(template("a", spec="{minAvailable: 1, queue: gpu, tasks: [{name: t, replicas: 1, template: {spec: "
                                "{containers: [{name: c, image: busybox, resources: {requests: {cpu: 8}}}]}}}]}"
                      ).to_wire())
    recording = Recording(kube)
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u1", "kind": {"group": "flow.volcano.sh", "version": "v1alpha1", "kind": "JobFlow"},
        "operation": "CREATE", "namespace": "default", "object": {
            "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "x"},
            "spec": {"flows": [{"name": "a"}]}}}}
    answer = create_app({"KUBE": recording, "TESTING": True}).test_client().post("/validate/jobflows", json=review)
    assert "nodes' allocatable" in answer.json["response"]["warnings"][0]
    review["request"]["object"]["spec"]["flows"].append({"name": "k", "jobFlow": {"template": "prepare"}})
    answer = create_app({"KUBE": recording, "TESTING": True}).test_client().post("/validate/jobflows", json=review)
    assert any('JobFlowTemplate "prepare" does not exist' in w for w in answer.json["response"]["warnings"])
    review["request"]["object"]["spec"]["dependsOn"] = {"jobFlows": [{"name": "nightly"}]}  # the JobFlows are read
    answer = create_app({"KUBE": recording, "TESTING": True}).test_client().post("/validate/jobflows", json=review)
    assert answer.json["response"]["allowed"], answer.json
    used = {CALLS[name] for name in recording.called if name in CALLS}
    assert set(recording.called) <= set(CALLS) | {"api"}  # no other call
    objects = base()
    pod = objects[("Deployment", "jobflow-admission")]["spec"]["template"]["spec"]
    account = objects[("ServiceAccount", pod["serviceAccountName"])]
    assert pod.get("automountServiceAccountToken", True) and account.get("automountServiceAccountToken", True)
    binding = objects[("ClusterRoleBinding", "jobflow-admission")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                    "namespace": account["metadata"]["namespace"]}]
    role = objects[("ClusterRole", binding["roleRef"]["name"])]
    granted = {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
               for resource in rule["resources"] for verb in rule["verbs"]}
    assert granted == used
    assert not [kind for kind, _ in objects if kind in ("Role", "RoleBinding")]


def test_the_cert_manager_variant_makes_that_secret_for_the_service_and_injects_its_ca():
    certificate = documents("cert-manager/certificate.yaml")[("Certificate", "jobflow-admission")]
    kustomization = yaml.safe_load((WEBHOOK / "cert-manager" / "kustomization.yaml").read_text())
    [patch] = kustomization["patches"]
    annotation = yaml.safe_load(patch["patch"])[0]["value"]["cert-manager.io/inject-ca-from"]
    assert annotation == f"{certificate['metadata']['namespace']}/{certificate['metadata']['name']}"
    assert certificate["spec"]["secretName"] == script_default("SECRET")
    assert "jobflow-admission.volcano-jobflow.svc" in certificate["spec"]["dnsNames"]


FAKE_KUBECTL = """#!/bin/sh
# Records each call; answers the webhook count query as for a registration with two webhooks.
echo "$*" >> "$LOG"
case "$*" in *jsonpath*) printf xx ;; esac
"""


def run_make_cert(tmp_path: Path, **env: str) -> tuple[Path, str]:
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(FAKE_KUBECTL)
    kubectl.chmod(0o755)
    out, log = tmp_path / "out", tmp_path / "kubectl.log"
    subprocess.run([str(MAKE_CERT)], check=True, capture_output=True, text=True, env={
        "PATH": os.environ["PATH"], "KUBECTL": str(kubectl), "LOG": str(log), "OUT_DIR": str(out), **env})
    return out, log.read_text()


def test_make_cert_stores_the_secret_and_puts_its_ca_into_every_webhook(tmp_path: Path):
    out, calls = run_make_cert(tmp_path)
    assert "--namespace volcano-jobflow create secret tls jobflow-admission-tls --cert tls.crt --key tls.key" in calls
    assert "apply --filename -" in calls
    [patch_call] = [line for line in calls.splitlines() if line.startswith("patch validatingwebhookconfiguration")]
    patch = json.loads(patch_call.split("--patch ", 1)[1])
    bundle = base64.b64encode((out / "ca.crt").read_bytes()).decode()
    assert patch == [{"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": bundle} for i in (0, 1)]
    assert "rollout restart deployment jobflow-admission" in calls  # the fake says every object exists


def test_make_cert_makes_a_certificate_for_the_service_names_signed_by_the_ca(tmp_path: Path):
    out, _ = run_make_cert(tmp_path, NAMESPACE="jobs", EXTRA_SANS="IP:127.0.0.1")
    subprocess.run(["openssl", "verify", "-CAfile", out / "ca.crt", out / "tls.crt"], check=True, capture_output=True)
    text = subprocess.run(["openssl", "x509", "-in", out / "tls.crt", "-noout", "-ext", "subjectAltName"],
                          check=True, capture_output=True, text=True).stdout
    for name in ("jobflow-admission.jobs.svc", "jobflow-admission.jobs.svc.cluster.local"):
        assert f"DNS:{name}" in text
    assert "IP Address:127.0.0.1" in text


def test_the_admission_deployments_command_serves_healthz_over_tls(tmp_path: Path):
    out, _ = run_make_cert(tmp_path, EXTRA_SANS="DNS:localhost")
    admission = container(base())
    port = str(free_port())
    command = [arg.replace("$(PORT)", port).replace("/tls/", f"{out}/") for arg in admission["command"]]
    command[0] = str(Path(sys.executable).parent / command[0])
    server = subprocess.Popen(command, cwd=tmp_path, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    context = ssl.create_default_context(cafile=str(out / "ca.crt"))
    try:
        assert wait_for_healthz(f"https://localhost:{port}/", timeout=15, context=context, server=server) == b"ok"
    finally:
        server.terminate()
        server.wait(timeout=10)
