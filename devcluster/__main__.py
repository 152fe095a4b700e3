"""``python -m devcluster build|up|down|status|knative|image``: the command line behind ``make cluster``, ``make
cluster-down``, ``make knative`` and ``make image`` (``knative-run`` is the background process ``knative`` starts)."""

from __future__ import annotations

import argparse
import sys

from devcluster import build, cluster, image, knative_eventing
from devcluster.state import ClusterState


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster", description=__doc__)
    parser.add_argument("command", choices=["build", "up", "down", "status", "knative", "knative-run", "image"])
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
            for kept in (cluster.TEST_ROOT, cluster.INSTALL_ROOT):  # the tests kept them (JOBFLOW_KEEP_CLUSTER=1)
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


if __name__ == "__main__":
    sys.exit(main())
