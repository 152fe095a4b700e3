"""An in-memory stand-in for :class:`handlers.kube.KubeApi`, for the fast tier of the shell's tests.

It is not an API server: it keeps plain JSON objects in a dict and answers the handful of calls the reconciler
makes, with the behaviour of the real API server that the shell depends on, and nothing more:

* every write bumps a cluster-wide ``resourceVersion``; a status PUT whose ``resourceVersion`` is not the
  stored one fails with ``Conflict`` (409), as optimistic concurrency does;
* creating a vcjob whose name exists answers AlreadyExists (``Exists``); a ``refuse`` hook plays Volcano's
  admission webhook (``Rejected``); writing the status of an object that is gone answers ``Gone``;
* deleting an object that has finalizers only sets ``deletionTimestamp``; it goes when the last finalizer is
  removed; removing a finalizer from a list that changed since it was read fails with ``Conflict`` (the JSON
  patch's ``test`` op);
* a ConfigMap (the memoization cache) is created once (``Exists`` after) and replaced only with the
  ``resourceVersion`` read (``Conflict`` otherwise);
* LISTs honour label selectors of the forms ``key=value`` (comma-separated) and ``key`` (the label exists).

Tests seed objects with :meth:`MemoryKube.put`, play Volcano with :meth:`MemoryKube.move`, and read what the
handler did from the stored objects and :attr:`MemoryKube.events`. ``tests/unit/test_memory_kube.py`` checks that
this class offers exactly the public methods of ``KubeApi``, with the same parameters, and the cluster tier runs
the same behaviours against the real API server.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any


from apiclient.rest import Conflict, Exists, Gone, Rejected
from jobflow_core.models import format_time
from jobflow_core.vocabulary.api import COMMAND, JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE, VCJOB, ApiType

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
Key = tuple[str, str, str]  # (kind, namespace, name)


def _matches(labels: dict[str, str], selector: str) -> bool:
    for term in filter(None, (part.strip() for part in selector.split(","))):
        key, equals, value = term.partition("=")
        if key not in labels or (equals and labels[key] != value):
            return False
    return True


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    """A JSON merge patch (RFC 7386), in place: None removes a key."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class MemoryKube:
    """The calls of ``KubeApi``, answered from memory (see the module docstring)."""

    def __init__(self) -> None:
        self.objects: dict[Key, dict[str, Any]] = {}
        self.pods: dict[str, list[dict[str, Any]]] = {}
        self.events: list[tuple[str, str, str, str]] = []
        """(involved object's name, type, reason, message) of every recorded event, in order."""
        self.requests = 0
        self.now = T0
        self.refuse: Callable[[dict[str, Any]], str | None] = lambda manifest: None
        """Given a vcjob about to be created, the admission webhook's refusal message, or None to let it in."""
        self.before_status_write: Callable[[dict[str, Any]], None] = lambda obj: None
        """Called with each JobFlow status about to be written, e.g. to make another writer win the race."""
        self.queues: dict[str, dict[str, Any]] = {}
        """Volcano queues by name (none: the queue is not known, so nothing is held back)."""
        self.nodes: list[dict[str, Any]] = []
        self.priority_classes: dict[str, dict[str, Any]] = {}
        self.crds: dict[str, dict[str, Any]] = {}
        """CustomResourceDefinitions by name, for the webhook (``WebhookApi.get_crd``)."""
        self._versions = itertools.count(1)
        self._uids = itertools.count(1)

    # Seeding and playing the rest of the cluster
    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store ``obj`` as a user's ``kubectl apply`` would create it: with a uid, a creation time and a version."""
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("namespace", "default")
        meta.setdefault("uid", f"uid-{next(self._uids)}")
        meta.setdefault("creationTimestamp", format_time(self.tick()))
        meta["resourceVersion"] = str(next(self._versions))
        self.objects[(obj["kind"], meta["namespace"], meta["name"])] = obj
        return copy.deepcopy(obj)

    def tick(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now

    def stored(self, api_type: ApiType, namespace: str, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.objects.get((api_type.kind, namespace, name)))

    def move(self, namespace: str, name: str, phase: str) -> None:
        """Volcano moves vcjob ``name`` to ``phase``."""
        job = self.objects[(VCJOB.kind, namespace, name)]
        stamp = format_time(self.tick())
        status = job.setdefault("status", {})
        status["state"] = {"phase": phase, "lastTransitionTime": stamp}
        status.setdefault("conditions", []).append({"status": phase, "lastTransitionTime": stamp})
        job["metadata"]["resourceVersion"] = str(next(self._versions))

    def remove(self, api_type: ApiType, namespace: str, name: str) -> None:
        """Someone deletes an object (held while it has finalizers, as the API server does)."""
        key = (api_type.kind, namespace, name)
        obj = self.objects.get(key)
        if obj is None:
            return
        if obj["metadata"].get("finalizers"):
            obj["metadata"].setdefault("deletionTimestamp", format_time(self.tick()))
            obj["metadata"]["resourceVersion"] = str(next(self._versions))
        else:
            del self.objects[key]

    def names(self, api_type: ApiType, namespace: str) -> list[str]:
        return sorted(name for kind, ns, name in self.objects if (kind, ns) == (api_type.kind, namespace))

    # The calls of KubeApi
    def _get(self, api_type: ApiType, namespace: str, name: str) -> dict | None:
        self.requests += 1
        return self.stored(api_type, namespace, name)

    def _list(self, api_type: ApiType, namespace: str | None, selector: str = "") -> list[dict]:
        self.requests += 1
        return [copy.deepcopy(obj) for (kind, ns, _), obj in sorted(self.objects.items())
                if kind == api_type.kind and namespace in (None, ns)
                and _matches(obj["metadata"].get("labels") or {}, selector)]

    def _replace_status(self, api_type: ApiType, obj: dict) -> dict:
        self.requests += 1
        meta = obj["metadata"]
        stored = self.objects.get((api_type.kind, meta["namespace"], meta["name"]))
        if stored is None:
            raise Gone(f"{api_type.kind} {meta['name']} not found")
        if stored["metadata"]["resourceVersion"] != meta.get("resourceVersion"):
            raise Conflict(f"conflict: the object has been modified ({api_type.kind} {meta['name']})")
        stored["status"] = copy.deepcopy(obj.get("status"))
        stored["metadata"]["resourceVersion"] = str(next(self._versions))
        return copy.deepcopy(stored)

    def get_jobflow(self, namespace: str, name: str) -> dict | None:
        return self._get(JOBFLOW, namespace, name)

    def list_jobflows(self, namespace: str | None = None) -> list[dict]:
        return self._list(JOBFLOW, namespace or None)

    def replace_jobflow_status(self, flow: dict) -> dict:
        self.before_status_write(flow)
        return self._replace_status(JOBFLOW, flow)

    def list_runs(self, namespace: str, label_selector: str) -> list[dict]:
        return self._list(JOBFLOW, namespace, label_selector)

    def create_jobflow(self, body: dict) -> dict:
        self.requests += 1
        meta = body["metadata"]
        if (JOBFLOW.kind, meta["namespace"], meta["name"]) in self.objects:
            raise Exists(f"jobflows {meta['name']} already exists")
        return self.put(body)

    def patch_jobflow(self, namespace: str, name: str, patch: dict) -> None:
        self.requests += 1
        stored = self.objects.get((JOBFLOW.kind, namespace, name))
        if stored is None:
            return
        _merge(stored, patch)
        stored["metadata"]["resourceVersion"] = str(next(self._versions))

    def label_jobflow(self, namespace: str, name: str, labels: dict, *, resource_version: str) -> dict:
        self.requests += 1
        stored = self.objects.get((JOBFLOW.kind, namespace, name))
        if stored is None:
            raise Gone(f"JobFlow {namespace}/{name} not found")
        if stored["metadata"].get("resourceVersion") != resource_version:
            raise Conflict(f"conflict: the object has been modified (JobFlow {name})")
        _merge(stored, {"metadata": {"labels": labels}})
        stored["metadata"]["resourceVersion"] = str(next(self._versions))
        return copy.deepcopy(stored)

    def delete_jobflow(self, namespace: str, name: str) -> None:
        self.requests += 1
        self.remove(JOBFLOW, namespace, name)

    def get_jobflowtemplate(self, namespace: str, name: str) -> dict | None:
        return self._get(JOBFLOWTEMPLATE, namespace, name)

    def list_jobflowtemplates(self, namespace: str | None = None) -> list[dict]:
        return self._list(JOBFLOWTEMPLATE, namespace or None)

    def replace_jobflowtemplate_status(self, template: dict) -> dict:
        return self._replace_status(JOBFLOWTEMPLATE, template)

    def get_jobtemplate(self, namespace: str, name: str) -> dict | None:
        return self._get(JOBTEMPLATE, namespace, name)

    def list_jobtemplates(self, namespace: str) -> list[dict]:
        return self._list(JOBTEMPLATE, namespace)

    def replace_jobtemplate_status(self, template: dict) -> dict:
        return self._replace_status(JOBTEMPLATE, template)

    def list_vcjobs(self, namespace: str | None, label_selector: str) -> list[dict]:
        return self._list(VCJOB, namespace, label_selector)

    def get_vcjob(self, namespace: str, name: str) -> dict | None:
        return self._get(VCJOB, namespace, name)

    def create_vcjob(self, body: dict) -> None:
        self.requests += 1
        meta = body["metadata"]
        if (VCJOB.kind, meta["namespace"], meta["name"]) in self.objects:
            raise Exists(f"vcjobs {meta['name']} already exists")
        refusal = self.refuse(body)
        if refusal is not None:
            raise Rejected(refusal)
        self.put(body)

    def create_command(self, body: dict) -> None:
        self.requests += 1
        meta = body["metadata"]
        self.objects.setdefault((COMMAND.kind, meta["namespace"], meta["name"]), copy.deepcopy(body))

    def carry_out_commands(self) -> list[str]:
        """Volcano's job controller: abort the target of every Command (it ends Aborted), and delete the Command."""
        done = []
        for key in [key for key in self.objects if key[0] == COMMAND.kind]:
            command = self.objects.pop(key)
            target = command["target"]["name"]
            if command["action"] == "AbortJob" and (VCJOB.kind, key[1], target) in self.objects:
                self.move(key[1], target, "Aborted")
                done.append(target)
        return done

    def remove_finalizer(self, job: dict, finalizer: str) -> None:
        meta = job["metadata"]
        current = meta.get("finalizers") or []
        if finalizer not in current:
            return
        self.requests += 1
        kind = JOBFLOW.kind if job.get("kind") == JOBFLOW.kind else VCJOB.kind
        stored = self.objects.get((kind, meta["namespace"], meta["name"]))
        if stored is None:
            return
        if (stored["metadata"].get("finalizers") or []) != current:
            raise Conflict(f"finalizers of {kind} {meta['name']} changed")
        stored["metadata"]["finalizers"] = [f for f in current if f != finalizer]
        stored["metadata"]["resourceVersion"] = str(next(self._versions))
        if stored["metadata"].get("deletionTimestamp") and not stored["metadata"]["finalizers"]:
            del self.objects[(kind, meta["namespace"], meta["name"])]

    def delete_vcjob(self, namespace: str, name: str) -> None:
        self.requests += 1
        self.remove(VCJOB, namespace, name)

    def get_queue(self, name: str) -> dict | None:
        self.requests += 1
        return self.queues.get(name)

    def list_nodes(self) -> list[dict]:
        self.requests += 1
        return list(self.nodes)

    def get_priority_class(self, name: str) -> dict | None:
        self.requests += 1
        return self.priority_classes.get(name)

    def get_crd(self, name: str) -> dict | None:
        self.requests += 1
        return self.crds.get(name)

    def get_configmap(self, namespace: str, name: str) -> dict | None:
        self.requests += 1
        found = self.objects.get(("ConfigMap", namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def create_configmap(self, body: dict) -> None:
        self.requests += 1
        meta = body["metadata"]
        key = ("ConfigMap", meta["namespace"], meta["name"])
        if key in self.objects:
            raise Exists(f"configmap {meta['name']} already exists")
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(next(self._versions))
        self.objects[key] = stored

    def replace_configmap(self, body: dict) -> None:
        self.requests += 1
        meta = body["metadata"]
        key = ("ConfigMap", meta["namespace"], meta["name"])
        stored = self.objects.get(key)
        if stored is None or stored["metadata"]["resourceVersion"] != meta.get("resourceVersion"):
            raise Conflict(f"conflict: configmap {meta['name']} has been modified")
        replaced = copy.deepcopy(body)
        replaced["metadata"]["resourceVersion"] = str(next(self._versions))
        self.objects[key] = replaced

    def list_pods(self, namespace: str, label_selector: str) -> list[dict]:
        self.requests += 1
        return [copy.deepcopy(pod) for pod in self.pods.get(namespace, [])
                if _matches(pod["metadata"].get("labels") or {}, label_selector)]

    def record_event(self, involved: dict, *, type_: str, reason: str, message: str, now: datetime) -> None:
        self.requests += 1
        self.events.append((involved["metadata"]["name"], type_, reason, message))
