"""What a language module tells the symbol engine: the shapes every language shares.

A language module (python.py, rust.py, …) turns the nodes its query captured into these
language-neutral values: an import becomes `Binding`s (a local name bound to a module or
to a member of one, in a file this worker can name), a call's callee becomes a
`CallForm`; the engine (symbols.py) does the scoping and resolution the same way for all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from tree_sitter import Node

__all__ = [
    "Binding",
    "CallForm",
    "FileContext",
    "ImportRef",
    "Spec",
    "Target",
    "body_start",
    "comment_block",
    "node_text",
    "one_line",
]

_SPACES = re.compile(r"\s+")
SIGNATURE_MAX = 300
DOC_MAX = 2000


@dataclass(frozen=True, slots=True)
class Target:
    """A place in another file: its module (`member` None) or a symbol in it.

    `path` is the id path of the other file (for Go, its package directory), relative to
    the repository root, so the symbol's id is `code:sym:<root>/<path>#<member>`.
    """

    path: str
    member: str | None = None


@dataclass(frozen=True, slots=True)
class Binding:
    """A local name an import binds, and what it stands for."""

    name: str
    target: Target


@dataclass(frozen=True, slots=True)
class ImportRef:
    """One imported module as written, the file it resolved to (if any), its bindings."""

    written: str
    file_path: str | None
    bindings: tuple[Binding, ...] = ()


@dataclass(frozen=True, slots=True)
class CallForm:
    """A callee as the engine resolves it.

    - `bare`: `f()`;
    - `self`: `self.m()`, `this.m()`, `this->m()`, `Self::m()`;
    - `qualified`: `X.m()`, `pkg.F()`, `a::b::f()` (`receiver` holds X / a, b).
    """

    kind: Literal["bare", "self", "qualified"]
    name: str
    receiver: tuple[str, ...] = ()


@dataclass(slots=True)
class FileContext:
    """What a language module knows about the file being projected.

    `resolve` is the table the archive worker computed from the archive's file list (the
    written import → the repository path of the file it names); a file ingested alone has
    none and falls back on each language's conventional layout.
    """

    root: str
    path: str
    source: bytes
    options: Mapping[str, object]
    resolve: Mapping[str, str] = field(default_factory=dict)
    package: str = ""
    """Go: the package clause's name; Java: the package declaration."""
    cache: dict[int, frozenset[str]] = field(default_factory=dict)
    """A language module's per-file memo (Go: the names each function declares)."""
    dot_imports: list[str | None] = field(default_factory=list)
    """Go: the package directory of each `import . "path"` (None: not in the archive)."""
    value_imports: set[str] = field(default_factory=set)
    """Java: names a static import binds that are spelled as values (`LOGGER`, `theUnsafe`):
    fields, whose methods are their types', not the importing class's."""

    @property
    def directory(self) -> str:
        return self.path.rpartition("/")[0]


@dataclass(frozen=True, slots=True)
class Spec:
    """A language: its grammar, its query file, and its rules."""

    name: str
    separator: str
    language: Callable[[], object]
    query_file: str
    imports: Callable[[Node, FileContext], list[ImportRef]]
    callee: Callable[[Node, Node, FileContext], CallForm | None]
    doc: Callable[[Node, bytes], str | None]
    visibility: Callable[[Node, str, bytes], str]
    members_visible_bare: bool = False
    """Whether `m()` inside a class body finds the class's own `m` (Java, C++)."""
    module_barrier: bool = False
    """Whether a bare name stops at the nearest module (Rust: items of an enclosing
    module are not in scope without `super::`)."""
    scope_name: Callable[[Node, bytes], str] | None = None
    """How a `@scope` capture is named (Rust: the impl's type without generics)."""
    name_text: Callable[[Node, bytes], str] | None = None
    """How a definition's `@name` is spelled when not as written (C++: a qualified name
    written over several lines, `C::\nf`, is `C::f`)."""
    scope_is_type: bool = False
    """Whether a `@scope` is a type (a Rust impl: its functions are METHODs) or not (a C++
    namespace)."""
    owner: Callable[[Node, bytes], str | None] | None = None
    """A definition's owner that is not its lexical parent (Go: a method's receiver type)."""
    fallback: Callable[[CallForm, FileContext], Target | None] | None = None
    """Where a call that names nothing local or imported lands by the language's rules
    (Go: another file of the same package)."""
    id_path: Callable[[FileContext], str] | None = None
    """The path in this file's symbol ids (default the file's path; Go: its directory)."""
    prepare: Callable[[Node, FileContext], None] | None = None


def node_text(node: Node | None, source: bytes) -> str:
    if node is None:
        return ""
    return source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


def one_line(text: str, limit: int = SIGNATURE_MAX) -> str:
    flat = _SPACES.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def body_start(node: Node) -> int:
    """Where a definition's body begins (its end when it has none)."""
    body = node.child_by_field_name("body")
    return node.end_byte if body is None else body.start_byte


def comment_block(
    node: Node, source: bytes, accept: Callable[[str], bool], strip: Callable[[str], str]
) -> str | None:
    """The comments right above a definition (no blank line between), joined."""
    lines: list[str] = []
    anchor = node
    previous = node.prev_sibling
    while previous is not None and "comment" in previous.type:
        if previous.end_point[0] + 1 < anchor.start_point[0]:
            break
        text = node_text(previous, source)
        if not accept(text):
            break
        lines.insert(0, strip(text))
        anchor, previous = previous, previous.prev_sibling
    doc = "\n".join(line for line in lines).strip()
    return doc[:DOC_MAX] or None
