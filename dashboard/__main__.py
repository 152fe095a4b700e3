"""``python -m dashboard``: serve the dashboard (``kubectl jobflow dashboard`` runs this; so does the Deployment).

One process: gevent's WSGI server, a greenlet per connection (an open live page costs a greenlet waiting on the
store, not one of a few threads), up to :data:`CONNECTIONS` at once; the watches are greenlets too. So monkey
patching comes first, before anything imports sockets or threads.
"""

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from ipaddress import ip_address  # noqa: E402

CONNECTIONS = 1000
"""Connections served at once (each an open page's stream, or a request); more wait in the listen queue."""


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m dashboard", description="The JobFlow dashboard.")
    parser.add_argument("--kubeconfig", help="as kubectl's (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
    parser.add_argument("--context")
    parser.add_argument("-n", "--namespace", help="show this namespace only (default: every namespace)")
    parser.add_argument("--address", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (0: any free one; default 8765)")
    parser.add_argument("--read-only", action="store_true",
                        help="no actions (the in-cluster Deployment: it has no user identity)")
    parser.add_argument("--user-header",
                        help="behind an authenticating proxy: the header naming the user; actions impersonate them")
    parser.add_argument("--logs", action=argparse.BooleanOptionalAction, default=None,
                        help="the logs pane (default: on with a person's kubeconfig, off in the cluster, where it "
                             "would read as the ServiceAccount: logs may hold secrets)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from gevent.pool import Pool
    from gevent.pywsgi import WSGIServer

    from apiclient.cluster import Cluster, KubeError, Target
    from apiclient.version import version
    from dashboard.actions import actor, events_reader, template_actor
    from dashboard.app import Settings, create_app
    from dashboard.header import describe
    from dashboard.logs import log_reader
    from dashboard.pages import Pages
    from dashboard.store import Store, watch

    args = parse(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        cluster = Cluster(Target(kubeconfig=args.kubeconfig, context=args.context), program="dashboard")
    except KubeError as error:
        print(f"dashboard: {error}", file=sys.stderr)
        return 1
    namespace = args.namespace or _namespace_allowed(cluster)
    store = Store()
    stop = threading.Event()
    watch(cluster.rest.api, store, namespace=namespace, stop=stop)
    server = WSGIServer((args.address, args.port), None, spawn=Pool(CONNECTIONS), log=None)
    server.init_socket()
    port = server.socket.getsockname()[1]
    loopback = ip_address(args.address).is_loopback if args.address != "localhost" else True
    hosts = (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}") if loopback else ()
    act = None if args.read_only else actor(cluster)
    if act is not None and not loopback and not args.user_header:
        print("dashboard: listening beyond this machine with actions would let anyone who reaches it act as "
              f"{cluster.target.describe()}: pass --read-only, or --user-header behind an authenticating proxy",
              file=sys.stderr)
        return 2
    header = describe(cluster, namespace)
    logs = not header.in_cluster if args.logs is None else args.logs
    settings = Settings(act=act, act_template=None if act is None else template_actor(cluster),
                        user_header=args.user_header, hosts=hosts, header=header,
                        logs=log_reader(cluster) if logs else None)
    server.application = create_app(store, Pages(store, events_reader(cluster)), settings)
    shown = "127.0.0.1" if loopback else args.address
    mode = "read-only" if act is None else f"acting as {cluster.target.describe()}"
    mode += "; logs on" if logs else "; no logs (--logs turns them on)"
    print(f"JobFlow dashboard {version()} of {header.line} ({mode}): http://{shown}:{port}/", flush=True)
    print("Press Ctrl-C to stop.", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
    return 0


def _namespace_allowed(cluster) -> str | None:
    """None (every namespace) when the user may list JobFlows everywhere; else their context's namespace, saying so
    (a user with a namespaced Role still gets a dashboard, of what they may see)."""
    from apiclient.cluster import KubeError
    from apiclient.kubeconfig import default_namespace
    from jobflow_core.vocabulary.api import JOBFLOW

    try:
        cluster.list(JOBFLOW, None, label_selector="flow.volcano.sh/none-such")  # an empty answer, or 403
        return None
    except KubeError as error:
        if error.status != 403:
            raise
    namespace = default_namespace(cluster.target.kubeconfig, context=cluster.target.context)
    print(f"dashboard: you may not list JobFlows in every namespace; showing namespace {namespace} "
          "(-n to choose another)", file=sys.stderr, flush=True)
    return namespace


if __name__ == "__main__":
    sys.exit(main())
