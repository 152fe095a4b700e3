"""The event source: watches JobFlows, JobTemplates and the vcjobs JobFlows created, and POSTs every change to an
HTTP sink (``K_SINK``) as a CloudEvent in exactly the format of Knative's ApiServerSource.

It does what ApiServerSource does not, because a stateless reconciler depends on it:

- it announces the objects that already exist when it starts (ApiServerSource swallows its initial list);
- it re-announces every object periodically (``RESYNC_SECONDS``), a level-triggered safety net;
- it re-lists after the API server answers 410 Gone, announcing what changed in the gap (deletes included);
- it re-announces JobFlows that wait for a probe as often as their status asks (``recheckSeconds``), because a
  server starting to answer changes no Kubernetes object;
- a failing sink is retried with exponential backoff by a sender thread, while the watches go on; pending events
  for the same object are coalesced (events are hints: the handler re-reads the truth), so memory stays bounded
  by the number of objects, never by the length of an outage.

Modules: ``outbox`` (coalescing and delivery), ``watcher`` (what a change becomes: an event, or nothing),
``recheck`` (probe wake-ups), ``wakeup`` (JobFlowTemplate wake-ups), ``runner`` (:func:`start`: all of them in
threads, for ``__main__`` and the tests), ``__main__`` (configuration from the environment). The event format, the
watch loop, what is watched and the cache of what it saw are the client layer's (:mod:`apiclient.cloudevents`,
:mod:`apiclient.watch`, :mod:`apiclient.watch_cache`); the types watched and their names on the wire are
:mod:`jobflow_core.vocabulary.api`'s.
"""

from eventsource.runner import EventSource, start

__all__ = ["EventSource", "start"]
