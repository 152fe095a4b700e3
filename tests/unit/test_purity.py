"""The core is pure: it imports only the standard library and pydantic, and never reads a clock."""

import ast
from pathlib import Path

import jobflow_core

CORE = Path(jobflow_core.__file__).parent
ALLOWED = {
    *("jobflow_core", "pydantic"),
    *("collections", "copy", "dataclasses", "datetime", "enum", "functools", "graphlib", "math", "re", "types"),
    *("json", "typing"),
    "zoneinfo",  # the IANA time zone rules of a schedule (jobflow_core.schedules.cron): constant data, no clock
    *("hashlib", "hmac"),  # signing and checking snapshots (jobflow_core.routing.snapshots): pure functions of bytes
    "decimal",  # Kubernetes quantities ("1.5Gi", "500m") read exactly (jobflow_core.vocabulary.resources)
    "celpy",  # the CEL implementation (jobflow_core.flows.conditions): pure evaluation, no I/O
}
CLOCK_READS = {"now", "utcnow", "today", "time", "monotonic", "perf_counter"}


def modules() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def test_the_core_imports_only_the_standard_library_it_needs_and_pydantic():
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert roots <= ALLOWED, f"{path.name} imports {roots - ALLOWED}"


def test_the_core_never_reads_a_clock():
    for path in modules():
        calls = {
            node.func.attr
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        }
        assert not calls & CLOCK_READS, f"{path.name} calls {calls & CLOCK_READS}"
