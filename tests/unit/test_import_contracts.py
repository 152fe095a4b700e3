"""The layer order is checked by a tool: ``.importlinter``'s contracts hold (docs/architecture.md, "The rooms and
their order"), run with import-linter as a user would run it (``lint-imports`` from the repository's root)."""

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).parents[2]
LINT = str(Path(sys.executable).with_name("lint-imports"))


def lint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LINT, "--no-cache", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})


def test_every_contract_of_the_repository_is_kept():
    run = lint(REPO)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_an_import_outside_an_allow_list_breaks_the_contract_and_says_where(tmp_path: Path):
    (tmp_path / "pure").mkdir()
    (tmp_path / "pure" / "__init__.py").write_text("")
    (tmp_path / "pure" / "clock.py").write_text("import json\nimport time\n")
    (tmp_path / ".importlinter").write_text(textwrap.dedent("""
        [importlinter]
        root_package = pure
        include_external_packages = True
        contract_types =
            allowed: tests.import_contracts.AllowedImportsContract

        [importlinter:contract:pure]
        name = pure reads no clock
        type = allowed
        source_modules =
            pure
        allowed_modules =
            pure
            json
        """))
    run = lint(tmp_path)
    assert run.returncode == 1
    assert "pure.clock imports time (l.2), which is not allowed" in run.stdout
    assert "json" not in run.stdout.split("Broken contracts")[1]
