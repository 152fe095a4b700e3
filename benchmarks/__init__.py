"""Benchmarks of the JobFlow engine on the local control plane (``make cluster`` must already be running).

Scripts, not tests: each one measures, prints a short table and writes ``benchmarks/results/<name>.json``.

- ``reconciler``: the handler and event source as real processes: dependency latency (``dependency_latency``),
  API requests and status writes per event (``requests_per_event``), events per second of one gunicorn worker
  (``throughput``), and cold start plus memory (``cold_start``); each part also runs on its own.
- ``control_plane``: how long a one-pod vcjob takes to reach Completed without any JobFlow, the floor under every
  dependency latency.

``common`` holds the plumbing they share: the cluster connection, namespaces, object builders, starting the
Procfile's processes, a vcjob watch that timestamps phases, percentiles and result files.
"""
