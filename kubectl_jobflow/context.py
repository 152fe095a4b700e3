"""What a command gets: its arguments, where to print, the namespace, and (on first use) the cluster.

The API client is imported on first use, so commands that never reach a cluster (and ``--help``) never load it.
"""

from __future__ import annotations

import argparse
from functools import cached_property
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from apiclient.cluster import Cluster, Target


class Context:
    def __init__(self, args: argparse.Namespace, *, out: TextIO, err: TextIO) -> None:
        self.args = args
        self.out = out
        self.err = err
        self._cluster: Cluster | None = None

    @property
    def target(self) -> Target:
        from apiclient.cluster import Target

        return Target(kubeconfig=getattr(self.args, "kubeconfig", None),
                      context=getattr(self.args, "context", None), master=getattr(self.args, "master", None))

    @property
    def namespace_given(self) -> str | None:
        return getattr(self.args, "namespace", None)

    @cached_property
    def namespace(self) -> str:
        """``-n``, else the kubeconfig context's namespace, else ``default``."""
        from apiclient.kubeconfig import default_namespace

        return self.namespace_given or default_namespace(self.target.kubeconfig, context=self.target.context)

    @property
    def cluster(self) -> Cluster:
        if self._cluster is None:
            from apiclient.cluster import Cluster

            self._cluster = Cluster(self.target)
        return self._cluster

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def say(self, line: str) -> None:
        self.write(line + "\n")

    def fail(self, line: str) -> None:
        self.err.write(line + "\n")
        self.err.flush()

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
