"""A pod's volumes, made on the host as the kubelet makes them, and bind-mounted into its containers.

Each volume is a directory under ``<pod dir>/volumes/<name>``, made once when the pod starts (so an ``emptyDir``
outlives a container restart, as it must):

- ``emptyDir``: world-writable (the kubelet's 0777), a size-limited tmpfs for ``medium: Memory``;
- ``secret``, ``configMap``: the object's keys (or its ``items``) as files with ``defaultMode``; a missing object
  that is not ``optional`` keeps the pod from starting until it exists (the kubelet's FailedMount);
- ``projected`` with ``serviceAccountToken`` (a real token from the TokenRequest API, bound to the pod, with the
  audience and lifetime asked for), ``configMap``, ``secret`` and ``downwardAPI`` sources: what the
  ServiceAccount admission plugin adds as ``kube-api-access-*`` and client libraries read from
  ``/var/run/secrets/kubernetes.io/serviceaccount``;
- ``downwardAPI``: ``fieldRef`` items.

Not done: refreshing tokens, Secrets or ConfigMaps after the start (the kubelet does it periodically), hostPath,
persistent volumes, ``fsGroup`` ownership changes.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from pathlib import Path

from kubernetes import client
from kubernetes.client.rest import ApiException

from devcluster.pods.spec import SpecError, field_ref, quantity


class VolumeNotReady(RuntimeError):
    """A volume's source is missing (yet); the message is the kubelet's FailedMount reason."""


def object_data(core: client.CoreV1Api, kind: str, namespace: str, name: str, *, optional: bool) -> dict | None:
    """A ConfigMap's or Secret's data as text (Secrets decoded); None when it is missing and ``optional``."""
    try:
        if kind == "secret":
            secret = core.read_namespaced_secret(name, namespace)
            return {key: base64.b64decode(value).decode() for key, value in (secret.data or {}).items()}
        return dict(core.read_namespaced_config_map(name, namespace).data or {})
    except ApiException as error:
        if error.status == 404 and optional:
            return None
        if error.status == 404:
            raise VolumeNotReady(f'{kind} "{name}" not found') from None
        raise


def _write(directory: Path, files: dict[str, str], mode: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    for path, text in files.items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(mode)


def _selected(data: dict[str, str], items: list[dict] | None) -> dict[str, str]:
    if not items:
        return dict(data)
    return {item["path"]: data[item["key"]] for item in items if item["key"] in data}


def _token(core: client.CoreV1Api, pod: dict, source: dict) -> str:
    meta = pod["metadata"]
    spec = {"expirationSeconds": source.get("expirationSeconds", 3600),
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}}
    if source.get("audience"):
        spec["audiences"] = [source["audience"]]
    account = pod["spec"].get("serviceAccountName") or "default"
    answer = core.create_namespaced_service_account_token(account, meta["namespace"], {"spec": spec})
    return answer.status.token


def _projected(core: client.CoreV1Api, pod: dict, volume: dict) -> dict[str, str]:
    namespace, files = pod["metadata"]["namespace"], {}
    for source in volume.get("sources") or []:
        if "serviceAccountToken" in source:
            files[source["serviceAccountToken"]["path"]] = _token(core, pod, source["serviceAccountToken"])
        elif "downwardAPI" in source:
            files.update({item["path"]: field_ref(pod, item["fieldRef"]["fieldPath"])
                          for item in source["downwardAPI"].get("items") or [] if "fieldRef" in item})
        else:
            kind = "configMap" if "configMap" in source else "secret"
            ref = source[kind]
            data = object_data(core, kind, namespace, ref["name"], optional=bool(ref.get("optional")))
            files.update(_selected(data or {}, ref.get("items")))
    return files


def make(core: client.CoreV1Api, pod: dict, directory: Path) -> dict[str, Path]:
    """Every volume of ``pod`` under ``directory``; returns volume name -> host path. Raises VolumeNotReady."""
    paths: dict[str, Path] = {}
    namespace = pod["metadata"]["namespace"]
    for volume in pod["spec"].get("volumes") or []:
        name = volume["name"]
        path = directory / name
        mode = int(next((volume[k].get("defaultMode", 0o644) for k in ("secret", "configMap", "projected",
                                                                         "downwardAPI") if k in volume), 0o644))
        if "emptyDir" in volume:
            path.mkdir(parents=True, exist_ok=True)
            if volume["emptyDir"].get("medium") == "Memory" and not os.path.ismount(path):
                size = volume["emptyDir"].get("sizeLimit")
                options = f"size={int(quantity(size))}" if size else "size=64m"
                subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], check=True)
            path.chmod(0o777)
        elif "secret" in volume or "configMap" in volume:
            kind = "secret" if "secret" in volume else "configMap"
            ref = volume[kind]
            object_name = ref.get("secretName") if kind == "secret" else ref.get("name")
            data = object_data(core, kind, namespace, object_name, optional=bool(ref.get("optional")))
            _write(path, _selected(data or {}, ref.get("items")), mode)
        elif "projected" in volume:
            _write(path, _projected(core, pod, volume["projected"]), mode)
        elif "downwardAPI" in volume:
            items = volume["downwardAPI"].get("items") or []
            _write(path, {item["path"]: field_ref(pod, item["fieldRef"]["fieldPath"]) for item in items
                          if "fieldRef" in item}, mode)
        else:
            raise SpecError(f"volume {name!r}: only emptyDir, secret, configMap, projected and downwardAPI volumes "
                            "are supported by devcluster's pods")
        paths[name] = path
    return paths


def mounts(container: dict, paths: dict[str, Path]) -> list[tuple[str, str, bool]]:
    """The container's volumeMounts as (host path, container path, read-only)."""
    result = []
    for mount in container.get("volumeMounts") or []:
        if mount["name"] not in paths:
            raise SpecError(f"volumeMount {mount['name']!r} names no volume of the pod")
        host = paths[mount["name"]] / mount.get("subPath", "")
        result.append((str(host), mount["mountPath"], bool(mount.get("readOnly"))))
    return result


def remove(directory: Path) -> None:
    """The pod's volumes, tmpfs mounts first."""
    if not directory.exists():
        return
    for path in sorted(directory.iterdir()):
        if os.path.ismount(path):
            subprocess.run(["umount", "-l", str(path)], check=False)
    shutil.rmtree(directory, ignore_errors=True)
