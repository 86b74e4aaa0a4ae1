"""Import aliases from `tsconfig.json` / `jsconfig.json`: `compilerOptions.paths`.

A TypeScript or JavaScript project that writes `import {Button} from '@/components/Button'`
resolves `@/` through its config (`"baseUrl": "."`, `"paths": {"@/*": ["./src/*"]}`), not
through the file system. The archive worker reads every such config of the archive; a
file's config is the nearest one up its folders (as `tsc` finds its project). What is kept:
- `paths`: patterns with at most one `*`; an exact pattern wins over a wildcard one, and
  among wildcards the longest prefix wins; each pattern's substitutions are tried in order;
- `baseUrl`: the folder `paths` are relative to (else the folder of the config that
  writes `paths`, as TypeScript 4.1 and later do);
- `extends` to another config of the archive (a relative path, `.json` optional), up to
  four hops; a package (`@tsconfig/node20`) is outside the archive and ignored.
The files are JSON with comments and trailing commas (what TypeScript itself reads), up to
1 MiB: `read_jsonc` drops those and hands the rest to the json module, so a config that is
anything else (or larger) is ignored, and its project's aliases stay unresolved.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["PathMap", "is_config", "nearest", "path_maps", "read_jsonc"]

_MAX_EXTENDS = 4
_MAX_PATTERNS = 256
_MAX_CONFIG_BYTES = 1 << 20
"""A larger config is ignored (real ones are a few KiB)."""
# Strings are kept whole (a URL's `//` is not a comment); comments and the commas that
# close nothing go. A comment never closed runs to the end (`\Z`): otherwise each later
# `/*` would scan to the end again, quadratic on a hostile file (96 KB of `/* ` took 14 s).
_JSONC_TOKENS = re.compile(rb'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?(?:\*/|\Z)|,(?=\s*[}\]])', re.S)


def read_jsonc(data: bytes) -> object:
    """JSON with `//` and `/* */` comments and trailing commas → its value (ValueError if
    it is not that)."""

    def keep(match: re.Match[bytes]) -> bytes:
        token = match.group()
        return token if token.startswith(b'"') else b" "

    if len(data) > _MAX_CONFIG_BYTES:
        raise ValueError(f"a config of {len(data)} bytes is over {_MAX_CONFIG_BYTES}")
    return json.loads(_JSONC_TOKENS.sub(keep, data.removeprefix(b"\xef\xbb\xbf")))


@dataclass(frozen=True, slots=True)
class PathMap:
    """One config's aliases: patterns and substitutions as repository paths."""

    exact: Mapping[str, tuple[str, ...]]
    wildcard: tuple[tuple[str, str, tuple[str, ...]], ...]
    """(prefix, suffix, substitutions), longest prefix first."""

    def targets(self, specifier: str) -> list[str]:
        """The repository paths (before suffixes) `specifier` may name, in order."""
        if specifier in self.exact:
            return list(self.exact[specifier])
        for prefix, suffix, substitutions in self.wildcard:
            if (
                specifier.startswith(prefix)
                and specifier.endswith(suffix)
                and len(specifier) >= len(prefix) + len(suffix)
            ):
                star = specifier[len(prefix) : len(specifier) - len(suffix)]
                return [s.replace("*", star, 1) for s in substitutions]
        return []


def _options(configs: Mapping[str, bytes], path: str, hops: int = 0) -> dict[str, object]:
    """`compilerOptions` of the config at `path`, with what it extends beneath it, and
    `baseUrl` / `paths` tagged with the folder they are relative to."""
    data = configs.get(path)
    if data is None:
        return {}
    try:
        config = read_jsonc(data)
    except (ValueError, UnicodeDecodeError):
        return {}
    if not isinstance(config, dict):
        return {}
    folder = posixpath.dirname(path)
    merged: dict[str, object] = {}
    parent = config.get("extends")
    if isinstance(parent, str) and parent.startswith(".") and hops < _MAX_EXTENDS:
        target = posixpath.normpath(posixpath.join(folder, parent))
        if not target.endswith(".json"):
            target += ".json"
        merged.update(_options(configs, target, hops + 1))
    options = config.get("compilerOptions")
    if isinstance(options, dict):
        if isinstance(options.get("baseUrl"), str):
            merged["baseUrl"] = (folder, options["baseUrl"])
        if isinstance(options.get("paths"), dict):
            merged["paths"] = (folder, options["paths"])
    return merged


def _in_repository(folder: str, relative: str) -> str | None:
    joined = posixpath.normpath(posixpath.join(folder, relative))
    if joined.startswith("..") or posixpath.isabs(joined):
        return None
    return "" if joined == "." else joined


def _substitutions(base: str, pattern: str, substitutions: object) -> tuple[str, ...]:
    """A pattern's substitutions as repository paths (those with as many `*` as it)."""
    if not isinstance(substitutions, list):
        return ()
    out = []
    for substitution in substitutions:
        if isinstance(substitution, str) and substitution.count("*") == pattern.count("*"):
            target = _in_repository(base, substitution)
            if target is not None:
                out.append(target)
    return tuple(out)


def _path_map(options: Mapping[str, object]) -> PathMap | None:
    paths = options.get("paths")
    if not isinstance(paths, tuple):
        return None
    paths_folder, table = paths
    base_url = options.get("baseUrl")
    base = _in_repository(*base_url) if isinstance(base_url, tuple) else paths_folder
    if base is None:
        return None
    exact: dict[str, tuple[str, ...]] = {}
    wildcard: list[tuple[str, str, tuple[str, ...]]] = []
    for pattern, substitutions in list(table.items())[:_MAX_PATTERNS]:
        if not isinstance(pattern, str) or pattern.count("*") > 1:
            continue
        resolved = _substitutions(base, pattern, substitutions)
        if not resolved:
            continue
        if "*" in pattern:
            prefix, _, suffix = pattern.partition("*")
            wildcard.append((prefix, suffix, tuple(resolved)))
        else:
            exact[pattern] = tuple(resolved)
    if not exact and not wildcard:
        return None
    wildcard.sort(key=lambda entry: -len(entry[0]))  # stable: config order among equals
    return PathMap(exact, tuple(wildcard))


def is_config(path: str) -> bool:
    """A project config, or one a config may extend (`tsconfig.base.json`)."""
    name = posixpath.basename(path)
    return name.endswith(".json") and name.startswith(("tsconfig", "jsconfig"))


def path_maps(configs: Mapping[str, bytes]) -> dict[str, PathMap | None]:
    """Folder → the aliases of the project config in it (None: it has none, or cannot
    be read). `tsconfig.json` wins over `jsconfig.json` in one folder."""
    out: dict[str, PathMap | None] = {}
    for name in ("jsconfig.json", "tsconfig.json"):
        for path in sorted(p for p in configs if posixpath.basename(p) == name):
            out[posixpath.dirname(path)] = _path_map(_options(configs, path))
    return out


def nearest(maps: Mapping[str, PathMap | None], path: str) -> PathMap | None:
    """The aliases of the project `path` belongs to: the nearest config up its folders."""
    folder = posixpath.dirname(path)
    while True:
        if folder in maps:
            return maps[folder]
        if not folder:
            return None
        folder = posixpath.dirname(folder)
