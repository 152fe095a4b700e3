"""The client layer: how every program here talks to the Kubernetes API server, and to an event sink.

The handler, the event source, the command line and the dashboard use it; none of them imports the Kubernetes
client, or another program's insides (``.importlinter``). What it holds, one concern per module:

* :mod:`apiclient.kubeconfig`: finding the cluster by kubectl's rules (kubeconfig files, contexts, the pod's
  service account), and the namespace a context names.
* :mod:`apiclient.rest`: requests by path, plain JSON in and out, and what their errors mean (one table).
* :mod:`apiclient.cluster`: a connection as a person's command makes it (``kubectl jobflow``, the dashboard):
  failures that say what to do.
* :mod:`apiclient.steering`: the writes a person asks for: suspend, resume, retry.
* :mod:`apiclient.watch`: list, then watch, one type of object, forever: resumed after a cut, re-listed after
  410 Gone and on every resync; :mod:`apiclient.watch_cache`: what the watches have seen of each JobFlow and its
  vcjobs, the source of the snapshots events carry.
* :mod:`apiclient.cloudevents`: the CloudEvents envelope, exactly as Knative's ApiServerSource sends it, and
  ``K_CE_OVERRIDES``; :mod:`apiclient.snapshot_key`: the key snapshots are signed with.

It may import the core (:mod:`jobflow_core`), never a program.
"""
