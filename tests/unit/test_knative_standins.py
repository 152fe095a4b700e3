"""The parts of the Knative testbed that need no cluster: what the webhook stand-in writes, and the build-time
source patch (it must fail loudly, not build something unpatched, when a new pin moved the text)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devcluster import build
from devcluster.components import KNATIVE_EVENTING, GoModule, SourcePatch
from devcluster.knative_eventing import IMAGES, knative_documents
from devcluster.knative_standins import BROKER_CLASS, BROKER_LABEL, with_webhook_defaults

DEFAULTS = {"brokerClass": "MTChannelBasedBroker", "apiVersion": "v1", "kind": "ConfigMap",
            "name": "config-br-default-channel", "namespace": "knative-eventing",
            "delivery": {"retry": 10, "backoffPolicy": "exponential", "backoffDelay": "PT0.2S"}}


def by_kind(kind: str) -> list[dict]:
    return [doc for doc in knative_documents() if doc["kind"] == kind]


def test_the_broker_gets_the_cluster_default_class_and_channel_config_but_keeps_its_own_delivery() -> None:
    [broker] = by_kind("Broker")
    defaulted = with_webhook_defaults(broker, DEFAULTS)
    assert defaulted["metadata"]["annotations"][BROKER_CLASS] == "MTChannelBasedBroker"
    assert defaulted["spec"]["config"] == {"apiVersion": "v1", "kind": "ConfigMap",
                                           "name": "config-br-default-channel", "namespace": "knative-eventing"}
    assert defaulted["spec"]["delivery"] == DEFAULTS["delivery"]  # ours sets none on the Broker itself
    assert "annotations" not in broker["metadata"]  # the document applied is left as it was


def test_each_trigger_gets_its_broker_label_and_references_in_its_own_namespace() -> None:
    triggers = by_kind("Trigger")
    assert len(triggers) == 6
    for trigger in triggers:
        defaulted = with_webhook_defaults(trigger, DEFAULTS)
        assert defaulted["metadata"]["labels"][BROKER_LABEL] == "jobflow"
        assert defaulted["spec"]["subscriber"]["ref"]["namespace"] == "volcano-jobflow"
        dead_letters = (defaulted["spec"].get("delivery") or {}).get("deadLetterSink")
        assert dead_letters is None or dead_letters["ref"]["namespace"] == "volcano-jobflow"


def test_other_kinds_are_admitted_unchanged() -> None:
    for doc in knative_documents():
        if doc["kind"] not in ("Broker", "Trigger", "ApiServerSource", "PingSource"):
            assert with_webhook_defaults(doc, DEFAULTS) is doc


def test_every_release_image_the_local_kubelet_plays_is_a_binary_that_is_built() -> None:
    assert set(IMAGES.values()) <= set(KNATIVE_EVENTING.binaries)


def fake_module(tmp_path: Path, text: str) -> tuple[GoModule, Path]:
    upstream = tmp_path / "cache" / "example.test" / "pkg" / "server.go"
    upstream.parent.mkdir(parents=True)
    upstream.write_text(text)
    work = tmp_path / "work"
    (work / "patches").mkdir(parents=True)
    (work / "go.mod").write_text("module local.test/x\n")
    (work / "patches" / "extra.go").write_text("package pkg\n")
    module = GoModule(name="x", upstream="example.test v1", binaries={}, patches=(SourcePatch(
        module="example.test", file="pkg/server.go", replace=(("Port: 8080,", "Port: port(),"),),
        add="patches/extra.go"),))
    return module, work


def test_a_source_patch_edits_a_copy_and_replaces_the_module_with_it(tmp_path: Path, monkeypatch) -> None:
    module, work = fake_module(tmp_path, "x := Args{\n\tPort: 8080,\n}\n")
    monkeypatch.setattr(build, "_module_dir", lambda _work, _path: tmp_path / "cache" / "example.test")
    build._apply_patches(module, work)
    copy = work / "patched" / "example.test" / "pkg"
    assert (copy / "server.go").read_text() == "x := Args{\n\tPort: port(),\n}\n"
    assert (copy / "zz_jobflow_extra.go").read_text() == "package pkg\n"
    assert (tmp_path / "cache" / "example.test" / "pkg" / "server.go").read_text().count("8080") == 1  # untouched
    assert "replace example.test => ./patched/example.test" in (work / "go.mod").read_text()


@pytest.mark.parametrize("text", ["x := Args{Port: 9090}\n", "a := Args{Port: 8080,}\nb := Args{Port: 8080,}\n"])
def test_a_source_patch_whose_text_moved_fails_the_build_with_what_to_do(tmp_path: Path, monkeypatch,
                                                                        text: str) -> None:
    module, work = fake_module(tmp_path, text)
    monkeypatch.setattr(build, "_module_dir", lambda _work, _path: tmp_path / "cache" / "example.test")
    with pytest.raises(build.BuildError, match="exactly once.*Update the patch"):
        build._apply_patches(module, work)
