"""What a pod's container asks for, turned into a ``podman run`` command line, as the kubelet would read it.

Pure functions over the Pod as the API server returns it (a dict, JSON field names): no API calls, no podman. The
kubelet's rules that the manifests rely on, and that a mistake in a manifest would break, are kept exactly:

- the environment: ``env`` in order (a value may name an earlier variable as ``$(NAME)``), ``valueFrom`` with a
  ``fieldRef`` (``metadata.name|namespace|uid|labels['k']|annotations['k']``, ``spec.nodeName|serviceAccountName``,
  ``status.hostIP|podIP``), a ``resourceFieldRef``, a ``configMapKeyRef`` or ``secretKeyRef`` (the caller resolves
  those two), ``envFrom``; and the Service variables: ``KUBERNETES_SERVICE_HOST/PORT`` always, and with
  ``enableServiceLinks`` (the default) ``<NAME>_SERVICE_HOST/PORT`` for each Service of the pod's namespace;
- ``command`` replaces the image's entrypoint and ``args`` its ``CMD``; ``$(NAME)`` in both is expanded from the
  environment, ``$$`` is a literal ``$``, an unknown name stays as written;
- the securityContext: ``runAsUser/runAsGroup`` (container over pod), ``runAsNonRoot`` checked against the user
  that will run (the kubelet refuses a non-numeric image user here), ``readOnlyRootFilesystem`` (and nothing else
  writable: podman's own tmpfs on /tmp, /run and /var/tmp is turned off), ``allowPrivilegeEscalation: false``,
  ``capabilities``, ``privileged``, ``seccompProfile``;
- the memory limit, and ``/etc/hosts`` and the hostname as the kubelet writes them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping

_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.\-]*)\)")
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)([A-Za-z]*)$")
_SUFFIX = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
           "Ti": 2**40, "m": 0.001}


class SpecError(ValueError):
    """The container cannot be started as specified (the kubelet's CreateContainerConfigError)."""


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion (k8s.io/kubernetes/third_party/forked/golang/expansion)."""
    def replace(match: re.Match) -> str:
        if match[0] == "$$":
            return "$"
        return env.get(match[1], match[0])
    return _REFERENCE.sub(replace, text)


def quantity(text: str) -> float:
    match = _QUANTITY.match(str(text))
    if not match or match[2] not in _SUFFIX:
        raise SpecError(f"cannot read the quantity {text!r}")
    return float(match[1]) * _SUFFIX[match[2]]


def field_ref(pod: dict, path: str) -> str:
    """The value of a downward-API ``fieldRef``."""
    meta, spec, status = pod["metadata"], pod["spec"], pod.get("status") or {}
    simple = {"metadata.name": meta["name"], "metadata.namespace": meta["namespace"], "metadata.uid": meta["uid"],
              "spec.nodeName": spec.get("nodeName", ""), "spec.serviceAccountName": spec.get("serviceAccountName", ""),
              "status.hostIP": status.get("hostIP", ""), "status.podIP": status.get("podIP", "")}
    if path in simple:
        return simple[path]
    match = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if match:
        return (meta.get(match[1]) or {}).get(match[2], "")
    if path in ("metadata.labels", "metadata.annotations"):
        items = meta.get(path.split(".")[1]) or {}
        return "\n".join(f'{key}="{value}"' for key, value in sorted(items.items()))
    raise SpecError(f"unsupported fieldRef {path!r}")


def resource_ref(container: dict, ref: dict) -> str:
    resource = ref["resource"]
    kind, _, name = resource.partition(".")
    value = ((container.get("resources") or {}).get(kind) or {}).get(name)
    if value is None:
        return "0"
    divisor = quantity(ref.get("divisor", "1"))
    return str(int(-(-quantity(value) // divisor)))


def service_env(services: list[dict], *, kubernetes: tuple[str, int]) -> dict[str, str]:
    """The variables a pod gets for Services (``kubernetes`` always; the others when service links are on)."""
    env = {"KUBERNETES_SERVICE_HOST": kubernetes[0], "KUBERNETES_SERVICE_PORT": str(kubernetes[1]),
           "KUBERNETES_SERVICE_PORT_HTTPS": str(kubernetes[1])}
    for service in services:
        cluster_ip = service["spec"].get("clusterIP")
        if not cluster_ip or cluster_ip == "None":
            continue
        prefix = service["metadata"]["name"].upper().replace("-", "_")
        ports = service["spec"].get("ports") or []
        env[f"{prefix}_SERVICE_HOST"] = cluster_ip
        if ports:
            env[f"{prefix}_SERVICE_PORT"] = str(ports[0]["port"])
        for port in ports:
            if port.get("name"):
                env[f"{prefix}_SERVICE_PORT_{port['name'].upper().replace('-', '_')}"] = str(port["port"])
    return env


def container_env(pod: dict, container: dict, *, services: dict[str, str],
                  lookup: Callable[[str, str, str, bool], str | None]) -> dict[str, str]:
    """The container's environment. ``lookup(kind, name, key, optional)`` reads a ConfigMap's or Secret's key (kind
    ``configMap``/``secret``; key ``""`` for the whole object as a JSON-free ``{key: value}`` through ``envFrom``)."""
    env = dict(services)
    for source in container.get("envFrom") or []:
        kind = "configMap" if "configMapRef" in source else "secret"
        ref = source.get("configMapRef") or source.get("secretRef")
        values = lookup(kind, ref["name"], "", bool(ref.get("optional"))) or {}
        env.update({source.get("prefix", "") + key: value for key, value in values.items()})
    for variable in container.get("env") or []:
        name, source = variable["name"], variable.get("valueFrom")
        if source is None:
            env[name] = expand(variable.get("value", ""), env)
        elif "fieldRef" in source:
            env[name] = field_ref(pod, source["fieldRef"]["fieldPath"])
        elif "resourceFieldRef" in source:
            env[name] = resource_ref(container, source["resourceFieldRef"])
        else:
            kind = "configMap" if "configMapKeyRef" in source else "secret"
            ref = source.get("configMapKeyRef") or source.get("secretKeyRef")
            value = lookup(kind, ref["name"], ref["key"], bool(ref.get("optional")))
            if value is not None:
                env[name] = value
    return env


def security(pod: dict, container: dict) -> dict:
    """The container's securityContext with the pod's defaults filled in (the container's fields win)."""
    merged = {key: value for key, value in (pod["spec"].get("securityContext") or {}).items()
              if key in ("runAsUser", "runAsGroup", "runAsNonRoot", "seccompProfile")}
    merged.update(container.get("securityContext") or {})
    return merged


def user_flag(context: dict, image_user: str) -> list[str]:
    """``--user`` for the runAsUser/runAsGroup asked for, after the kubelet's runAsNonRoot check."""
    user, group = context.get("runAsUser"), context.get("runAsGroup")
    if context.get("runAsNonRoot"):
        effective = user if user is not None else image_user.split(":")[0]
        if effective in ("", None) or not str(effective).isdigit():
            raise SpecError(f"container has runAsNonRoot and image has non-numeric user ({image_user!r}), cannot "
                            "verify user is non-root")
        if int(effective) == 0:
            raise SpecError("container has runAsNonRoot and image will run as root")
    if user is None:
        return []
    return ["--user", f"{user}:{group}" if group is not None else str(user)]


def security_flags(context: dict) -> list[str]:
    flags: list[str] = []
    if context.get("privileged"):
        flags.append("--privileged")
    if context.get("readOnlyRootFilesystem"):
        flags += ["--read-only", "--read-only-tmpfs=false"]
    if context.get("allowPrivilegeEscalation") is False:
        flags += ["--security-opt", "no-new-privileges"]
    capabilities = context.get("capabilities") or {}
    flags += [flag for cap in capabilities.get("drop") or [] for flag in ("--cap-drop", cap)]
    flags += [flag for cap in capabilities.get("add") or [] for flag in ("--cap-add", cap)]
    if (context.get("seccompProfile") or {}).get("type") == "Unconfined":
        flags += ["--security-opt", "seccomp=unconfined"]
    return flags


def hosts_file(pod: dict, pod_ip: str, services: list[dict]) -> str:
    """``/etc/hosts``: the kubelet's lines, then a name line per Service (the cluster-DNS stand-in, see kubelet)."""
    namespace = pod["metadata"]["namespace"]
    lines = ["# Kubernetes-managed hosts file (devcluster pods: names of Services instead of cluster DNS).",
             "127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback",
             f"{pod_ip}\t{pod['spec'].get('hostname') or pod['metadata']['name']}"]
    for service in services:
        cluster_ip = service["spec"].get("clusterIP")
        if not cluster_ip or cluster_ip == "None":
            continue
        name, where = service["metadata"]["name"], service["metadata"]["namespace"]
        names = [f"{name}.{where}.svc.cluster.local", f"{name}.{where}.svc", f"{name}.{where}"]
        lines.append("\t".join([cluster_ip, *names, *([name] if where == namespace else [])]))
    return "\n".join(lines) + "\n"


def run_args(pod: dict, container: dict, *, env: dict[str, str], image_user: str,
             mounts: list[tuple[str, str, bool]]) -> list[str]:
    """Everything of ``podman run`` that the pod spec decides (the runtime adds name, network, labels, logs)."""
    context = security(pod, container)
    args = [*user_flag(context, image_user), *security_flags(context)]
    limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
    if limit:
        args += ["--memory", str(int(quantity(limit)))]
    for host_path, path, read_only in mounts:
        args += ["--volume", f"{host_path}:{path}:{'ro' if read_only else 'rw'}"]
    if container.get("workingDir"):
        args += ["--workdir", container["workingDir"]]
    args += [flag for key, value in env.items() for flag in ("--env", f"{key}={value}")]
    command = [expand(part, env) for part in container.get("command") or []]
    if command:
        args += ["--entrypoint", json.dumps(command)]
    args.append(container["image"])
    args += [expand(part, env) for part in container.get("args") or []]
    return args
