"""Requests to the API server by path, plain JSON in and out, and what their errors mean for the caller.

Every program here speaks the API server's own JSON (dicts) over one :class:`~apiclient.connection.Connection`
(urllib3; :mod:`apiclient.kubeconfig` makes it by kubectl's rules): nothing is deserialised into generated models,
and no Kubernetes client package is loaded (it took 0.3 s of CPU and some 20 MiB to import, for a transport).

An answer outside 2xx is an :class:`ApiError`, which :func:`translate` turns into what the caller may do next (in
the manner of kopf's errors module: not which HTTP status came back), by one table, :data:`API_ERRORS`:

=====================================================================  ===============  =========================
the API server answered                                                outcome          what the caller does
=====================================================================  ===============  =========================
409 to a create (AlreadyExists)                                        ``Exists``       reads the holder, re-plans
409 to an update (Conflict), or a JSON patch's test op failed (422)    ``Conflict``     re-plans (a JobFlow), or
                                                                                        re-applies its change on
                                                                                        a fresh read (the rest)
404, or 403 with the cause NamespaceTerminating                        ``Gone``         nothing: it went
400, 403 or 422 to a create (a webhook, an admission policy, RBAC)    ``Rejected``     tells the planner why
429, 5xx, no answer                                                    ``Unavailable``  answers 503: retry later
anything else                                                          the ``ApiError`` itself (a 4xx the caller
                                                                       reports)
=====================================================================  ===============  =========================
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, urlencode

from jobflow_core.vocabulary.api import ApiType

if TYPE_CHECKING:
    from apiclient.connection import Connection
    from apiclient.hangup import Hangup


class ApiError(RuntimeError):
    """The API server answered outside 2xx: ``status`` and ``reason`` of the answer, ``body`` its text (a Kubernetes
    ``Status`` object, usually)."""

    def __init__(self, status: int, reason: str = "", body: str | None = None) -> None:
        super().__init__(f"{status} {reason}: {body or ''}".rstrip(": "))
        self.status, self.reason, self.body = status, reason, body

    def status_object(self) -> dict[str, Any] | None:
        """The Kubernetes ``Status`` of the answer; None when the body is not JSON (a proxy's page, say)."""
        try:
            status = json.loads(self.body or "{}")
        except ValueError:
            return None
        return status if isinstance(status, dict) else {}

    @property
    def message(self) -> str:
        """The API server's own message (``jobflows.flow.volcano.sh "x" not found``), else the reason (the body,
        when it is not JSON)."""
        status = self.status_object()
        if status is None:
            return str(self.body or self.reason)
        return status.get("message") or self.reason

    def causes(self) -> list[dict[str, Any]]:
        details = (self.status_object() or {}).get("details")
        causes = details.get("causes") if isinstance(details, dict) else None
        return [cause for cause in causes if isinstance(cause, dict)] if isinstance(causes, list) else []


class Unterminated(str):
    """The last piece of a streamed answer that ended mid-line: no line break came after it, so it may be the start
    of a line that the next answer (asked again after a cut) repeats whole."""


class Conflict(RuntimeError):
    """Someone else changed the object first: a lost write race (409, or a failed JSON patch test)."""


class Exists(RuntimeError):
    """An object of that name exists already (409 AlreadyExists to a create)."""


class Gone(RuntimeError):
    """The object, or its whole namespace, is gone or going: there is nothing left to do with it."""


class Rejected(RuntimeError):
    """The API server refused to create an object: invalid (400/422, e.g. Volcano's vcjob webhook said no) or
    forbidden (403, e.g. an admission policy or our RBAC); its message says why."""


class Unavailable(RuntimeError):
    """The API server could not be reached or is overloaded; the event bus should retry."""


@dataclass(frozen=True)
class ErrorRule:
    when: str
    holds: Callable[[ApiError, str], bool]
    """Given the error and the verb (get, list, create, replace, patch, delete)."""
    outcome: Callable[[ApiError], Exception] | None
    """The exception to raise; None: the ApiError itself."""


API_ERRORS: tuple[ErrorRule, ...] = (
    ErrorRule("409 to a create: a vcjob (or Command) of that name exists", lambda e, verb: e.status == 409
              and verb == "create", lambda e: Exists(f"already exists: {e.message}")),
    ErrorRule("409 to an update: someone wrote first", lambda e, verb: e.status == 409,
              lambda e: Conflict(f"conflict: {e.reason}")),
    ErrorRule("a JSON patch's test failed: the object changed since it was read", lambda e, verb: e.status == 422
              and verb == "patch", lambda e: Conflict(f"conflict: {e.message}")),
    ErrorRule("404: the object is gone", lambda e, verb: e.status == 404, lambda e: Gone(e.message)),
    ErrorRule("403 NamespaceTerminating: its namespace is going", lambda e, verb: e.status == 403
              and any(c.get("reason") == "NamespaceTerminating" for c in e.causes()), lambda e: Gone(e.message)),
    ErrorRule("400, 403 or 422 to a create: refused (a webhook, an admission policy, RBAC)",
              lambda e, verb: verb == "create" and e.status in (400, 403, 422), lambda e: Rejected(e.message)),
    ErrorRule("429 or 5xx: the API server is overloaded or failing", lambda e, verb: e.status in (0, 429)
              or 500 <= (e.status or 0) <= 599, lambda e: Unavailable(f"API server answered {e.status} {e.reason}")),
    ErrorRule("anything else (e.g. 403 to a read: our RBAC)", lambda e, verb: True, None),
)
"""The table of the module docstring, first rule that holds wins."""


def translate(error: ApiError, verb: str) -> Exception:
    """What the API server's ``error`` to a ``verb`` request means for the caller (:data:`API_ERRORS`)."""
    rule = next(rule for rule in API_ERRORS if rule.holds(error, verb))
    return rule.outcome(error) if rule.outcome else error


STRICT: Final = [("fieldValidation", "Strict")]
"""The query of a write that asks for strict field validation, as kubectl does (since 1.27): a field the schema does
not have is refused (``strict decoding error: unknown field ...``), never silently dropped."""

METHODS = {"get": "GET", "list": "GET", "create": "POST", "replace": "PUT", "patch": "PATCH", "delete": "DELETE"}
"""The HTTP method of each verb of :data:`API_ERRORS`."""

Answered = Callable[[str, str], None]
"""Told of each request's verb and outcome (``2xx``, the status, or ``unreachable``), for a program's metrics."""


def _target(path: str, path_params: dict[str, str] | None, query: list[tuple[str, Any]] | None) -> str:
    """``path`` with its ``{name}`` placeholders filled (quoted) and the query appended (booleans as ``true``)."""
    for name, value in (path_params or {}).items():
        path = path.replace(f"{{{name}}}", quote(str(value), safe=""))
    if query:
        path += "?" + urlencode([(key, str(value).lower() if isinstance(value, bool) else str(value))
                                 for key, value in query])
    return path


def _raise_unless_2xx(response: Any) -> None:
    if not 200 <= response.status <= 299:
        text = response.data.decode("utf-8", "replace") if response.data else None
        raise ApiError(response.status, response.reason or "", text)


class Rest:
    """Requests over one connection (:func:`apiclient.kubeconfig.connect`), each answer a dict."""

    def __init__(self, api: Connection, *, answered: Answered | None = None,
                 timeout: float | tuple[float, float] | None = None) -> None:
        self.api = api
        self.answered = answered
        self.timeout = timeout
        self.requests = 0  # API requests made, for the benchmark's "requests per event"

    @property
    def host(self) -> str:
        """The API server's URL."""
        return self.api.host

    def request(self, method: str, path: str, path_params: dict[str, str] | None = None, *,
                query: list[tuple[str, Any]] | None = None, body: Any = None,
                content_type: str = "application/json", headers: dict[str, str] | None = None,
                timeout: float | tuple[float, float] | None = None) -> dict:
        """One request by path (``/apis/...``, ``{name}`` placeholders filled from ``path_params``); an answer
        outside 2xx raises :class:`ApiError`, no answer at all the transport's error (urllib3's, or OSError).
        ``timeout``: this request's, instead of the connection's."""
        sent = json.dumps(body).encode() if body is not None else None
        response = self.api.request(method, _target(path, path_params, query), body=sent,
                                    headers={"Content-Type": content_type, **(headers or {})},
                                    timeout=timeout or self.timeout)
        _raise_unless_2xx(response)
        return json.loads(response.data) if response.data else {}

    def lines(self, path: str, *, query: list[tuple[str, Any]], timeout: tuple[float, float],
              hangup: Hangup | None = None) -> Iterator[dict]:
        """A streamed GET (a watch): each line of the answer as it arrives, decoded; until the server ends it. An
        answer outside 2xx raises :class:`ApiError`, as :meth:`request` does. A last piece without its line break
        is a cut event, never a whole one: it is left out."""
        stream = self.text_lines(path, query=query, timeout=timeout, hangup=hangup)
        try:
            for line in stream:
                if line.strip() and not isinstance(line, Unterminated):
                    yield json.loads(line)
        finally:
            stream.close()  # at once, not when collected: the connection is given back (or closed mid-stream)

    def text_lines(self, path: str, *, query: list[tuple[str, Any]], timeout: tuple[float, float | None],
                   hangup: Hangup | None = None, answered: Callable[[], None] | None = None,
                   max_line: int | None = None) -> Iterator[str]:
        """A streamed GET of text (a watch, a container's log): each line as it arrives, without its line break,
        blank ones too; until the server ends it. An answer outside 2xx raises :class:`ApiError`, as :meth:`request`
        does. A last piece without a line break (the stream ended mid-line) is an :class:`Unterminated`.

        ``answered`` is called once the server answered 2xx (before any line); ``hangup`` holds the answer while it
        is read, so that a stop ends it at once (:mod:`apiclient.hangup`). ``max_line``: a line longer than this many
        bytes (a progress bar that never writes a line break) is cut into pieces of that length, each its own line,
        so the buffer never grows past it."""
        response = self.api.request("GET", _target(path, None, query), timeout=timeout, stream=True)
        complete = False
        if hangup is not None:
            hangup.hold(response)
        try:
            if not 200 <= response.status <= 299:
                response.read(cache_content=True)  # so that .data holds the body, for the error
                complete = True
                _raise_unless_2xx(response)
            if answered is not None:
                answered()
            pending, scanned = bytearray(), 0  # scanned: how far pending is known to hold no line break
            for chunk in response.stream(64 * 1024, decode_content=True):
                pending += chunk  # a bytearray grows in place: a long line costs its length, not its square
                start = 0
                while True:
                    end = pending.find(b"\n", max(start, scanned))
                    cut = max_line is not None and (end < 0 or end - start > max_line) \
                        and len(pending) - start >= max_line
                    if cut:
                        end = start + max_line  # too long: this much of it is a line of its own
                    elif end < 0:
                        break
                    yield pending[start:end].decode("utf-8", "replace")
                    start = end if cut else end + 1
                del pending[:start]
                scanned = len(pending)
            if pending:
                yield Unterminated(pending.decode("utf-8", "replace"))
            complete = True
        finally:
            if hangup is not None:
                hangup.let_go(response)
            if not complete:  # left mid-stream (a stop, an error): the connection's unread rest must not be reused
                response.close()
            response.release_conn()

    def call(self, verb: str, method: str, path: str, path_params: dict[str, str] | None = None, *,
             missing_ok: bool = False, **kwargs: Any) -> Any:
        """:meth:`request`, counted, its errors translated by :data:`API_ERRORS`; ``verb`` is the table's (get,
        list, create, replace, patch, delete; ``record`` for a Kubernetes Event, which no row of a create
        concerns). ``missing_ok``: None for a 404."""
        from urllib3.exceptions import HTTPError  # here: commands that never connect never load urllib3

        from apiclient.connection import CredentialError

        self.requests += 1
        try:
            result = self.request(method, path, path_params, **kwargs)
        except ApiError as error:
            self._answered(verb, str(error.status))
            outcome = translate(error, verb)
            if missing_ok and isinstance(outcome, Gone) and error.status == 404:
                return None
            raise outcome from error
        except (HTTPError, OSError) as error:
            self._answered(verb, "unreachable")
            raise Unavailable(f"API server unreachable: {error}") from error
        except CredentialError as error:  # a credential plugin failed: perhaps for now (a token service down)
            self._answered(verb, "no credential")
            raise Unavailable(f"no credential for the API server: {error}") from error
        self._answered(verb, "2xx")
        return result

    def custom(self, verb: str, api_type: ApiType, namespace: str | None, name: str | None = None,
               body: Any = None, *, missing_ok: bool = False, status: bool = False,
               query: list[tuple[str, Any]] | None = None, content_type: str = "application/json") -> Any:
        """A request about objects of ``api_type``: of ``namespace`` (every namespace when it is None), the one
        called ``name`` (its status subresource when ``status``)."""
        path, params = f"/apis/{api_type.group}/{api_type.version}", {}
        if namespace is not None:
            path, params["namespace"] = path + "/namespaces/{namespace}", namespace
        path += f"/{api_type.plural}"
        if name is not None:
            path, params["name"] = path + "/{name}" + ("/status" if status else ""), name
        return self.call(verb, METHODS[verb], path, params, missing_ok=missing_ok, query=query, body=body,
                         content_type=content_type)

    def _answered(self, verb: str, outcome: str) -> None:
        if self.answered is not None:
            self.answered(verb, outcome)
