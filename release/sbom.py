"""A CycloneDX software bill of materials for a release, from the lock file the image installs from.

``requirements/image.txt`` (``make lock``, uv's pip-compile format) pins every package of the image with its
version and the sha256 of each file it may install; the SBOM lists them as components (a ``pkg:pypi`` purl, the
hashes), under the engine itself. Packages whose marker excludes the image's platform (Linux, CPython) are listed
too, with the marker as a property: the lock file is the record, and which of them the image holds is the marker's
business. Pure: text in, a dict out.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime

_REQUIREMENT = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)"
                          r"\s*(?:;\s*(?P<marker>[^\\]+?))?\s*\\?$")
_HASH = re.compile(r"--hash=sha256:(?P<digest>[0-9a-f]{64})")


@dataclass
class Locked:
    """One package of a lock file."""

    name: str
    version: str
    marker: str | None
    hashes: list[str] = field(default_factory=list)


def locked(text: str) -> list[Locked]:
    """The packages of a uv/pip-compile lock file with hashes, in its order."""
    packages: list[Locked] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if match := _REQUIREMENT.match(stripped):
            packages.append(Locked(match["name"], match["version"], (match["marker"] or "").strip() or None))
        elif packages and (hashed := _HASH.search(stripped)):
            packages[-1].hashes.append(hashed["digest"])
        else:
            raise ValueError(f"not a line of a hashed lock file: {line!r}; regenerate it with `make lock`")
    return packages


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def cyclonedx(lock_text: str, *, name: str, version: str, revision: str, now: datetime) -> dict:
    """A CycloneDX 1.5 JSON document: the engine ``name`` ``version`` built from ``revision``, and what it locks."""
    components = []
    for package in locked(lock_text):
        purl = f"pkg:pypi/{_normalized(package.name)}@{package.version}"
        component = {"type": "library", "bom-ref": purl, "name": package.name, "version": package.version,
                     "purl": purl, "hashes": [{"alg": "SHA-256", "content": h} for h in package.hashes]}
        if package.marker:
            component["properties"] = [{"name": "python:environment-marker", "value": package.marker}]
        components.append(component)
    engine = f"pkg:pypi/{_normalized(name)}@{version}"
    return {
        "bomFormat": "CycloneDX", "specVersion": "1.5",
        "serialNumber": f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'{engine}?vcs_commit={revision}')}",
        "version": 1,
        "metadata": {"timestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                     "component": {"type": "application", "bom-ref": engine, "name": name, "version": version,
                                   "purl": engine, "licenses": [{"license": {"id": "Apache-2.0"}}],
                                   "properties": [{"name": "vcs:commit", "value": revision}]}},
        "components": components,
        "dependencies": [{"ref": engine, "dependsOn": [c["bom-ref"] for c in components]}],
    }
