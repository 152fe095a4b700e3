"""``python -m devcluster build|up|down|status|knative|knative-serving|image``: the command line behind ``make
cluster``, ``make cluster-down``, ``make knative``, ``make knative-serving`` and ``make image`` (``knative-run`` is the
background process ``knative`` starts)."""

from __future__ import annotations

import argparse
import sys

from devcluster import build, cluster, image, knative_eventing, knative_serving, pod_node, serving_engine
from devcluster.state import ClusterState


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster", description=__doc__)
    parser.add_argument("command", choices=["build", "up", "down", "status", "knative", "knative-run", "knative-serving",
                                                   "image"])
    parser.add_argument("--handler-port", type=int, default=8080,
                        help="where the handler listens, for knative (default 8080, the demo's)")
    args = parser.parse_args(argv)
    try:
        if args.command == "knative-run":
            return knative_eventing.run_until_stopped(cluster.DEFAULT_ROOT, handler_port=args.handler_port)
        if args.command == "knative":
            state, _ = cluster.up()
            knative_eventing.start_in_background(state, handler_port=args.handler_port)
            return 0
        if args.command == "knative-serving":
            return serve()
        if args.command == "build":
            return build.main()
        if args.command == "image":
            return image.main()
        if args.command == "up":
            state, _ = cluster.up()
            print(f"export KUBECONFIG={state.kubeconfig}")
            return 0
        if args.command == "down":
            cluster.down()
            for kept in (cluster.TEST_ROOT, cluster.INSTALL_ROOT, cluster.SERVING_ROOT):  # kept by the tests, or
                # make knative-serving's
                if kept.joinpath("state.json").exists():
                    cluster.down(kept)
            return 0
        state = ClusterState.load(cluster.DEFAULT_ROOT)
        if state is None:
            print("devcluster: no cluster recorded; start one with `make cluster`")
            return 1
        for component in state.components:
            print(f"{component.name:24} pid {component.pid:<8} {'running' if component.alive() else 'DEAD'}")
        ok = cluster.healthy(state)
        print(f"API server {state.server}: {'healthy' if ok else 'NOT healthy'}; KUBECONFIG={state.kubeconfig}")
        return 0 if ok else 1
    except (build.BuildError, cluster.ClusterError, RuntimeError) as error:
        print(f"devcluster: {error}", file=sys.stderr)
        return 1


def serve() -> int:
    """``make knative-serving``: a cluster with the pod node (root), Knative Serving's programs as pods, the handler
    from ``knative/base/handler.yaml`` as a Knative Service at zero when idle, the ApiServerSource adapter feeding it
    (docs/knative.md). Left running until ``make cluster-down``."""
    built = image.ensure_image()
    state, _ = cluster.up(cluster.SERVING_ROOT, pods=True)
    load = lambda name: pod_node.load_image(state, name)  # noqa: E731
    load(built)
    with cluster.api_client(state) as api:
        knative_serving.start(state, api, load_image=load)
        serving_engine.deploy(api, load_image=load)
    print(f"export KUBECONFIG={state.kubeconfig}\n"
          f"kubectl get ksvc,pods -n {serving_engine.NAMESPACE} -w   # the handler at zero, woken by a JobFlow:\n"
          "kubectl create ns demo && kubectl apply -n demo -f examples/diamond/\n"
          "make cluster-down stops it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
