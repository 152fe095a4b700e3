"""An HTTP server on 127.0.0.1 that plays the API server for a test, and a kubeconfig that points at it.

The command line's own client (``apiclient``) talks to it exactly as to a real API server, so what a command sends
can be counted and what it gets back chosen; a test gives the request handler (``BaseHTTPRequestHandler``) that
says what the API server answers.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def send_json(handler: BaseHTTPRequestHandler, *bodies: Any, status: int = 200) -> None:
    """Answer with ``bodies`` as JSON, one per line (one body: a plain answer; several: a watch stream)."""
    data = b"".join(json.dumps(body).encode() + b"\n" for body in bodies)
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], kubeconfig: Path) -> Iterator[ThreadingHTTPServer]:
    """Serve ``handler`` until the block ends, with ``kubeconfig`` written to point at it (a token user)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    kubeconfig.write_text(f'apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: '
                          f'"http://127.0.0.1:{httpd.server_address[1]}"}}}}]\nusers: [{{name: u, user: {{token: t}}}}]\n'
                          "contexts: [{name: here, context: {cluster: c, user: u}}]\ncurrent-context: here\n")
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
