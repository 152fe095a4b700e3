"""A contract type of our own for import-linter (``.importlinter``): an allow-list of what a package imports.

import-linter's ``forbidden`` contract lists what may not be imported; the core's purity is better said the
other way round, as the list of what it may import (a new import of ``socket`` or ``time`` fails without anyone
having thought of forbidding it). Only direct imports count: what an allowed module imports is its own business.
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output


class AllowedImportsContract(Contract):
    """Every module of ``source_modules`` imports only modules whose top-level package is in ``allowed_modules``.

    Configuration: ``source_modules``: the packages checked; ``allowed_modules``: top-level package names.
    """

    type_name = "allowed"

    source_modules = fields.ListField(subfield=fields.ModuleField())
    allowed_modules = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        allowed = set(self.allowed_modules)  # type: ignore[arg-type]
        refused: list[dict[str, object]] = []
        for source in self.source_modules:  # type: ignore[attr-defined]
            for importer in sorted({source.name, *graph.find_descendants(source.name)}):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    if imported.split(".")[0] in allowed:
                        continue
                    lines = [detail["line_number"] for detail in graph.get_import_details(
                        importer=importer, imported=imported)]
                    refused.append({"importer": importer, "imported": imported, "lines": lines})
        return ContractCheck(kept=not refused, metadata={"refused": refused})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for entry in check.metadata["refused"]:
            where = ", ".join(f"l.{line}" for line in entry["lines"])
            output.print_error(f"{entry['importer']} imports {entry['imported']} ({where}), which is not allowed:",
                               bold=False)
            output.new_line()
        output.print("Import only what allowed_modules lists, or, if the new dependency is right, add it there.")
