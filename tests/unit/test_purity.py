"""The core never reads a clock. (What it may import is an allow-list contract in ``.importlinter``, checked by
``tests/unit/test_import_contracts.py``.)"""

import ast
from pathlib import Path

import jobflow_core

CORE = Path(jobflow_core.__file__).parent
CLOCK_READS = {"now", "utcnow", "today", "time", "monotonic", "perf_counter"}


def modules() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def test_the_core_never_reads_a_clock():
    for path in modules():
        calls = {
            node.func.attr
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        }
        assert not calls & CLOCK_READS, f"{path.name} calls {calls & CLOCK_READS}"
