"""The install tier's node that really runs pods: the real kubelet, containerd and kube-proxy, on this machine.

- :mod:`~devcluster.node.network`: the node's network namespace, its link to the host, its ranges;
- :mod:`~devcluster.node.containerd`: containerd's configuration, the pause image, images imported, clean-up;
- :mod:`~devcluster.node.kubelet`: the kubelet's and kube-scheduler's configuration, the node's cgroups;
- :mod:`~devcluster.node.dns`: the cluster-DNS stand-in.

``devcluster/pod_node.py`` starts them with the control plane; docs/control-plane.md tells what each needed here.
"""
