"""The two maps of the core, ``jobflow_core/__init__.py``'s docstring and docs/architecture.md's "Where each decision
lives", list every module of ``jobflow_core`` (``jobflow_core/models`` included) once, with the one decision it owns,
and say the same: a new module missing from either, or a decision reworded in one only, fails here."""

import pkgutil
import re
from pathlib import Path

import jobflow_core

ARCHITECTURE = Path(__file__).parents[2] / "docs" / "architecture.md"


def modules() -> list[str]:
    """Every module of the package, by its dotted name without ``jobflow_core.`` (a subpackage by its own name)."""
    found = pkgutil.walk_packages(jobflow_core.__path__, prefix="jobflow_core.")
    return sorted(info.name.removeprefix("jobflow_core.") for info in found)


def docstring_map() -> list[tuple[str, str]]:
    """(module, decision) for each bullet of the package docstring, in order."""
    bullets = re.split(r"\n(?=\* )", jobflow_core.__doc__ or "")[1:]
    entries = []
    for bullet in bullets:
        text = " ".join(bullet.split("\n\n")[0].split())
        match = re.fullmatch(r"\* :mod:`~jobflow_core\.([\w.]+)`: (.+)\.", text)
        assert match, f"a bullet of jobflow_core's map is not ':mod:`~jobflow_core.<module>`: <decision>.': {text}"
        entries.append((match[1], match[2].replace("``", "`")))
    return entries


def architecture_map() -> list[tuple[str, str]]:
    """(module, decision) for each row of the table under "Where each decision lives", in order."""
    text = ARCHITECTURE.read_text()
    section = text[text.index("## Where each decision lives"):]
    section = section[:section.index("\n## ", 1)]
    rows = re.findall(r"^\| (.+) \| `jobflow_core/([\w/]+?)(?:\.py|/)` \|$", section, flags=re.MULTILINE)
    return [(path.replace("/", "."), decision) for decision, path in rows]


def test_the_package_docstring_lists_every_module_once():
    listed = [module for module, _ in docstring_map()]
    assert sorted(listed) == modules()


def test_docs_architecture_lists_every_module_once():
    listed = [module for module, _ in architecture_map()]
    assert sorted(listed) == modules()


def test_both_maps_say_the_same_decisions_in_the_same_order():
    assert architecture_map() == docstring_map()


def test_a_module_the_maps_do_not_know_is_found():
    assert "dag.skips" in modules() and "models.base" in modules() and "models" in modules() and "dag" in modules()
