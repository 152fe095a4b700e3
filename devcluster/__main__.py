"""``python -m devcluster build|up|down|status``: the command line behind ``make cluster`` and ``make cluster-down``."""

from __future__ import annotations

import argparse
import sys

from devcluster import build, cluster
from devcluster.state import ClusterState


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster", description=__doc__)
    parser.add_argument("command", choices=["build", "up", "down", "status"])
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            return build.main()
        if args.command == "up":
            state, _ = cluster.up()
            print(f"export KUBECONFIG={state.kubeconfig}")
            return 0
        if args.command == "down":
            cluster.down()
            if cluster.TEST_ROOT.joinpath("state.json").exists():  # one the tests kept (JOBFLOW_KEEP_CLUSTER=1)
                cluster.down(cluster.TEST_ROOT)
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
    except (build.BuildError, cluster.ClusterError) as error:
        print(f"devcluster: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
