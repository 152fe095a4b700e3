"""One of each test helper: the seed diamond, the capture sink, the /healthz wait and the Pod Security check.

Each used to be written again by every test that needed it, each copy a little different (a sink that parsed JSON
and one that kept bytes, a wait that noticed its server die and one that did not), so a fix or a change reached some
copies and not others. Each now has one home, and a test fails, naming file and line, when a second definition
appears in the Python source of ``tests/`` or ``benchmarks/`` (golden outputs and other data files define nothing).
What counts as a definition:

- the seed diamond (home ``tests/seeds.py``): its join ``e -> [c, d]`` written as targets, inline in YAML, JSON or
  Python (``targets: [c, d]``, ``"targets": ["c", "d"]``, ``targets=["c", "d"]``) or as a YAML block list;
- a capture sink (home ``tests/sinks.py``): a ``BaseHTTPRequestHandler`` subclass whose ``do_POST`` stores what it
  was sent (calls ``append``, ``extend``, ``add``, ``insert`` or ``put``, or assigns into a subscript). A server
  that answers GETs (an API server stand-in, a probe target) or passes requests on (a proxy) stores nothing there;
- a /healthz wait (home ``tests/healthz.py``): a function that both names the path ``healthz`` in a string and
  opens an HTTP connection itself (``urlopen``, ``Request``, ``HTTPConnection``, ``HTTPSConnection``);
- a Pod Security check (home ``tests/pod_security.py``): the label ``pod-security.kubernetes.io/<mode>`` or the word
  ``PodSecurity`` (how admission signs its refusal) in the source.

The fix is always the same: use the helper from its home (a variant is built from it, as ``test_eta.py`` adds a
flow to :func:`seeds.diamond_flows`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import yaml

from seeds import diamond

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
HOMES = {"diamond": TESTS / "seeds.py", "sink": TESTS / "sinks.py", "healthz": TESTS / "healthz.py",
         "pod security": TESTS / "pod_security.py"}

DIAMOND_JOIN = re.compile(r"""targets\W{0,6}\[\s*['"]?c['"]?\s*,\s*['"]?d['"]?\s*\]"""  # inline, any quoting
                          r"|targets:[ \t]*\n[ \t]*-[ \t]*c[ \t]*\n[ \t]*-[ \t]*d\b")  # a YAML block list
POD_SECURITY = re.compile(r"pod-security\.kubernetes\.io/(enforce|audit|warn)|PodSecurity")
HEALTHZ_PATH = re.compile(r"(^|/)healthz\b")
HTTP_CALLS = {"urlopen", "Request", "HTTPConnection", "HTTPSConnection"}
STORING_CALLS = {"append", "extend", "add", "insert", "put"}


def sources() -> Iterator[tuple[Path, str]]:
    """Every Python file of tests/ and benchmarks/ but this one (it spells the rules out)."""
    for folder in (TESTS, REPO / "benchmarks"):
        for path in sorted(folder.rglob("*.py")):
            if "__pycache__" not in path.parts and path != Path(__file__).resolve():
                yield path, path.read_text()


def where(path: Path, text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"{path.relative_to(REPO)}:{line}"


def called_names(node: ast.AST) -> set[str]:
    calls = (n.func for n in ast.walk(node) if isinstance(n, ast.Call))
    return {f.attr if isinstance(f, ast.Attribute) else f.id for f in calls if isinstance(f, ast.Attribute | ast.Name)}


def stores(function: ast.AST) -> bool:
    """Whether ``function`` keeps something: a storing call, or an assignment into a subscript."""
    assigns = (n for n in ast.walk(function) if isinstance(n, ast.Assign))
    return bool(called_names(function) & STORING_CALLS) or any(
        isinstance(target, ast.Subscript) for assign in assigns for target in assign.targets)


def post_handler(handler: ast.ClassDef) -> ast.AST | None:
    """The method serving POST: ``def do_POST``, or the method named by ``do_POST = ...``."""
    methods = {n.name: n for n in handler.body if isinstance(n, ast.FunctionDef)}
    for node in handler.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "do_POST" for t in node.targets):
            return methods.get(node.value.id) if isinstance(node.value, ast.Name) else None
    return methods.get("do_POST")


def capture_sinks(tree: ast.AST) -> Iterator[ast.ClassDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(
                (base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")) == "BaseHTTPRequestHandler"
                for base in node.bases):
            method = post_handler(node)
            if method is not None and stores(method):
                yield node


def healthz_polls(tree: ast.AST) -> Iterator[ast.FunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            strings = (n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str))
            if any(HEALTHZ_PATH.search(s) for s in strings) and called_names(node) & HTTP_CALLS:
                yield node


def second_definitions() -> dict[str, list[str]]:
    """helper -> every place outside its home that defines it again."""
    found: dict[str, list[str]] = {helper: [] for helper in HOMES}
    for path, text in sources():
        tree, name = ast.parse(text), path.relative_to(REPO)
        if path != HOMES["diamond"]:
            found["diamond"] += [where(path, text, match.start()) for match in DIAMOND_JOIN.finditer(text)]
        if path != HOMES["pod security"]:
            found["pod security"] += [where(path, text, match.start()) for match in POD_SECURITY.finditer(text)]
        if path != HOMES["sink"]:
            found["sink"] += [f"{name}:{node.lineno} (class {node.name})" for node in capture_sinks(tree)]
        if path != HOMES["healthz"]:
            found["healthz"] += [f"{name}:{node.lineno} (def {node.name})" for node in healthz_polls(tree)]
    return found


def test_each_helper_is_defined_once_in_its_home() -> None:
    found = second_definitions()
    said = [f"{place}: a second {helper} definition; use {HOMES[helper].relative_to(REPO)}"
            for helper, places in found.items() for place in places]
    assert said == [], "\n".join(said)


def test_each_home_holds_its_helper() -> None:
    """The rules above would pass on a repository with no helpers at all: the homes must match them."""
    assert DIAMOND_JOIN.search(HOMES["diamond"].read_text())
    assert list(capture_sinks(ast.parse(HOMES["sink"].read_text())))
    assert list(healthz_polls(ast.parse(HOMES["healthz"].read_text())))
    assert POD_SECURITY.search(HOMES["pod security"].read_text())


def test_the_seed_diamond_is_the_example_users_run() -> None:
    """``make demo`` applies ``examples/diamond/``: the tests' diamond is that JobFlow, so what they prove holds
    for it."""
    example = yaml.safe_load((REPO / "examples" / "diamond" / "jobflow.yaml").read_text())
    assert example == diamond(retain="delete")
