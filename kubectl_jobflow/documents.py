"""Files in, documents out: real YAML multi-document parsing, as kubectl does it.

vcctl split a file on the raw text ``---`` (reference G.16), which cut any document with ``---`` inside a value
in two. Here a file is parsed by a YAML parser (JSON is YAML too); ``-`` is standard input; a directory means
its ``*.yaml``, ``*.yml`` and ``*.json`` files in name order; empty documents are skipped; a ``kind: List`` (what
``kubectl get -o yaml`` prints for several objects) stands for its items. A file that does not parse is an error
naming the file, line and column, before anything is sent to the cluster; so is a file (or standard input) that
holds no object at all (an empty file once passed ``validate``), and a directory that holds a ``kustomization.yaml``
(its files are kustomize's input, not objects: ``--kustomize DIR`` builds them).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubectl_jobflow.formats import holds_kustomization

SUFFIXES = (".yaml", ".yml", ".json")


class DocumentError(ValueError):
    """A file could not be read or parsed; the message names it and says where."""


@dataclass(frozen=True)
class Document:
    source: str
    """``file.yaml#2``: the file and the document's position in it (from 1), for messages."""
    body: dict[str, Any]

    @property
    def kind(self) -> str | None:
        return self.body.get("kind")

    @property
    def name(self) -> str:
        return str((self.body.get("metadata") or {}).get("name") or "")

    @property
    def namespace(self) -> str | None:
        return (self.body.get("metadata") or {}).get("namespace")

    def with_namespace(self, namespace: str) -> dict[str, Any]:
        """The body, with ``metadata.namespace`` filled in when it had none."""
        metadata = dict(self.body.get("metadata") or {})
        metadata.setdefault("namespace", namespace)
        return {**self.body, "metadata": metadata}


def read(paths: Iterable[str]) -> list[Document]:
    """Every document of every file, in order."""
    documents: list[Document] = []
    for path in paths:
        found = [doc for name, text in _texts(path) for doc in parse(text, source=name)]
        if not found:
            raise DocumentError(f"{'standard input' if path == '-' else path} holds no object: give a file with "
                                "at least one JobFlow or JobTemplate")
        documents.extend(found)
    return documents


def kustomize(directory: str) -> list[Document]:
    """The objects kustomize builds from ``directory``, by ``kubectl kustomize`` (else ``kustomize build``): the
    kustomize a kubectl user has, rather than a second one of ours that could build differently."""
    import shutil
    import subprocess

    kubectl, standalone = shutil.which("kubectl"), shutil.which("kustomize")
    if not (kubectl or standalone):
        raise DocumentError("--kustomize runs kubectl kustomize (or kustomize build), and neither kubectl nor "
                            "kustomize is on PATH: install one, or run kubectl kustomize DIR | kubectl jobflow "
                            "create -f -")
    command = [kubectl, "kustomize", directory] if kubectl else [standalone or "kustomize", "build", directory]
    built = subprocess.run(command, capture_output=True, text=True, check=False)
    if built.returncode != 0:
        raise DocumentError(f"{' '.join(command)} failed: {built.stderr.strip() or built.returncode}")
    found = parse(built.stdout, source=f"{directory} (kustomized)")
    if not found:
        raise DocumentError(f"kustomize built no object from {directory}")
    return found


def parse(text: str, *, source: str) -> list[Document]:
    try:
        loaded = list(yaml.safe_load_all(text))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or error
        raise DocumentError(f"{source} is not valid YAML{where}: {problem}") from error
    documents = []
    for index, body in enumerate(loaded, start=1):
        if body is None:
            continue
        if not isinstance(body, dict):
            raise DocumentError(f"{source}#{index} is a {type(body).__name__}, not an object with apiVersion, "
                                "kind and metadata")
        items = body.get("items") if body.get("kind") == "List" else None
        if isinstance(items, list):
            documents.extend(Document(f"{source}#{index}.items[{n}]", item) for n, item in enumerate(items)
                             if isinstance(item, dict))
        else:
            documents.append(Document(f"{source}#{index}", body))
    return documents


def _texts(path: str) -> list[tuple[str, str]]:
    if path == "-":
        return [("<stdin>", sys.stdin.read())]
    location = Path(path)
    if location.is_dir():
        if holds_kustomization(location):
            raise DocumentError(f"{path} is a kustomization: build it with --kustomize {path} (kubectl's -k), or "
                                "give its files one by one")
        files = sorted(p for p in location.iterdir() if p.suffix in SUFFIXES and p.is_file())
        if not files:
            raise DocumentError(f"{path} is a directory without *.yaml, *.yml or *.json files")
    else:
        files = [location]
    texts = []
    for file in files:
        try:
            texts.append((str(file), file.read_text()))
        except OSError as error:
            raise DocumentError(f"cannot read {file}: {error.strerror or error}") from error
    return texts
