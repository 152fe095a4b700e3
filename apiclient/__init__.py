"""The client layer: how every program here talks to the Kubernetes API server, and to an event sink.

The handler, the event source, the command line and the dashboard use it; none of them imports another program's
insides, and nothing here imports a Kubernetes client package (``.importlinter``): the API server's JSON by path,
over urllib3, is all the programs need. What it holds, one concern per module:

* :mod:`apiclient.connection`: one API server, how each request proves who sends it (token, token file, client
  certificate, exec plugin, OIDC id-token, impersonation), HTTPS through urllib3.
* :mod:`apiclient.kubeconfig`: finding the cluster by kubectl's rules (kubeconfig files, contexts, the pod's
  service account), and the namespace a context names.
* :mod:`apiclient.rest`: requests by path, plain JSON in and out, and what their errors mean (one table).
* :mod:`apiclient.cluster`: a connection as a person's command makes it (``kubectl jobflow``, the dashboard):
  failures that say what to do.
* :mod:`apiclient.steering`: the writes a person asks for: suspend, resume, retry.
* :mod:`apiclient.watch`: list, then watch, one type of object, forever: resumed after a cut, re-listed after
  410 Gone and on every resync; :mod:`apiclient.watch_cache`: what the watches have seen of each JobFlow and its
  vcjobs, the source of the snapshots events carry.
* :mod:`apiclient.logs`: the logs of a JobFlow's pods as (stream, line) records, read once or followed (``kubectl
  jobflow logs``, the dashboard).
* :mod:`apiclient.cloudevents`: the CloudEvents envelope, exactly as Knative's ApiServerSource sends it, and
  ``K_CE_OVERRIDES``; :mod:`apiclient.snapshot_key`: the key snapshots are signed with.

It may import the core (:mod:`jobflow_core`), never a program.
"""
