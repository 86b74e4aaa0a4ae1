"""Java: `import a.b.C;`, `import static a.b.C.m;`, and classes of the same package.

A fully qualified class name resolves through the archive's table (`a.b.C` → the file
declaring it, from each file's package declaration and name); the table also lists the
classes of the file's own package, which Java code names without an import. A file
ingested alone resolves nothing across files.
"""

from __future__ import annotations

import tree_sitter_java
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

__all__ = ["SPEC"]


def _prepare(root: Node, ctx: FileContext) -> None:
    for child in root.named_children:
        if child.type == "package_declaration":
            names = [
                c for c in child.named_children if c.type in ("scoped_identifier", "identifier")
            ]
            if names:
                ctx.package = node_text(names[0], ctx.source)
            return


def imports(node: Node, ctx: FileContext) -> list[ImportRef]:
    names = [c for c in node.named_children if c.type in ("scoped_identifier", "identifier")]
    if not names:
        return []
    written = node_text(names[0], ctx.source)
    is_static = any(c.type == "static" for c in node.children)
    wildcard = any(c.type == "asterisk" for c in node.named_children)
    if wildcard:
        return [ImportRef(written + ".*", None)]
    if is_static:
        owner, _, member = written.rpartition(".")
        if _spelled_as_value(member):
            ctx.value_imports.add(member)
        path = ctx.resolve.get(owner)
        simple = owner.rpartition(".")[2]
        binding = (Binding(member, Target(path, f"{simple}.{member}")),) if path else ()
        return [ImportRef(written, path, binding)]
    path = ctx.resolve.get(written)
    simple = written.rpartition(".")[2]
    return [ImportRef(written, path, (Binding(simple, Target(path, simple)),) if path else ())]


def _spelled_as_value(name: str) -> bool:
    """A field's name by Java's conventions (a constant's ALL_CAPS, a field's lowerCamel),
    not a nested class's UpperCamel."""
    return name[:1].islower() or (len(name) > 1 and name.upper() == name)


def callee(call: Node, _node: Node, ctx: FileContext) -> CallForm | None:
    name = node_text(call.child_by_field_name("name"), ctx.source)
    obj = call.child_by_field_name("object")
    if obj is None:
        return CallForm("bare", name)
    if obj.type == "this":
        return CallForm("self", name)
    if obj.type == "identifier":
        receiver = node_text(obj, ctx.source)
        if receiver in ctx.value_imports:  # `LOGGER.log()`: a method of the field's type
            return None
        return CallForm("qualified", name, (receiver,))
    return None


def fallback(call: CallForm, ctx: FileContext) -> Target | None:
    """`Other.m()` for a class `Other` of this file's package (the table lists them)."""
    if call.kind != "qualified" or len(call.receiver) != 1:
        return None
    simple = call.receiver[0]
    key = f"{ctx.package}.{simple}" if ctx.package else simple
    path = ctx.resolve.get(key)
    if path is None or path == ctx.path:
        return None
    return Target(path, f"{simple}.{call.name}")


def _doc(node: Node, source: bytes) -> str | None:
    return comment_block(
        node,
        source,
        lambda text: text.startswith("/**"),
        lambda text: "\n".join(
            line.strip().lstrip("*").strip()
            for line in text.removeprefix("/**").removesuffix("*/").splitlines()
        ).strip(),
    )


def visibility(node: Node, _name: str, source: bytes) -> str:
    for child in node.children:
        if child.type == "modifiers":
            words = node_text(child, source).split()
            for word in ("public", "protected", "private"):
                if word in words:
                    return word
    return "package"


SPEC = Spec(
    name="java",
    separator=".",
    language=tree_sitter_java.language,
    query_file="java.scm",
    imports=imports,
    callee=callee,
    doc=_doc,
    visibility=visibility,
    members_visible_bare=True,
    fallback=fallback,
    prepare=_prepare,
)
