"""A node of devcluster's that really runs pods: the engine's image, from ``manifests/``, with podman.

- :mod:`~devcluster.pods.network`: the node's and the pods' network namespaces, routes, the API server relay;
- :mod:`~devcluster.pods.kubelet`: the kubelet stand-in's loop (node, binding, snapshots);
- :mod:`~devcluster.pods.pod`: one pod's life (start, probe, restart, report, terminate);
- :mod:`~devcluster.pods.spec`, :mod:`~devcluster.pods.volumes`, :mod:`~devcluster.pods.probes`: the kubelet's
  reading of a pod spec; :mod:`~devcluster.pods.runtime`: podman as the container runtime.

What it does not do, next to a real kubelet, is listed in docs/control-plane.md.
"""
