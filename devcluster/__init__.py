"""A real, local Kubernetes control plane with Volcano, for tests and the demo.

Everything the project's integration tests, end-to-end tests and README demo run against is a real component,
built here with the ``go`` command from published Go modules (no Docker, no downloads besides the module proxy):

- etcd, kube-apiserver and kube-controller-manager (garbage collector and namespace controllers only);
- Volcano's scheduler, controller manager (job, podgroup and queue controllers; never its jobflow controllers,
  which this project replaces) and admission webhook manager (served on loopback, registered with the API server);
- kwok, which plays the kubelet of fake nodes: pods of vcjobs become Running and then Succeeded (or Failed) after
  a delay that the pod template chooses through annotations (see ``config/kwok-stages.yaml``).

``build`` turns pinned go.mod files (``gomod/``) into binaries cached outside the repository, ``cluster`` starts
and stops the processes, ``python -m devcluster`` is the command line behind ``make cluster``.
"""
