"""Admission on the real API server: it calls our webhook over HTTPS on loopback, and the CEL rules hold alone.

The webhook is ``handlers.create_app()`` served with TLS in this process; its certificate and the registration's
caBundle come from ``manifests/webhook/make-cert.sh`` itself, run against the API server (with ``127.0.0.1`` as an
extra name, since the API server reaches it by URL). Then, as a user with kubectl or the Python client would see it:
every bad object is refused with its message and not stored, good objects are stored, and updates that vcjobs
created earlier will not see come back with a ``Warning``.

The API server is shared with other test runs, so the registration cannot touch anyone else's objects: it has a
name unique to this run, it matches only namespaces carrying a label whose value is unique to this run (the ones
created here), and it is deleted before the server stops, whatever happens.

The CRDs' CEL rules are checked on a copy of ``manifests/crds/jobflows.yaml`` under a group of its own (no webhook
has rules for it): changing the shared JobFlow CRD would change it for everyone.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import ssl
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException
from werkzeug.serving import make_server

from devcluster.processes import free_port
from devcluster.testing import LocalCluster
from handlers import create_app
from objects import one_pod_vcjob, served_crd
from pod_security import enforce_restricted

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
FLOW = ("flow.volcano.sh", "v1alpha1")
KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
RUN_LABEL = "jobflow.dev/admission-run"
DENIED_BY = 'admission webhook "{}.admission.jobflow.volcano.sh" denied the request'


@dataclass
class Webhook:
    url: str
    ca: Path
    label: dict[str, str]
    """The namespace label the registration matches."""
    namespace: str
    """A namespace carrying that label."""


def kubectl(cluster: LocalCluster, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([KUBECTL, f"--kubeconfig={cluster.state.kubeconfig}", *args], input=stdin,
                          capture_output=True, text=True, timeout=60)


def registration(name: str, *, port: int, label: dict[str, str]) -> dict:
    """manifests/webhook's ValidatingWebhookConfiguration, pointed at a loopback URL and scoped to ``label``."""
    [config] = [doc for doc in yaml.safe_load_all((REPO / "manifests/webhook/base/validating-webhook.yaml").read_text())
                if doc]
    config["metadata"] = {"name": name}
    for hook in config["webhooks"]:
        path = hook["clientConfig"]["service"]["path"]
        hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}"}
        hook["namespaceSelector"] = {"matchLabels": label}
    return config


def create_namespace(cluster: LocalCluster, labels: dict[str, str]) -> str:
    name = f"adm-{uuid.uuid4().hex[:10]}"
    cluster.core.create_namespace({"metadata": {"name": name, "labels": labels}})
    return name


def create(cluster: LocalCluster, namespace: str, text: str, *, dry_run: bool = False) -> dict:
    doc = yaml.safe_load(text)
    plural = {"JobFlow": "jobflows", "JobTemplate": "jobtemplates", "JobFlowTemplate": "jobflowtemplates"}[doc["kind"]]
    group, version = doc["apiVersion"].split("/")
    return cluster.custom.create_namespaced_custom_object(group, version, namespace, plural, doc,
                                                          **({"dry_run": "All"} if dry_run else {}))


def refusal(call: Callable[[], object]) -> tuple[int, str]:
    with pytest.raises(ApiException) as raised:
        call()
    return raised.value.status, json.loads(raised.value.body)["message"]


CYCLE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: cycle}
spec:
  flows:
  - {name: a, dependsOn: {targets: [c]}}
  - {name: b, dependsOn: {targets: [a]}}
  - {name: c, dependsOn: {targets: [b]}}
"""


def webhook_answers(cluster: LocalCluster, namespace: str) -> bool:
    """A dry-run create of a cycle (which no CEL rule sees) is refused by our webhook."""
    try:
        create(cluster, namespace, CYCLE, dry_run=True)
    except ApiException as error:
        return error.status == 422 and "jobflow Flow is not DAG: a -> c -> b -> a" in json.loads(error.body)["message"]
    return False


@pytest.fixture(scope="module")
def webhook(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    run = uuid.uuid4().hex[:10]
    label = {RUN_LABEL: run}
    port = free_port()
    name = f"jobflow-admission-test-{run}"
    admission = client.AdmissionregistrationV1Api(cluster.api)
    namespace = create_namespace(cluster, label)
    server = None
    try:
        admission.create_validating_webhook_configuration(registration(name, port=port, label=label))
        out = tmp_path_factory.mktemp("tls")
        made = subprocess.run([str(REPO / "manifests/webhook/make-cert.sh")], capture_output=True, text=True,
                              timeout=60, env={**os.environ, "KUBECONFIG": str(cluster.state.kubeconfig),
                                               "KUBECTL": KUBECTL, "NAMESPACE": namespace, "OUT_DIR": str(out),
                                               "WEBHOOK_CONFIGURATION": name, "EXTRA_SANS": "IP:127.0.0.1"})
        assert made.returncode == 0, made.stderr
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(out / "tls.crt", out / "tls.key")
        server = make_server("127.0.0.1", port, create_app(), threaded=True, ssl_context=tls)
        threading.Thread(target=server.serve_forever, name="admission", daemon=True).start()
        cluster.wait_until("the API server to call the new webhook", lambda: webhook_answers(cluster, namespace),
                           timeout=30)
        yield Webhook(url=f"https://127.0.0.1:{port}", ca=out / "ca.crt", label=label, namespace=namespace)
    finally:
        try:
            admission.delete_validating_webhook_configuration(name)
        except ApiException as error:
            if error.status != 404:
                raise
        if server is not None:
            server.shutdown()
        cluster.delete_namespace(namespace)


def test_make_cert_stored_the_secret_and_the_ca_the_api_server_trusts(cluster: LocalCluster, webhook: Webhook):
    secret = cluster.core.read_namespaced_secret("jobflow-admission-tls", webhook.namespace)
    assert secret.type == "kubernetes.io/tls"


# ---------------------------------------------------------------------------------------------------------------
# JobFlows

def jobflow(name: str, flows: str) -> str:
    return f"apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {{name: {name}}}\nspec: {{flows: {flows}}}"


BAD_JOBFLOWS = {
    # What the CRD's CEL rules catch as well (on a cluster whose CRD has them, they answer first, in the same words).
    "an undefined target": (jobflow("undefined", "[{name: a, dependsOn: {targets: [x, y]}}]"),
                            "jobflow Flow is not DAG: vertex is not defined: x"),
    "a flow depending on itself": (jobflow("selfish", "[{name: a}, {name: b, dependsOn: {targets: [a, b]}}]"),
                                   "jobflow Flow is not DAG: b -> b"),
    "a repeated flow name": (jobflow("twice", "[{name: a}, {name: b}, {name: a}]"), "each flow must be unique"),
    # Only the webhook's.
    "a cycle": (CYCLE, "jobflow Flow is not DAG: a -> c -> b -> a"),
    "a vcjob name over 63 characters": (jobflow("long", f"[{{name: {'x' * 59}}}]"),
                                        f'vcjob name "long-{"x" * 59}" of flow "{"x" * 59}" is not a DNS-1123 label'),
    "a label value over 63 characters": (jobflow("j" * 52, "[]"), "label volcano.sh/createdByJobFlow value"),
    "a probe on port 0": (
        jobflow("port", "[{name: a}, {name: b, dependsOn: {targets: [a], probe: {tcpSocketList: "
                        "[{taskName: web, port: 0}]}}}]"),
        'flow "b": dependsOn.probe.tcpSocketList[0].port 0 is not a port from 1 to 65535'),
    "a probe for a phase pods never have": (
        jobflow("phase", "[{name: a}, {name: b, dependsOn: {targets: [a], probe: {taskStatusList: "
                         "[{taskName: worker, phase: Done}]}}}]"),
        'flow "b": dependsOn.probe.taskStatusList[0].phase "Done" is not a pod phase'),
    "a result of a flow that is not a target": (
        jobflow("reads", "[{name: a}, {name: b, patch: {jobSpec: {tasks: [{name: t, template: {spec: {containers: "
                         "[{name: c, args: ['{{targets.a.result}}']}]}}}]}}}]"),
        'flow "b": {{targets.a.result}} reads "a", which is not among its targets, directly or through them'),
    "a result as an image": (
        jobflow("image", "[{name: a}, {name: b, dependsOn: {targets: [a]}, patch: {jobSpec: {tasks: [{name: t, "
                         "template: {spec: {containers: [{name: c, image: '{{targets.a.result}}'}]}}}]}}}]"),
        "patch.jobSpec.tasks[0].template.spec.containers[0].image, where a result may not go"),
    "a when calling a function the engine does not have": (
        jobflow("unknown-function",
                "[{name: a}, {name: b, dependsOn: {targets: [a]}, when: 'jobflow.name.toLower() == \"x\"'}]"),
        "toLower() at column 14 is not a function here in 'jobflow.name.toLower() == \"x\"' (besides CEL's standard "
        "functions, those of Kubernetes' CEL libraries are: add, asApproximateFloat, asInteger, charAt, compareTo, "
        "find, findAll, indexOf, isGreaterThan, isInteger, isLessThan, isQuantity, isSorted, join, lastIndexOf, "
        "lowerAscii, max, min, quantity, replace, sign, slice, split, sub, substring, sum, trim, upperAscii)"),
}
CEL_TOO = {"an undefined target", "a flow depending on itself", "a repeated flow name"}


def jobflowtemplate(name: str, schedule: str, time_zone: str = "UTC") -> str:
    return (f"apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlowTemplate\nmetadata: {{name: {name}}}\n"
            f"spec: {{schedule: '{schedule}', timeZone: {time_zone}, jobFlow: {{spec: {{flows: [{{name: a}}]}}}}}}")


@pytest.mark.parametrize("text, expected", [
    (jobflowtemplate("minute", "61 * * * *"), "schedule '61 * * * *': minute: 61 is out of range 0-59"),
    (jobflowtemplate("fields", "0 2 * *"), "has 4 field(s); write five"),
    (jobflowtemplate("zone", "0 2 * * *", "Mars/Olympus"), "timeZone 'Mars/Olympus' is not an IANA time zone name"),
    (jobflowtemplate("typo", "0 2 * * *").replace("flows: [{name: a}]", "flows: [{name: a, dependOn: {}}]"),
     "spec.jobFlow.spec.flows[0].dependOn: unknown field (did you mean dependsOn?)"),
])
def test_a_jobflowtemplate_with_a_bad_cron_or_time_zone_is_refused_with_its_message(
        cluster: LocalCluster, webhook: Webhook, text: str, expected: str):
    status, message = refusal(lambda: create(cluster, webhook.namespace, text))
    assert status == 422 and message.startswith(DENIED_BY.format("jobflowtemplates") + ": ") and expected in message
    assert create(cluster, webhook.namespace, jobflowtemplate("good", "0 2 * * *", "Europe/Berlin"), dry_run=True)


@pytest.mark.parametrize("what", list(BAD_JOBFLOWS))
def test_a_bad_jobflow_is_refused_with_its_message_and_not_stored(cluster: LocalCluster, webhook: Webhook, what):
    text, expected = BAD_JOBFLOWS[what]
    status, message = refusal(lambda: create(cluster, webhook.namespace, text))
    assert status == 422
    assert expected in message
    if what not in CEL_TOO:
        assert message.startswith(DENIED_BY.format("jobflows") + ": ")
        assert "(" in message.removeprefix(DENIED_BY.format("jobflows"))  # followed by what to do
    name = yaml.safe_load(text)["metadata"]["name"]
    assert refusal(lambda: cluster.custom.get_namespaced_custom_object(*FLOW, webhook.namespace, "jobflows",
                                                                       name))[0] == 404


def annotated(name: str, key: str) -> str:
    """A JobFlow whose flow ``b`` puts its target ``a``'s result into the pod annotation ``key``."""
    return jobflow(name, "[{name: a}, {name: b, dependsOn: {targets: [a]}, patch: {jobSpec: {tasks: [{name: t, "
                         f"template: {{metadata: {{annotations: {{'{key}': '{{{{targets.a.result}}}}'}}}}}}}}]}}}}}}]")


def test_a_result_may_go_into_an_ordinary_pod_annotation_but_not_one_under_a_reserved_domain(
        cluster: LocalCluster, webhook: Webhook):
    reserved = "container.apparmor.security.beta.kubernetes.io/main"
    status, message = refusal(lambda: create(cluster, webhook.namespace, annotated("apparmor", reserved)))
    assert status == 422 and message.startswith(DENIED_BY.format("jobflows") + ": ")
    assert (f'flow "b": {{{{targets.a.result}}}} stands in patch.jobSpec.tasks[0].template.metadata.annotations.'
            f"{reserved}, where a result may not go") in message
    assert ("a pod annotation (not one under kubernetes.io, k8s.io, volcano.sh or istio.io): pass it there and let "
            "the container use it") in message
    assert refusal(lambda: cluster.custom.get_namespaced_custom_object(*FLOW, webhook.namespace, "jobflows",
                                                                       "apparmor"))[0] == 404

    stored = create(cluster, webhook.namespace, annotated("ordinary", "example.com/input"))
    task = stored["spec"]["flows"][1]["patch"]["jobSpec"]["tasks"][0]
    assert task["template"]["metadata"]["annotations"] == {"example.com/input": "{{targets.a.result}}"}


def test_the_seed_example_is_admitted(cluster: LocalCluster, webhook: Webhook):
    for path in ("examples/diamond/jobtemplates.yaml", "examples/diamond/jobflow.yaml"):
        result = kubectl(cluster, "apply", "--namespace", webhook.namespace, "-f", str(REPO / path))
        assert result.returncode == 0, result.stderr
        assert "Warning" not in result.stderr


def layered(name: str, count: int) -> str:
    """Two flows per layer, each depending on both flows of the layer before (upstream's worst case)."""
    flows = [{"name": f"f{i}", **({"dependsOn": {"targets": [f"f{2 * (i // 2) - 2}", f"f{2 * (i // 2) - 1}"]}}
                                  if i >= 2 else {})} for i in range(count)]
    return yaml.safe_dump({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": name},
                           "spec": {"flows": flows}})


def test_a_2000_flow_layered_dag_is_admitted(cluster: LocalCluster, webhook: Webhook):
    create(cluster, webhook.namespace, layered("layered", 2000), dry_run=True)


def test_an_update_that_makes_a_jobflow_invalid_is_refused(cluster: LocalCluster, webhook: Webhook):
    create(cluster, webhook.namespace, jobflow("grows", "[{name: a}, {name: b, dependsOn: {targets: [a]}}]"))

    result = kubectl(cluster, "patch", "jobflow", "grows", "--namespace", webhook.namespace, "--type", "json",
                     "--patch", '[{"op": "add", "path": "/spec/flows/0/dependsOn", "value": {"targets": ["b"]}}]')

    assert result.returncode != 0
    assert f"{DENIED_BY.format('jobflows')}: jobflow Flow is not DAG: a -> b -> a" in result.stderr


def test_changing_the_patch_of_a_flow_whose_vcjob_exists_warns_kubectl_that_the_vcjob_will_not_change(
        cluster: LocalCluster, webhook: Webhook):
    create(cluster, webhook.namespace, jobflow("warned", "[{name: a}, {name: b, dependsOn: {targets: [a]}}]"))
    # The status says vcjob warned-a was created and has finished (an engine, if one runs, keeps that record).
    cluster.custom.patch_namespaced_custom_object_status(
        *FLOW, webhook.namespace, "jobflows", "warned",
        {"status": {"jobStatusList": [{"name": "warned-a", "state": "Completed"}]}},
        _content_type="application/merge-patch+json")

    result = kubectl(cluster, "patch", "jobflow", "warned", "--namespace", webhook.namespace, "--type", "json",
                     "--patch", '[{"op": "add", "path": "/spec/flows/0/patch", "value": {"jobSpec": {"queue": "q"}}}]')

    assert result.returncode == 0, result.stderr
    assert ('Warning: flow "a" (patch) changed, but its vcjob "warned-a" already exists and will not change '
            "(the new spec applies to vcjobs created from now on)") in result.stderr


def test_changing_a_jobtemplate_that_vcjobs_were_made_from_returns_a_warning_header(cluster: LocalCluster,
                                                                                   webhook: Webhook):
    namespace = webhook.namespace
    template = yaml.safe_load(REPO.joinpath("examples/diamond/jobtemplates.yaml").read_text().split("---")[0])
    template["metadata"] = {"name": "tpl"}
    create(cluster, namespace, yaml.safe_dump(template))
    # A vcjob made from it, and the status listing it (an engine, if one runs, computes the same list).
    cluster.custom.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", namespace, "jobs",
                                                   one_pod_vcjob("someflow-tpl", namespace=namespace, labels={
                                                       "volcano.sh/createdByJobTemplate": f"{namespace}.tpl"}))
    cluster.custom.patch_namespaced_custom_object_status(
        *FLOW, namespace, "jobtemplates", "tpl", {"status": {"jobDependsOnList": ["someflow-tpl"]}},
        _content_type="application/merge-patch+json")

    response = cluster.custom.patch_namespaced_custom_object(
        *FLOW, namespace, "jobtemplates", "tpl", {"spec": {"maxRetry": 5}}, _preload_content=False,
        _content_type="application/merge-patch+json")

    assert response.status == 200
    # RFC 7234 warn-code, warn-agent, quoted warn-text (which kubectl prints as "Warning: <text>").
    assert response.headers["Warning"] == (
        r'299 - "vcjobs \"someflow-tpl\" were made from this JobTemplate and will not change '
        '(the new spec applies to vcjobs created from now on)"')


def test_an_invalid_jobflow_stored_before_the_webhook_applied_still_takes_label_changes(cluster: LocalCluster,
                                                                                      webhook: Webhook):
    namespace = create_namespace(cluster, {})
    try:
        create(cluster, namespace, CYCLE)  # the namespace does not carry the label yet: no webhook, no CEL rule
        cluster.core.patch_namespace(namespace, {"metadata": {"labels": webhook.label}})
        cluster.wait_until("the webhook to apply to the newly labelled namespace",
                           lambda: webhook_answers(cluster, namespace), timeout=30)

        result = kubectl(cluster, "label", "jobflow", "cycle", "team=research", "--namespace", namespace)

        assert result.returncode == 0, result.stderr
        assert ("Warning: this JobFlow is invalid, and is let through only because its spec is unchanged: "
                "jobflow Flow is not DAG: a -> c -> b -> a") in result.stderr
    finally:
        cluster.delete_namespace(namespace)


# ---------------------------------------------------------------------------------------------------------------
# JobTemplates

def jobtemplate(name: str, spec: str) -> str:
    return f"apiVersion: flow.volcano.sh/v1alpha1\nkind: JobTemplate\nmetadata: {{name: {name}}}\nspec: {spec}"


BAD_JOBTEMPLATES = {
    "no tasks": (jobtemplate("empty", "{tasks: []}"), "No task specified in job spec"),
    "a repeated task name": (jobtemplate("twice", "{tasks: [{name: a, replicas: 1}, {name: a, replicas: 1}]}"),
                             "duplicated task name a"),
    "a task name that is not a DNS label": (jobtemplate("caps", "{tasks: [{name: Main, replicas: 1}]}"),
                                            'task name "Main" in spec.tasks[0] is not a DNS-1123 label'),
    "a task minAvailable above its replicas": (
        jobtemplate("short", "{tasks: [{name: a, replicas: 1, minAvailable: 2}]}"),
        "'minAvailable' is greater than 'replicas' in task: a"),
    "a job minAvailable above all replicas": (
        jobtemplate("greedy", "{minAvailable: 3, tasks: [{name: a, replicas: 2}]}"),
        "job 'minAvailable' should not be greater than total replicas in tasks"),
    "an unknown policy event": (
        jobtemplate("event", "{policies: [{event: PodRunning, action: RestartJob}], tasks: [{name: a, replicas: 1}]}"),
        'invalid policy event "PodRunning" in spec.policies[0]'),
    "an unknown policy action": (
        jobtemplate("action", "{tasks: [{name: a, replicas: 1, policies: [{event: PodFailed, action: Reboot}]}]}"),
        'invalid policy action "Reboot" in spec.tasks[0].policies[0]'),
    "a name no vcjob can have": (jobtemplate("train.v2", "{tasks: [{name: a, replicas: 1}]}"),
                                 'JobTemplate name "train.v2" is not a DNS-1123 label'),
}


@pytest.mark.parametrize("what", list(BAD_JOBTEMPLATES))
def test_a_bad_jobtemplate_is_refused_with_its_message(cluster: LocalCluster, webhook: Webhook, what):
    text, expected = BAD_JOBTEMPLATES[what]
    status, message = refusal(lambda: create(cluster, webhook.namespace, text))
    assert status == 422
    assert message.startswith(f"{DENIED_BY.format('jobtemplates')}: ")
    assert expected in message


def test_a_negative_max_retry_is_refused_by_the_crd_schema_before_the_webhook(cluster: LocalCluster,
                                                                              webhook: Webhook):
    status, message = refusal(lambda: create(cluster, webhook.namespace,
                                             jobtemplate("retry", "{maxRetry: -1, tasks: [{name: a, replicas: 1}]}")))
    assert status == 422
    assert "spec.maxRetry: Invalid value: -1: spec.maxRetry in body should be greater than or equal to 0" in message


# ---------------------------------------------------------------------------------------------------------------
# The HTTP contract, as the API server's peer

def test_a_body_that_is_not_an_admission_review_gets_400(webhook: Webhook):
    context = ssl.create_default_context(cafile=str(webhook.ca))
    request = urllib.request.Request(f"{webhook.url}/validate/jobflows", data=b'{"kind": "Pod"}', method="POST",
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, context=context, timeout=10)
    assert raised.value.code == 400
    assert json.loads(raised.value.read())["error"].startswith("not an AdmissionReview request: ")


# ---------------------------------------------------------------------------------------------------------------
# manifests/webhook is valid for this API server

@pytest.mark.parametrize("variant", ["manifests/webhook", "manifests/webhook/cert-manager"])
def test_the_webhook_manifests_pass_a_server_side_dry_run(cluster: LocalCluster, webhook: Webhook, variant: str):
    rendered = kubectl(cluster, "kustomize", str(REPO / variant))
    assert rendered.returncode == 0, rendered.stderr
    docs = [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]
    if variant.endswith("cert-manager"):  # cert-manager's CRDs are not installed here; its objects are checked above
        docs = [doc for doc in docs if not doc["apiVersion"].startswith("cert-manager.io/")]
    for doc in docs:  # a dry run does not create the install namespace; use this test's
        if doc["metadata"].get("namespace"):
            doc["metadata"]["namespace"] = webhook.namespace
    result = kubectl(cluster, "apply", "--server-side", "--dry-run=server", "--field-manager=jobflow-admission-test",
                     "-f", "-", stdin=yaml.safe_dump_all(docs))
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr, result.stderr
    assert len([line for line in result.stdout.splitlines() if line.endswith("(server dry run)")]) == len(docs)


def test_the_webhook_pod_is_admitted_where_the_restricted_pod_security_standard_is_enforced(cluster: LocalCluster):
    namespace = create_namespace(cluster, {})
    try:
        [deployment] = [doc for doc in yaml.safe_load_all((REPO / "manifests/webhook/base/admission.yaml").read_text())
                        if doc and doc["kind"] == "Deployment"]
        pod = deployment["spec"]["template"]
        enforce_restricted(cluster, namespace)
        cluster.core.create_namespaced_pod(namespace, {"metadata": {"name": "admission", **pod["metadata"]},
                                                       "spec": pod["spec"]}, dry_run="All")
    finally:
        cluster.delete_namespace(namespace)


# ---------------------------------------------------------------------------------------------------------------
# The CRD's CEL rules, without any webhook

@pytest.fixture(scope="module")
def cel_only(cluster: LocalCluster) -> Iterator[str]:
    """manifests/crds/jobflows.yaml under a group of its own, which no webhook registration names; yields the group."""
    crd = yaml.safe_load((REPO / "manifests/crds/jobflows.yaml").read_text())
    group = f"cel-{uuid.uuid4().hex[:8]}.jobflow.dev"
    crd = copy.deepcopy(crd)
    crd["metadata"] = {"name": f"jobflows.{group}"}
    crd["spec"]["group"] = group
    del crd["spec"]["names"]["shortNames"]
    with served_crd(cluster, crd):
        hooks = client.AdmissionregistrationV1Api(cluster.api).list_validating_webhook_configuration().items
        assert not [rule for hook in hooks for webhook in hook.webhooks or [] for rule in webhook.rules or []
                    if group in (rule.api_groups or []) or "*" in (rule.api_groups or [])]
        yield group


def create_in(cluster: LocalCluster, group: str, text: str) -> dict:
    doc = yaml.safe_load(text)
    doc["apiVersion"] = f"{group}/v1alpha1"
    return cluster.custom.create_namespaced_custom_object(group, "v1alpha1", "default", "jobflows", doc,
                                                          dry_run="All")


CEL_REFUSES = {
    "an undefined target": (
        'spec.flows: Invalid value: jobflow Flow is not DAG: vertex is not defined: x (flow "a" depends on "x", '
        'which is not a flow of this JobFlow: add a flow named "x" or remove it from dependsOn.targets)'),
    "a flow depending on itself": (
        "spec.flows[1]: Invalid value: jobflow Flow is not DAG: b -> b (a flow must not depend on itself, directly "
        "or through other flows: remove one of these dependencies)"),
    "a repeated flow name": (
        'spec.flows: Invalid value: "array": insert failed: key a already exists evaluating rule: that key is a '
        "duplicate flow name: each flow must be unique, rename or remove one of the flows of that name"),
}


@pytest.mark.parametrize("what", list(CEL_REFUSES))
def test_the_crd_refuses_without_the_webhook(cluster: LocalCluster, cel_only: str, what):
    status, message = refusal(lambda: create_in(cluster, cel_only, BAD_JOBFLOWS[what][0]))
    assert status == 422
    assert CEL_REFUSES[what] in message


def test_the_crd_alone_admits_4000_flows_and_leaves_longer_cycles_to_the_webhook(cluster: LocalCluster,
                                                                                 cel_only: str):
    create_in(cluster, cel_only, layered("layered", 4000))
    create_in(cluster, cel_only, CYCLE)


def test_the_crd_refuses_more_than_4000_flows(cluster: LocalCluster, cel_only: str):
    status, message = refusal(lambda: create_in(cluster, cel_only, layered("huge", 4001)))
    assert status == 422
    assert "spec.flows: Too many: 4001: must have at most 4000 items" in message
