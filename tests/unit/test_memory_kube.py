"""The in-memory KubeApi of the fast tier offers exactly what the real adapter offers, so the two cannot drift."""

import inspect

from handlers.kube import KubeApi
from memory_kube import MemoryKube


def public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(fn) for name, fn in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_") and fn.__module__ == cls.__module__}


def test_the_memory_kube_has_every_method_of_kubeapi_with_the_same_parameters():
    real = public_methods(KubeApi)
    fake = public_methods(MemoryKube)
    assert real, "KubeApi lost its methods?"
    for name, signature in real.items():
        assert name in fake, f"MemoryKube lacks KubeApi.{name}"
        assert list(fake[name].parameters) == list(signature.parameters), name
