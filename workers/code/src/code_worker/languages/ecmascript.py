"""JavaScript and TypeScript (TSX too): ES and CommonJS imports, and callees.

`import d, {f as g} from './x'` and `import * as ns from './x'` bind names when the
specifier is relative (`./`, `../`): the archive's table says which file it is (the
specifier with an extension or `/index.*`); a file ingested alone assumes the specifier
plus the importing file's own extension. Bare specifiers (`react`) are packages, not
files of the repository: recorded, never resolved.

CommonJS binds the same way (most of npm is written so): `const ns = require('./x')` as
a namespace, `const {f, g: h} = require('./x')` by name, `const f = require('./x').f` a
member, TypeScript's `import ns = require('./x')` a namespace; any other `require('./x')`
of one string is an import without a binding. `exports.f = function` and
`module.exports.f = () => …` define `f` (queries/*.scm).
"""

from __future__ import annotations

import posixpath

import tree_sitter_javascript
import tree_sitter_typescript
from tree_sitter import Node

from .base import (
    Binding,
    CallForm,
    FileContext,
    ImportRef,
    Spec,
    Target,
    comment_block,
    node_text,
)

__all__ = ["JAVASCRIPT", "TSX", "TYPESCRIPT", "relative_target"]

_KNOWN = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")


def relative_target(specifier: str, importer: str) -> str | None:
    """The repository path a relative specifier names from `importer` (None past the root)."""
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(importer), specifier))
    return None if joined.startswith("..") or joined == "." else joined


def file_of(specifier: str, ctx: FileContext) -> str | None:
    relative = specifier.startswith(("./", "../"))
    if "resolve" in ctx.options:
        # The archive's table: relative specifiers, and the aliases of the project's
        # tsconfig `paths` (`@/x`); the table's own keys (`#file`, `*file`, `=name`) are
        # not specifiers.
        if relative or not specifier.startswith(("#", "*", "=")):
            return ctx.resolve.get(specifier)
        return None
    if not relative:
        return None
    base = relative_target(specifier, ctx.path)
    if base is None:
        return None
    if base.endswith(_KNOWN):
        return base
    return base + posixpath.splitext(ctx.path)[1]


def _string(node: Node | None, source: bytes) -> str:
    if node is None:
        return ""
    parts = [node_text(c, source) for c in node.named_children if c.type == "string_fragment"]
    return "".join(parts)


def _clause_bindings(clause: Node, path: str, source: bytes) -> list[Binding]:
    out: list[Binding] = []
    for child in clause.named_children:
        if child.type == "identifier":  # the default export
            out.append(Binding(node_text(child, source), Target(path, "default")))
        elif child.type == "namespace_import":
            names = [c for c in child.named_children if c.type == "identifier"]
            if names:
                out.append(Binding(node_text(names[0], source), Target(path)))
        elif child.type == "named_imports":
            for spec in child.named_children:
                if spec.type != "import_specifier":
                    continue
                name = node_text(spec.child_by_field_name("name"), source)
                alias = spec.child_by_field_name("alias")
                local = node_text(alias, source) if alias is not None else name
                out.append(Binding(local, Target(path, name)))
    return out


def _pattern_bindings(pattern: Node, path: str, source: bytes) -> list[Binding]:
    """`{f, g: h}` = the module: each name bound to the member it names."""
    out: list[Binding] = []
    for child in pattern.named_children:
        if child.type == "shorthand_property_identifier_pattern":
            local = node_text(child, source)
            out.append(Binding(local, Target(path, local)))
            continue
        key, bound = child.child_by_field_name("key"), child.child_by_field_name("value")
        if (
            child.type == "pair_pattern"
            and key is not None
            and bound is not None
            and key.type == "property_identifier"
            and bound.type == "identifier"
        ):
            out.append(Binding(node_text(bound, source), Target(path, node_text(key, source))))
    return out


def _require_bindings(call: Node, path: str, source: bytes) -> list[Binding]:
    """The names a `require(...)` call binds: it must be a declarator's whole value, or
    the object of a member access that is (`require('./x').f`)."""
    value, member = call, None
    parent = call.parent
    if parent is not None and parent.type == "member_expression":
        prop = parent.child_by_field_name("property")
        if prop is None or prop.type != "property_identifier":
            return []
        value, member, parent = parent, node_text(prop, source), parent.parent
    if (
        parent is None
        or parent.type != "variable_declarator"
        or parent.child_by_field_name("value") != value
    ):
        return []
    name = parent.child_by_field_name("name")
    if name is not None and name.type == "identifier":
        return [Binding(node_text(name, source), Target(path, member))]
    if name is not None and name.type == "object_pattern" and member is None:
        return _pattern_bindings(name, path, source)
    return []


def _require(node: Node, ctx: FileContext) -> list[ImportRef]:
    arguments = node.child_by_field_name("arguments")
    strings = [] if arguments is None else arguments.named_children
    specifier = _string(strings[0], ctx.source) if len(strings) == 1 else ""
    if not specifier:
        return []
    path = file_of(specifier, ctx)
    bindings = [] if path is None else _require_bindings(node, path, ctx.source)
    return [ImportRef(specifier, path, tuple(bindings))]


def _import_require(clause: Node, ctx: FileContext) -> list[ImportRef]:
    """TypeScript's `import ns = require('./x')`."""
    specifier = _string(clause.child_by_field_name("source"), ctx.source)
    if not specifier:
        return []
    path = file_of(specifier, ctx)
    names = [c for c in clause.named_children if c.type == "identifier"]
    bindings = (Binding(node_text(names[0], ctx.source), Target(path)),) if path and names else ()
    return [ImportRef(specifier, path, bindings)]


def imports(node: Node, ctx: FileContext) -> list[ImportRef]:
    if node.type == "call_expression":
        return _require(node, ctx)
    for child in node.named_children:
        if child.type == "import_require_clause":
            return _import_require(child, ctx)
    specifier = _string(node.child_by_field_name("source"), ctx.source)
    if not specifier:
        return []
    path = file_of(specifier, ctx)
    bindings: list[Binding] = []
    if path is not None:
        for child in node.named_children:
            if child.type == "import_clause":
                bindings.extend(_clause_bindings(child, path, ctx.source))
    return [ImportRef(specifier, path, tuple(bindings))]


def _member_path(node: Node, source: bytes) -> list[str] | None:
    parts: list[str] = []
    while node.type == "member_expression":
        prop = node.child_by_field_name("property")
        obj = node.child_by_field_name("object")
        if (
            prop is None
            or obj is None
            or prop.type
            not in (
                "property_identifier",
                "private_property_identifier",
            )
        ):
            return None
        parts.insert(0, node_text(prop, source))
        node = obj
    if node.type == "this":
        parts.insert(0, "this")
        return parts
    if node.type != "identifier":
        return None
    parts.insert(0, node_text(node, source))
    return parts


def callee(_call: Node, node: Node, ctx: FileContext) -> CallForm | None:
    parts = _member_path(node, ctx.source)
    if not parts:
        return None
    if len(parts) == 1:
        return CallForm("bare", parts[0])
    if parts[0] == "this":
        return CallForm("self", parts[1]) if len(parts) == 2 else None
    if parts[:-1] in (["exports"], ["module", "exports"]):
        return CallForm("bare", parts[-1])  # this file's own export
    return CallForm("qualified", parts[-1], tuple(parts[:-1]))


def _doc(node: Node, source: bytes) -> str | None:
    anchor = node
    if node.type in ("variable_declarator", "assignment_expression") and node.parent is not None:
        anchor = node.parent  # the declaration, or the statement of `exports.f = …`
    if anchor.parent is not None and anchor.parent.type == "export_statement":
        anchor = anchor.parent
    return comment_block(
        anchor,
        source,
        lambda text: text.startswith("/**"),
        lambda text: "\n".join(
            line.strip().lstrip("*").strip()
            for line in text.removeprefix("/**").removesuffix("*/").splitlines()
        ).strip(),
    )


def visibility(node: Node, name: str, source: bytes) -> str:
    if name.startswith("#"):
        return "private"
    if node.type == "assignment_expression":  # exports.f = …
        return "exported"
    for child in node.children:
        if child.type == "accessibility_modifier":
            return node_text(child, source)
    anchor = node.parent.parent if node.type == "variable_declarator" and node.parent else node
    if (
        anchor is not None
        and anchor.parent is not None
        and anchor.parent.type == "export_statement"
    ):
        return "exported"
    return "public" if node.type in ("method_definition", "method_signature") else "module"


def _spec(name: str, language: object, query: str) -> Spec:
    return Spec(
        name=name,
        separator=".",
        language=language,  # type: ignore[arg-type]
        query_file=query,
        imports=imports,
        callee=callee,
        doc=_doc,
        visibility=visibility,
    )


JAVASCRIPT = _spec("javascript", tree_sitter_javascript.language, "javascript.scm")
TYPESCRIPT = _spec("typescript", tree_sitter_typescript.language_typescript, "typescript.scm")
TSX = _spec("tsx", tree_sitter_typescript.language_tsx, "typescript.scm")
FLOW = _spec("flow", tree_sitter_typescript.language_tsx, "typescript.scm")
"""JavaScript under Flow's `@flow` pragma: its type annotations, generics and `type`
declarations are syntax errors to the JavaScript grammar and read as TSX. On React
Native's 515 Flow files the JavaScript grammar left errors in 484 (6,644 in all), TSX in
262 (1,464)."""
