"""``python -m devcluster.pods``: the pod node's process, started and stopped by ``devcluster/cluster.py``.

It runs until SIGTERM, then removes the containers and pod namespaces it made and exits.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

from apiclient import connect
from devcluster.pods.kubelet import Kubelet
from devcluster.pods.network import Forwarder, NodeNetwork


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster.pods", description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--network", type=int, required=True, help="n of the node network (devcluster/pods/network.py)")
    parser.add_argument("--apiserver-port", type=int, required=True)
    parser.add_argument("--node", required=True)
    parser.add_argument("--pods-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(message)s")
    network = NodeNetwork(args.network)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    forwarder = Forwarder((network.host_ip, args.apiserver_port), ("127.0.0.1", args.apiserver_port))
    kubelet = Kubelet(api=connect(args.kubeconfig), network=network, node=args.node, pods_dir=args.pods_dir)
    try:
        kubelet.run(stop)
    finally:
        kubelet.shutdown()
        forwarder.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
