"""Package manifests → PACKAGE facts: Cargo.toml, pyproject.toml, package.json, go.mod.

Each gives the package's ecosystem, name and version, and its dependencies (name and
kind: normal, dev, build, optional, peer). Ids are `code:pkg:<ecosystem>/<name>`, names
as each registry compares them (PyPI's normalized form; the others as written). A
manifest that does not parse is reported, never fatal.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MANIFEST_NAMES", "Package", "parse_manifest"]

MANIFEST_NAMES = frozenset({"Cargo.toml", "pyproject.toml", "package.json", "go.mod"})
_PEP508_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")
_PYPI_SEPARATORS = re.compile(r"[-_.]+")


@dataclass(frozen=True, slots=True)
class Package:
    ecosystem: str
    name: str
    version: str | None
    manifest: str
    dependencies: tuple[tuple[str, str], ...]
    """(name, kind), sorted."""


def _pypi(name: str) -> str:
    return _PYPI_SEPARATORS.sub("-", name).lower()


def _table(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _cargo(doc: Mapping[str, Any]) -> tuple[str, str | None, Iterator[tuple[str, str]]] | None:
    package = _table(doc.get("package"))
    name = package.get("name")
    if not isinstance(name, str):
        return None
    version = package.get("version")

    def deps() -> Iterator[tuple[str, str]]:
        sections = [doc, *(_table(t) for t in _table(doc.get("target")).values())]
        for section in sections:
            for key, kind in (
                ("dependencies", "normal"),
                ("dev-dependencies", "dev"),
                ("build-dependencies", "build"),
            ):
                for dep, spec in _table(section.get(key)).items():
                    real = _table(spec).get("package")
                    yield (real if isinstance(real, str) else dep), kind

    return name, version if isinstance(version, str) else None, deps()


def _pyproject(doc: Mapping[str, Any]) -> tuple[str, str | None, Iterator[tuple[str, str]]] | None:
    project = _table(doc.get("project"))
    poetry = _table(_table(doc.get("tool")).get("poetry"))
    name = project.get("name") or poetry.get("name")
    if not isinstance(name, str):
        return None
    version = project.get("version") or poetry.get("version")

    def deps() -> Iterator[tuple[str, str]]:
        for line in project.get("dependencies") or []:
            if isinstance(line, str) and (m := _PEP508_NAME.match(line)):
                yield _pypi(m.group(1)), "normal"
        for group in _table(project.get("optional-dependencies")).values():
            for line in group if isinstance(group, list) else []:
                if isinstance(line, str) and (m := _PEP508_NAME.match(line)):
                    yield _pypi(m.group(1)), "optional"
        for dep in _table(poetry.get("dependencies")):
            if dep.lower() != "python":
                yield _pypi(dep), "normal"

    return _pypi(name), version if isinstance(version, str) else None, deps()


def _package_json(
    doc: Mapping[str, Any],
) -> tuple[str, str | None, Iterator[tuple[str, str]]] | None:
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        return None
    version = doc.get("version")

    def deps() -> Iterator[tuple[str, str]]:
        for key, kind in (
            ("dependencies", "normal"),
            ("devDependencies", "dev"),
            ("peerDependencies", "peer"),
            ("optionalDependencies", "optional"),
        ):
            for dep in _table(doc.get(key)):
                yield dep, kind

    return name, version if isinstance(version, str) else None, deps()


def _go_mod(text: str) -> tuple[str, str | None, Iterator[tuple[str, str]]] | None:
    module: str | None = None
    requires: list[tuple[str, str]] = []
    in_block = False
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if line.startswith("module "):
            module = line.split()[1].strip('"')
        elif line.startswith("require ("):
            in_block = True
        elif in_block and line == ")":
            in_block = False
        elif line.startswith("require ") or (in_block and line):
            words = line.removeprefix("require ").split()
            if words:
                requires.append((words[0].strip('"'), "normal"))
    if module is None:
        return None
    return module, None, iter(requires)


def parse_manifest(path: str, data: bytes) -> Package | None:
    """The package a manifest declares (None: a workspace or nameless manifest).

    Raises ValueError when the manifest does not parse."""
    base = path.rsplit("/", 1)[-1]
    text = data.decode("utf-8")
    found: tuple[str, str | None, Iterator[tuple[str, str]]] | None
    if base == "Cargo.toml":
        ecosystem, found = "cargo", _cargo(tomllib.loads(text))
    elif base == "pyproject.toml":
        ecosystem, found = "pypi", _pyproject(tomllib.loads(text))
    elif base == "package.json":
        doc = json.loads(text)
        ecosystem, found = "npm", _package_json(doc if isinstance(doc, dict) else {})
    else:
        ecosystem, found = "go", _go_mod(text)
    if found is None:
        return None
    name, version, deps = found
    unique = sorted({(dep, kind) for dep, kind in deps if isinstance(dep, str) and dep})
    return Package(ecosystem, name, version, path, tuple(unique))
