"""``python -m demo`` (``make demo``): start everything, run the seed JobFlow, show it live until Succeed.

``python -m demo stop`` stops the Procfile processes (``make cluster-down`` does it before stopping the cluster).
"""

from __future__ import annotations

import sys
import time
import urllib.request
from pathlib import Path

import yaml
from kubernetes.client.rest import ApiException

from demo import procfile, progress
from devcluster import cluster
from devcluster.build import BuildError
from devcluster.testing import LocalCluster
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, ApiType

EXAMPLE = procfile.REPO / "examples" / "diamond"
NAMESPACE = "default"


def wait_for_handler(port: int, components, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                return
        except OSError:
            dead = [c for c in components if not c.alive()]
            if dead:
                raise RuntimeError(f"{dead[0].name} exited; last lines of {dead[0].log}:\n{dead[0].log_tail()}")
            time.sleep(0.2)
    raise RuntimeError(f"the handler did not answer on port {port} within {timeout:.0f} s; see .devcluster/logs/web.log")


def apply_example(local: LocalCluster) -> None:
    """(Re)create the seed JobTemplates and JobFlow, so every demo run starts from scratch."""
    custom = local.custom
    try:
        custom.delete_namespaced_custom_object(JOBFLOW.group, JOBFLOW.version, NAMESPACE, JOBFLOW.plural, "test")
        local.wait_until("the previous demo JobFlow to go", lambda: _absent(local, JOBFLOW, "test"), timeout=30)
    except ApiException as error:
        if error.status != 404:
            raise
    for path in ("jobtemplates.yaml", "jobflow.yaml"):
        for doc in yaml.safe_load_all((EXAMPLE / path).read_text()):
            api_type = JOBFLOW if doc["kind"] == JOBFLOW.kind else JOBTEMPLATE
            try:
                custom.create_namespaced_custom_object(api_type.group, api_type.version, NAMESPACE, api_type.plural,
                                                       doc)
            except ApiException as error:
                if error.status != 409:
                    raise


def _absent(local: LocalCluster, api_type: ApiType, name: str) -> bool:
    try:
        local.custom.get_namespaced_custom_object(api_type.group, api_type.version, NAMESPACE, api_type.plural, name)
    except ApiException as error:
        return error.status == 404
    return False


def main(argv: list[str]) -> int:
    if argv[:1] == ["stop"]:
        procfile.stop_previous(cluster.DEFAULT_ROOT)
        return 0
    try:
        state, _ = cluster.up()
    except (BuildError, cluster.ClusterError) as error:
        print(f"demo: {error}", file=sys.stderr)
        return 1
    local = LocalCluster(state)
    port, components = procfile.start_all(Path(state.root), kubeconfig=state.kubeconfig)
    print(f"demo: started {', '.join(c.name for c in components)} from the Procfile (handler on port {port}); "
          f"logs in {state.log_dir}")
    wait_for_handler(port, components)
    apply_example(local)
    print(f"demo: applied {EXAMPLE.relative_to(procfile.REPO)}: JobFlow `test`, a -> b -> {{c, d}} -> e")
    phase = progress.follow(
        lambda: local.custom.get_namespaced_custom_object(JOBFLOW.group, JOBFLOW.version, NAMESPACE, JOBFLOW.plural,
                                                          "test"), timeout=300)
    kubeconfig = state.kubeconfig
    print(f"""
demo: JobFlow `test` ended {phase}. Look at it with kubectl:
  export KUBECONFIG={kubeconfig}
  export PATH={Path(sys.executable).parent}:$PATH   # kubectl 1.36 and the kubectl-jobflow plugin
  kubectl get jf                     # STATUS and PROGRESS
  kubectl jobflow status test        # the DAG with each job's phase, age and pods
  kubectl jobflow dashboard          # the live web view on http://127.0.0.1:8765/ (Ctrl-C stops it)
  kubectl get jf test -o yaml        # the status: completedJobs, jobStatusList, conditions
  kubectl describe jf test           # the events: Created, PhaseChanged
  kubectl get jt                     # the JobTemplates a..e
The handler and event source keep running (logs: {state.log_dir}); `make demo` again re-runs the flow,
`make cluster-down` stops everything.""")
    return 0 if phase == "Succeed" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
