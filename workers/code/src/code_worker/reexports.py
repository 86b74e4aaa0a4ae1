"""Re-exports: names a module makes importable without defining them.

`pub use crate::cli::client::Client;` in `src/cli/mod.rs`, or `from .impl import run` in a
package's `__init__.py`, lets other files import `cli::Client` or `pkg.run` from the
re-exporting module. A cross-file CALLS edge aimed at the re-exporting file would name
a symbol that is not defined there and never heal, so the archive worker finds these
lines (a scan, like layout.py's) and each child's table maps the re-exported name to the
module that defines it: `=crate::cli::Client` → `crate::cli::client::Client` (Rust),
`=pkg.run` → `pkg/impl.py#run` (Python). Chains are followed a few hops.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

__all__ = ["python_reexports", "rust_absolute", "rust_reexports", "split_use_tree"]

_RUST_PUB_USE = re.compile(rb"\n[ \t]*+pub(?:\([^)\n]*\))?[ \t]+use[ \t]+([^;]+);")
_PY_FROM = re.compile(rb"\nfrom[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)")
"""Matched after a newline (the file with one put first), as layout.py's `_PY_LINE` is:
a literal newline leads the scan to line starts, where a MULTILINE `^` tries every byte."""
HOPS = 4


def split_use_tree(text: str, prefix: tuple[str, ...] = ()) -> Iterator[tuple[list[str], str]]:
    """(path, local name) for each leaf of a `use` tree written as text."""
    text = " ".join(text.split())
    brace = text.find("{")
    if brace < 0:
        path, _, alias = text.partition(" as ")
        segments = [*prefix, *(s.strip() for s in path.split("::") if s.strip())]
        if segments and segments[-1] not in ("*", "self"):
            yield segments, (alias.strip() or segments[-1])
        elif segments and segments[-1] == "self" and len(segments) > 1:
            yield segments[:-1], (alias.strip() or segments[-2])
        return
    head = tuple(s.strip() for s in text[:brace].split("::") if s.strip())
    body = text[brace + 1 : text.rfind("}")]
    depth, start = 0, 0
    for i, char in enumerate(body + ","):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "," and depth == 0:
            part = body[start:i].strip()
            if part:
                yield from split_use_tree(part, (*prefix, *head))
            start = i + 1


def rust_reexports(
    files: dict[str, bytes], module_of: Callable[[str], list[str] | None]
) -> dict[str, str]:
    """`=crate::<module>::<Name>` → `crate::<defining path>` for one crate's files."""
    out: dict[str, str] = {}
    for path in sorted(files):
        own = module_of(path)
        if own is None:
            continue
        for match in _RUST_PUB_USE.finditer(b"\n" + files[path]):
            tree = match.group(1).decode("utf-8", "replace")
            for segments, local in split_use_tree(tree):
                full = rust_absolute(segments, own)
                if full is not None and local != "_":
                    out["=" + "::".join(["crate", *own, local])] = "::".join(["crate", *full])
    return out


def rust_absolute(segments: list[str], own: list[str]) -> list[str] | None:
    """`crate::a`, `self::a`, `super::a` or `a` (a child module) seen from module `own`."""
    head = segments[0]
    if head == "crate":
        return segments[1:]
    if head == "self":
        return [*own, *segments[1:]]
    if head == "super":
        ups = 0
        while ups < len(segments) and segments[ups] == "super":
            ups += 1
        return None if ups > len(own) else [*own[: len(own) - ups], *segments[ups:]]
    return [*own, *segments]  # a child module (2018 paths); an external crate never matches


def python_reexports(
    init_files: dict[str, bytes],
    module_of: Callable[[str], str],
    absolute: Callable[[str, str], str | None],
) -> dict[str, tuple[str, str]]:
    """`<package>.<name>` → (defining module, name) for each package `__init__.py`."""
    out: dict[str, tuple[str, str]] = {}
    for path in sorted(init_files):
        package = module_of(path)
        for match in _PY_FROM.finditer(b"\n" + init_files[path]):
            source = absolute(match.group(1).decode("ascii", "replace"), path)
            if source is None:
                continue
            names = match.group(2).decode("utf-8", "replace").strip("()")
            for item in names.replace("\n", ",").split(","):
                words = item.split()
                if not words or not words[0].isidentifier():
                    continue
                local = words[2] if len(words) == 3 and words[1] == "as" else words[0]
                out[f"{package}.{local}" if package else local] = (source, words[0])
    return out
