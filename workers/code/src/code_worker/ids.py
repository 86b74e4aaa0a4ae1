"""The code projection's deterministic node ids and child job names, made in this one place.

`code:file:<root>/<path>`, `code:sym:<root>/<path>#<qualified name>`,
`code:pkg:<ecosystem>/<name>` and `code:repo:<root>` read as what they name. Their parts
come from the input (member paths, manifest names, qualified names), so a real
repository can spell one that no node id may be (over 512 UTF-8 bytes: a path nested
twenty folders deep; a control character: a tar member named with a newline). Such an
id becomes `code:<kind>:~<blake3 of its tail>`: still deterministic, and the same on
every side that names it (the file's own job, the archive's CONTAINS edge, a call from
another file), so edges to it still heal. It refused the builder before, and a whole
archive's job ended `transient` over one deep path (found on /usr/include and on made
archives). A child job's name, `code:<root>/<path>@<blake3>`, is hashed the same way
when the core could not take it (the core refused the whole archive's submission).
"""

from __future__ import annotations

import blake3

from workers_common import is_child_name, is_node_id

__all__ = ["child_name", "code_id", "file_id", "package_id", "repository_id", "symbol_id"]

_HASHED_HEX = 32
"""Hex digits of blake3 kept in a hashed id (128 bits)."""


def _digest(text: str) -> str:
    return blake3.blake3(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASHED_HEX]


def code_id(kind: str, tail: str) -> str:
    """`code:<kind>:<tail>`, or its hashed form when that cannot be a node id."""
    natural = f"code:{kind}:{tail}"
    return natural if is_node_id(natural) else f"code:{kind}:~{_digest(tail)}"


def file_id(root: str, path: str) -> str:
    return code_id("file", f"{root}/{path}")


def symbol_id(root: str, id_path: str, key: str) -> str:
    return code_id("sym", f"{root}/{id_path}#{key}")


def package_id(ecosystem: str, name: str) -> str:
    return code_id("pkg", f"{ecosystem}/{name}")


def repository_id(root: str) -> str:
    return code_id("repo", root)


def child_name(root: str, path: str, version: str, kind: str = "code") -> str:
    """`<kind>:<root>/<path>@<version>` (version: the blake3 of the bytes; kind `code` for a
    source file, `doc` for a document), or, when no child job may be named so,
    `<kind>:~<blake3 of root/path>@<version>`."""
    natural = f"{kind}:{root}/{path}@{version}"
    return natural if is_child_name(natural) else f"{kind}:~{_digest(f'{root}/{path}')}@{version}"
