"""What a vcjob asks of its queue: the requests of its gang, as Volcano's scheduler counts them.

A vcjob is scheduled as a gang: nothing of it runs until ``minAvailable`` of its pods fit at once. What it needs
from the queue to *start* is therefore the requests of those ``minAvailable`` pods (Volcano's PodGroup
``minResources``): the tasks in spec order, each giving its ``minAvailable`` pods (its ``replicas`` when unset),
until the job's ``minAvailable`` (unset: every replica) is reached. A pod requests what its containers request
(their limits where a request is missing, as Kubernetes defaults it).

Amounts are kept as integers in one unit per resource: CPU in millicores (``"2"`` is 2000, ``"500m"`` is 500),
everything else in its base unit (bytes of memory, GPUs). :func:`quantity` reads Kubernetes' quantity strings;
:func:`to_wire` writes amounts back in the forms ``kubectl`` shows.
"""

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, Final

Resources = dict[str, int]
"""Resource name -> amount (CPU in millicores, the rest in base units). A resource absent is zero."""

CPU: Final = "cpu"
MEMORY: Final = "memory"
GPU: Final = "nvidia.com/gpu"

_SUFFIXES: Final = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal(10) ** 3, "M": Decimal(10) ** 6, "G": Decimal(10) ** 9, "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15, "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}


class QuantityError(ValueError):
    pass


def quantity(resource: str, value: Any) -> int:
    """A Kubernetes quantity (``"2"``, ``"500m"``, ``"1Gi"``, ``"1e3"``, ``4``) in this module's units, rounded up
    (as the scheduler rounds a request)."""
    text = str(value).strip()
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if suffix and text.endswith(suffix):
            number, scale = text[: -len(suffix)], _SUFFIXES[suffix]
            break
    else:
        number, scale = text, Decimal(1)
    try:
        amount = Decimal(number) * scale
    except InvalidOperation as error:
        raise QuantityError(f'"{value}" is not a Kubernetes quantity (e.g. "2", "500m", "1Gi")') from error
    if resource == CPU:
        amount *= 1000
    return int(amount.to_integral_value(rounding="ROUND_CEILING"))


def add(*amounts: Mapping[str, int]) -> Resources:
    total: Resources = {}
    for amount in amounts:
        for name, value in amount.items():
            total[name] = total.get(name, 0) + value
    return {name: value for name, value in total.items() if value}


def most(*amounts: Mapping[str, int]) -> Resources:
    """The largest amount of each resource among ``amounts`` (room enough for any one of them)."""
    largest: Resources = {}
    for amount in amounts:
        for name, value in amount.items():
            largest[name] = max(largest.get(name, 0), value)
    return {name: value for name, value in largest.items() if value}


def at_most(amount: Mapping[str, int], limit: Mapping[str, int]) -> Resources:
    """``amount`` with each resource that ``limit`` names cut down to it (what of ``amount`` can ever be held)."""
    return {name: min(value, limit.get(name, value)) for name, value in amount.items() if value}


def scale(amount: Mapping[str, int], factor: int) -> Resources:
    return {name: value * factor for name, value in amount.items() if value * factor}


def exceeding(request: Mapping[str, int], capacity: Mapping[str, int]) -> list[str]:
    """The resources of ``capacity`` that ``request`` asks more of (resources ``capacity`` does not name are not
    limited by it)."""
    return [name for name in sorted(capacity) if request.get(name, 0) > capacity[name]]


def of_wire(values: Mapping[str, Any] | None) -> Resources:
    """A ``{resource: quantity}`` map (a Queue's ``capability``, a node's ``allocatable``) in our units."""
    return {name: quantity(name, value) for name, value in (values or {}).items()}


def to_wire(amount: Mapping[str, int]) -> dict[str, str]:
    """``{resource: quantity}``: CPU as cores (``"8"``, ``"1500m"``), memory in Gi/Mi where exact, the rest as is."""
    return {name: show(name, value) for name, value in sorted(amount.items()) if value}


def show(resource: str, value: int) -> str:
    if resource == CPU:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if resource == MEMORY:
        for suffix in ("Gi", "Mi", "Ki"):
            if value and value % _SUFFIXES[suffix] == 0:
                return f"{value // int(_SUFFIXES[suffix])}{suffix}"
    return str(value)


def describe(amount: Mapping[str, int]) -> str:
    """``"8 CPU, 16Gi memory, 2 nvidia.com/gpu"``: for messages."""
    parts = []
    for name, value in sorted(amount.items(), key=lambda item: (item[0] != CPU, item[0] != MEMORY, item[0])):
        parts.append(f"{show(name, value)} CPU" if name == CPU else f"{show(name, value)} {name}")
    return ", ".join(parts) or "nothing"


def pod_requests(pod_spec: Mapping[str, Any]) -> Resources:
    """What one pod requests: the sum of its containers' requests (a container's limit where its request is
    missing), or its largest init container's, whichever is more, per resource (as the scheduler counts)."""
    def container(c: Mapping[str, Any]) -> Resources:
        resources = c.get("resources") or {}
        values = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        return of_wire(values)

    running = add(*(container(c) for c in pod_spec.get("containers") or ()))
    for init in pod_spec.get("initContainers") or ():
        for name, value in container(init).items():
            running[name] = max(running.get(name, 0), value)
    return running


def gang_requests(spec: Mapping[str, Any]) -> Resources:
    """What a vcjob spec (JSON) needs at once to start: the requests of its first ``minAvailable`` pods."""
    tasks = [task for task in spec.get("tasks") or () if isinstance(task, Mapping)]
    total_replicas = sum(int(task.get("replicas") or 0) for task in tasks)
    left = spec.get("minAvailable")
    left = total_replicas if left is None else int(left)
    needs: list[Resources] = []
    for task in tasks:
        if left <= 0:
            break
        replicas = int(task.get("replicas") or 0)
        wanted = task.get("minAvailable")
        count = min(replicas if wanted is None else int(wanted), left)
        pod = ((task.get("template") or {}).get("spec")) or {}
        needs.append(scale(pod_requests(pod), count))
        left -= count
    return add(*needs)


