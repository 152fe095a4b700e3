"""The pieces of ``knative/`` fit together and fit the code; checked without a cluster.

Sources reach the Broker, the Triggers reach the handler's routes with the events the handler understands, the
delivery timeouts fit the Service's, every identity has exactly the rights its workload uses, and the Knative
Service's command, run here as Knative would run it, answers its readiness probe on ``$PORT``.
(tests/cluster/test_knative_manifests.py dry-runs the same documents on the API server with Knative's CRDs.)
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from apiclient.cloudevents import Change, Mode, event_type
from apiclient.watch import WATCHED
from devcluster.processes import free_port
from handlers import create_app
from handlers.hints import RESYNC_TYPES, hint_from_request
from healthz import wait_for_healthz
from jobflow_core.vocabulary.api import API_TYPES, CREATED_BY_JOBFLOW, JOBFLOW
from knative_types import ISO_8601_DURATION, RENDERS, REPO, rendered

HANDLER = "jobflow-handler"


def objects(directory: str) -> dict[tuple[str, str], dict]:
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in rendered(directory)}


def of_kind(directory: str, kind: str) -> list[dict]:
    return [doc for doc in rendered(directory) if doc["kind"] == kind]


def handler(directory: str = "knative") -> dict:
    return objects(directory)[("Service", HANDLER)]


def handler_container(directory: str = "knative") -> dict:
    [container] = handler(directory)["spec"]["template"]["spec"]["containers"]
    return container


def exact_filters(trigger: dict) -> dict[str, str]:
    return {k: v for item in trigger["spec"]["filters"] for k, v in (item.get("exact") or {}).items()}


def object_triggers(directory: str = "knative") -> list[dict]:
    return [t for t in of_kind(directory, "Trigger") if "kind" in exact_filters(t)]


def seconds(duration: str) -> float:
    """An ISO-8601 duration of the PTnHnMnS kind, in seconds."""
    match = ISO_8601_DURATION.match(duration)
    assert match and duration.startswith("PT"), duration
    h, m, s = (re.search(rf"([\d.]+){unit}", duration.split("T")[1]) for unit in "HMS")
    return sum(float(x.group(1)) * factor for x, factor in ((h, 3600), (m, 60), (s, 1)) if x)


def routes() -> set[tuple[str, str]]:
    return {(rule.rule, method) for rule in create_app({"KUBE": object()}).url_map.iter_rules()
            for method in rule.methods}


# --- events: sources, Triggers, handler ------------------------------------------------------------------------

@pytest.mark.parametrize("directory", RENDERS)
def test_there_is_a_trigger_for_each_kind_the_handler_understands_filtering_on_kind_and_apiversion(
        directory: str) -> None:
    kinds = [(exact_filters(t)["apiversion"], exact_filters(t)["kind"]) for t in object_triggers(directory)]

    assert sorted(kinds) == sorted((t.api_version, t.kind) for t in API_TYPES)


@pytest.mark.parametrize("directory", RENDERS)
def test_each_object_trigger_filters_on_a_type_prefix_that_every_source_event_has(directory: str) -> None:
    sent = {event_type(mode, change) for mode in Mode for change in Change}  # = ApiServerSource's types
    for trigger in object_triggers(directory):
        [prefix] = [item["prefix"]["type"] for item in trigger["spec"]["filters"] if "prefix" in item]
        assert all(t.startswith(prefix) for t in sent), trigger["metadata"]["name"]
        assert not any(t.startswith(prefix) for t in RESYNC_TYPES)


def test_the_apiserversource_watches_what_our_event_source_watches_in_reference_mode() -> None:
    source = objects("knative")[("ApiServerSource", "jobflow-objects")]["spec"]
    watched = {(t.api_version, t.kind): label_selector for t, label_selector in WATCHED.items()}

    assert source["mode"] == "Reference"
    assert source["namespaceSelector"] == {}  # every namespace, as the event source's default
    assert {(r["apiVersion"], r["kind"]) for r in source["resources"]} == set(watched) == {(t.api_version, t.kind) for t in API_TYPES}
    for resource in source["resources"]:
        expected = watched[(resource["apiVersion"], resource["kind"])]
        selector = resource.get("selector", {}).get("matchExpressions")
        assert selector == ([{"key": CREATED_BY_JOBFLOW, "operator": "Exists"}] if expected else None)


@pytest.mark.parametrize("directory", RENDERS)
def test_every_source_sends_to_the_broker_and_every_trigger_reaches_a_service_of_the_same_install(
        directory: str) -> None:
    present = objects(directory)
    sources = [d for d in rendered(directory) if d["kind"] in ("ApiServerSource", "PingSource", "ContainerSource")]
    [broker] = of_kind(directory, "Broker")

    assert sources
    for source in sources:
        assert source["spec"]["sink"]["ref"] == {"apiVersion": "eventing.knative.dev/v1", "kind": "Broker",
                                                 "name": broker["metadata"]["name"]}
    for trigger in of_kind(directory, "Trigger"):
        assert trigger["spec"]["broker"] == broker["metadata"]["name"]
        destinations = [trigger["spec"]["subscriber"]]
        destinations += [trigger["spec"]["delivery"]["deadLetterSink"]] if "deadLetterSink" in trigger["spec"][
            "delivery"] else []
        for destination in destinations:
            ref = destination["ref"]
            assert (ref["apiVersion"], ref["kind"]) == ("serving.knative.dev/v1", "Service")
            assert ("Service", ref["name"]) in present


def test_object_triggers_send_to_post_slash_and_retry_with_exponential_backoff_into_the_dead_letter_sink() -> None:
    for trigger in object_triggers():
        spec = trigger["spec"]
        assert spec["subscriber"]["ref"]["name"] == HANDLER and spec["subscriber"].get("uri", "/") == "/"
        delivery = spec["delivery"]
        assert delivery["retry"] >= 3 and delivery["backoffPolicy"] == "exponential"
        assert seconds(delivery["backoffDelay"]) > 0
        assert delivery["deadLetterSink"]["ref"]["name"] == "jobflow-dead-letters"
    assert ("/", "POST") in routes()


def test_the_pingsource_reaches_the_resync_endpoint_every_minute_and_nothing_else_does() -> None:
    present = objects("knative")
    ping = present[("PingSource", "jobflow-resync")]
    trigger = present[("Trigger", "jobflow-resync")]
    meta = ping["metadata"]

    assert ping["spec"]["schedule"] == "* * * * *"
    # The type and source the PingSource adapter stamps on its events (sources/v1 ping_lifecycle.go).
    assert exact_filters(trigger) == {"type": "dev.knative.sources.ping",
                                      "source": f"/apis/v1/namespaces/{meta['namespace']}/pingsources/{meta['name']}"}
    assert trigger["spec"]["subscriber"] == {"ref": {"apiVersion": "serving.knative.dev/v1", "kind": "Service",
                                                     "name": HANDLER}, "uri": "/resync"}
    assert ("/resync", "POST") in routes()
    assert "dev.knative.sources.ping" in RESYNC_TYPES  # POST / would resync for it too


def test_no_delivery_attempt_gives_up_before_the_service_would_answer() -> None:
    """A Trigger's per-attempt timeout below the Service's would retry requests still running (twice the work)."""
    service_timeout = handler()["spec"]["template"]["spec"]["timeoutSeconds"]
    resync = objects("knative")[("Trigger", "jobflow-resync")]["spec"]["delivery"]

    assert seconds(resync["timeout"]) >= service_timeout
    for trigger in object_triggers():
        assert 0 < seconds(trigger["spec"]["delivery"]["timeout"]) <= service_timeout


# --- the Knative Service ---------------------------------------------------------------------------------------

def test_the_handler_scales_to_zero_and_its_hard_concurrency_limit_is_gunicorns_thread_count() -> None:
    template = handler()["spec"]["template"]
    annotations = template["metadata"]["annotations"]
    command = handler_container()["command"]

    assert annotations["autoscaling.knative.dev/min-scale"] == "0"
    assert 1 <= int(annotations["autoscaling.knative.dev/max-scale"]) <= 10
    assert int(annotations["autoscaling.knative.dev/target"]) <= template["spec"]["containerConcurrency"]
    assert template["spec"]["containerConcurrency"] == int(command[command.index("--threads") + 1])
    assert command[command.index("--workers") + 1] == "1"
    assert command[command.index("--timeout") + 1] == "0"  # Knative's timeoutSeconds governs
    assert command[-1] == "handlers:create_app()"


def test_the_handler_is_reachable_only_inside_the_cluster() -> None:
    for service in of_kind("knative", "Service"):
        assert service["metadata"]["labels"]["networking.knative.dev/visibility"] == "cluster-local"


def test_the_readiness_probe_asks_a_route_that_needs_no_api_server() -> None:
    probe = handler_container()["readinessProbe"]["httpGet"]

    assert probe == {"path": "/healthz"}  # the port is Knative's to fill in
    assert ("/healthz", "GET") in routes()


def test_the_knative_services_command_answers_healthz_on_port(tmp_path: Path) -> None:
    port = str(free_port())
    # The kubelet expands $(PORT) from the env Knative gives the container; gunicorn from this interpreter's venv.
    command = [arg.replace("$(PORT)", port) for arg in handler_container()["command"]]
    command[0] = str(Path(sys.executable).parent / command[0])
    server = subprocess.Popen(command, cwd=tmp_path, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert wait_for_healthz(f"http://127.0.0.1:{port}/", timeout=15, server=server) == b"ok"
    finally:
        server.terminate()
        server.wait(timeout=10)


# --- identities ------------------------------------------------------------------------------------------------

def rights(directory: str, namespace: str, account: str) -> set[tuple[str, str, str]]:
    """(apiGroup, resource, verb) the render's ClusterRoleBindings grant to a ServiceAccount."""
    present = objects(directory)
    granted = set()
    for binding in of_kind(directory, "ClusterRoleBinding"):
        if {"kind": "ServiceAccount", "name": account, "namespace": namespace} in binding["subjects"]:
            role = present[("ClusterRole", binding["roleRef"]["name"])]
            granted |= {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
                        for resource in rule["resources"] for verb in rule["verbs"]}
    return granted


def workload_accounts(directory: str) -> dict[str, tuple[str, str]]:
    """ServiceAccount -> (kind, name) of the workload that runs as it."""
    found = {}
    for doc in rendered(directory):
        spec = doc.get("spec") or {}
        account = {"Service": lambda: spec["template"]["spec"].get("serviceAccountName"),
                   "ApiServerSource": lambda: spec.get("serviceAccountName"),
                   "ContainerSource": lambda: spec["template"]["spec"].get("serviceAccountName")}.get(doc["kind"])
        if account and account():
            found[account()] = (doc["kind"], doc["metadata"]["name"])
    return found


@pytest.mark.parametrize("directory", RENDERS)
def test_every_service_account_runs_a_workload_and_nothing_runs_as_default_with_api_rights(directory: str) -> None:
    accounts = {doc["metadata"]["name"] for doc in of_kind(directory, "ServiceAccount")}
    used = workload_accounts(directory)

    assert accounts == set(used)
    for doc in of_kind(directory, "ClusterRoleBinding"):
        assert {s["name"] for s in doc["subjects"]} <= accounts


def test_the_handler_has_the_plain_installs_rights_through_its_own_account() -> None:
    account = handler()["spec"]["template"]["spec"]["serviceAccountName"]
    namespace = handler()["metadata"]["namespace"]

    assert account != HANDLER  # its own, not the plain install's (which knative/ does not create)
    assert {b["roleRef"]["name"] for b in of_kind("knative", "ClusterRoleBinding")
            if {"kind": "ServiceAccount", "name": account, "namespace": namespace} in b["subjects"]} == {HANDLER}
    assert ("batch.volcano.sh", "jobs", "create") in rights("knative", namespace, account)


def test_the_apiserversource_account_may_get_list_and_watch_what_it_watches_and_nothing_else() -> None:
    source = objects("knative")[("ApiServerSource", "jobflow-objects")]
    account, namespace = source["spec"]["serviceAccountName"], source["metadata"]["namespace"]
    # Knative checks get, list and watch on the resource meta.UnsafeGuessKindToResource names: kind lower-cased + s.
    needed = {(r["apiVersion"].split("/")[0], r["kind"].lower() + "s", verb)
              for r in source["spec"]["resources"] for verb in ("get", "list", "watch")}

    assert rights("knative", namespace, account) == needed


def test_the_containersource_runs_our_event_source_with_the_settings_it_reads() -> None:
    source = objects("knative/eventsource")[("ContainerSource", "jobflow-eventsource")]
    [container] = source["spec"]["template"]["spec"]["containers"]
    main = "".join((REPO / path).read_text() for path in ("eventsource/__main__.py", "apiclient/snapshot_key.py"))

    assert container["command"] == ["python", "-m", "eventsource"]
    names = {e["name"] for e in container["env"]}
    assert "K_SINK" not in names  # the SinkBinding Knative makes sets it (and K_CE_OVERRIDES)
    assert all(f'environ.get("{name}"' in main for name in names), names
    assert not [d for d in rendered("knative/eventsource") if d["kind"] in ("ApiServerSource", "PingSource")]


# --- docs/knative.md's guide for other event buses -------------------------------------------------------------

def test_the_knative_guides_example_for_other_buses_is_an_event_the_handler_reads_as_documented() -> None:
    guide = (REPO / "docs" / "knative.md").read_text()
    block = re.search(r"<!-- knative-bus-example-start -->\n```sh\n(.*?)```\n<!-- knative-bus-example-end -->",
                      guide, re.S)
    assert block, "docs/knative.md lost its example for other event buses"
    words = shlex.split(block.group(1).replace("\\\n", " "))
    headers = dict(words[i + 1].split(": ", 1) for i, word in enumerate(words) if word == "-H")
    body = words[words.index("-d") + 1].encode()

    hint = hint_from_request(headers, body)

    assert (hint.about, hint.namespace, hint.name) == (JOBFLOW, "default", "test")
    assert words[words.index("-X") + 2] == f"http://{HANDLER}.{handler()['metadata']['namespace']}.svc.cluster.local/"


# --- CloudEvents out ---------------------------------------------------------------------------------------------

def matches(filters: list[dict], attributes: dict[str, str]) -> bool:
    """Whether an event with ``attributes`` passes a Trigger's ``filters`` (the dialects our Triggers use)."""
    def one(item: dict) -> bool:
        if "any" in item:
            return any(one(sub) for sub in item["any"])
        if "all" in item:
            return all(one(sub) for sub in item["all"])
        if "not" in item:
            return not one(item["not"])
        exact = all(attributes.get(k) == v for k, v in (item.get("exact") or {}).items())
        prefix = all((attributes.get(k) or "").startswith(v) for k, v in (item.get("prefix") or {}).items())
        assert set(item) <= {"exact", "prefix"}, f"a dialect this test does not evaluate: {item}"
        return exact and prefix
    return all(one(item) for item in filters)


@pytest.mark.parametrize("directory", RENDERS)
def test_the_sinkbinding_gives_the_handler_a_k_sink_into_the_broker_with_valid_overrides(directory: str) -> None:
    from apiclient.cloudevents import parse_overrides

    [binding] = of_kind(directory, "SinkBinding")
    assert binding["spec"]["subject"] == {"apiVersion": "serving.knative.dev/v1", "kind": "Service",
                                          "name": HANDLER}
    [broker] = of_kind(directory, "Broker")
    assert binding["spec"]["sink"]["ref"] == {"apiVersion": "eventing.knative.dev/v1", "kind": "Broker",
                                              "name": broker["metadata"]["name"]}
    assert parse_overrides(json.dumps(binding["spec"]["ceOverrides"]))  # what the handler reads from K_CE_OVERRIDES


@pytest.mark.parametrize("directory", RENDERS)
def test_notifications_never_reach_the_handler_and_the_example_trigger_takes_exactly_the_failures(
        directory: str) -> None:
    from jobflow_core.planning.notifications import TYPES

    triggers = of_kind(directory, "Trigger")
    services = {doc["metadata"]["name"] for doc in of_kind(directory, "Service")}
    for trigger in triggers:
        taken = {type_ for type_ in TYPES if matches(trigger["spec"]["filters"], {"type": type_, "source": "/apis/"
                                                                                 "flow.volcano.sh/v1alpha1/x"})}
        subscriber = trigger["spec"]["subscriber"]["ref"]["name"]
        assert subscriber in services
        if subscriber == HANDLER:
            assert not taken, f"{trigger['metadata']['name']} would send our own notifications to the handler"
        elif trigger["metadata"]["name"] == "jobflow-failures":
            assert taken == {"sh.volcano.flow.jobflow.failed", "sh.volcano.flow.job.failed"}
