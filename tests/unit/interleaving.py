"""Reconciles that race, one API call at a time, in an order a test chooses.

The shell's guarantees ("a finished step never runs twice", "a phase never goes back") are about reconciles that
overlap: two handlers, an event source that retried a delivery that timed out, a resync beside a vcjob event. Each
reconcile reads the JobFlow and its vcjobs in separate requests and then acts on what it read, so another
reconcile, Volcano, a TTL or a user may change the cluster between any two of its requests.

:class:`Interleaving` runs each reconcile (the real :class:`~handlers.jobflows.Reconciler`, unchanged) in a thread
of its own that stops before every call it makes to the API (:class:`SteppedKube` wraps a
:class:`~memory_kube.MemoryKube`). Only one thread moves at a time: the test says which one makes its next call
(:meth:`Interleaving.step`), or changes the cluster itself while all of them wait. So every interleaving of the
reconciles' requests with each other and with the rest of the cluster can be drawn by hypothesis, and replayed
exactly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memory_kube import MemoryKube

STEP_TIMEOUT = 10.0
"""Seconds a step may take before the test calls it a deadlock (a step is one in-memory call: microseconds)."""


@dataclass
class Actor:
    """One reconcile in its own thread; ``error`` is what it raised, if it did."""

    name: str
    thread: threading.Thread | None = None
    go: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    parked: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    done: bool = False
    error: BaseException | None = None
    calls: list[str] = field(default_factory=list)
    """The API calls it made so far, in order (for the failure report)."""


class Interleaving:
    """Threads that each run one reconcile and take turns at every API call (see the module docstring)."""

    def __init__(self) -> None:
        self.actors: list[Actor] = []
        self._local = threading.local()

    def spawn(self, name: str, work: Callable[[], Any]) -> Actor:
        """Start ``work`` in a new thread and let it run up to its first API call (or its end)."""
        actor = Actor(name)

        def run() -> None:
            self._local.actor = actor
            actor.go.acquire()
            try:
                work()
            except BaseException as error:  # reported by the test, which decides what is allowed
                actor.error = error
            finally:
                actor.done = True
                actor.parked.release()

        actor.thread = threading.Thread(target=run, name=name, daemon=True)
        self.actors.append(actor)
        actor.thread.start()
        self._resume(actor)
        return actor

    @property
    def waiting(self) -> list[Actor]:
        """The reconciles stopped before an API call."""
        return [actor for actor in self.actors if not actor.done]

    def step(self, actor: Actor) -> None:
        """Let ``actor`` make its next API call, then stop again before the one after (or end)."""
        assert not actor.done, f"{actor.name} has ended"
        self._resume(actor)

    def finish(self) -> None:
        """Let every reconcile run to its end, oldest first."""
        for actor in self.actors:
            while not actor.done:
                self._resume(actor)

    def gate(self, call: str) -> None:
        """Called by :class:`SteppedKube` before each API call: the calling reconcile waits for its turn."""
        actor: Actor | None = getattr(self._local, "actor", None)
        if actor is None:  # the test itself, changing the cluster between steps
            return
        actor.calls.append(call)
        actor.parked.release()
        actor.go.acquire()

    def _resume(self, actor: Actor) -> None:
        actor.go.release()
        if not actor.parked.acquire(timeout=STEP_TIMEOUT):
            raise AssertionError(f"{actor.name} neither reached its next API call nor ended: a deadlock")


class SteppedKube:
    """A :class:`MemoryKube` whose every call waits for its reconcile's turn (:meth:`Interleaving.gate`)."""

    def __init__(self, kube: MemoryKube, interleaving: Interleaving) -> None:
        self._kube, self._interleaving = kube, interleaving

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._kube, name)
        if not callable(target):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            self._interleaving.gate(name)
            return target(*args, **kwargs)

        return call
