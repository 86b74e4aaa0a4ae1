"""Python: imports (`import a.b as c`, `from .x import f`) and callees.

A module name resolves through the archive's table (written module → file path); a file
ingested alone assumes the conventional layout (`a.b` is `a/b.py` under the same root).
`from a import b` binds `b` to the module `a.b` when the table knows such a module, else
to the member `b` of `a`.
"""

from __future__ import annotations

import tree_sitter_python
from tree_sitter import Node

from .base import Binding, CallForm, FileContext, ImportRef, Spec, Target, node_text

__all__ = ["SPEC", "module_name"]

_SELF = frozenset({"self", "cls"})


def module_name(path: str) -> str:
    """The dotted module a repository path is, from its layout alone (`a/b/__init__.py` → `a.b`)."""
    stem = path.rsplit(".", 1)[0] if path.endswith((".py", ".pyi", ".ipynb")) else path
    parts = [part for part in stem.split("/") if part]
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _own_module(ctx: FileContext) -> tuple[str, bool]:
    given = ctx.options.get("module")
    name = given if isinstance(given, str) else module_name(ctx.path)
    return name, ctx.path.rsplit("/", 1)[-1].startswith("__init__.")


def absolute(written: str, ctx: FileContext) -> str | None:
    """`..x` seen from this file → the absolute dotted name (None past the top)."""
    level = len(written) - len(written.lstrip("."))
    rest = written[level:]
    if level == 0:
        return rest
    own, is_package = _own_module(ctx)
    parts = own.split(".") if own else []
    drop = level - 1 if is_package else level
    if drop > len(parts):
        return None
    base = parts[: len(parts) - drop]
    return ".".join([*base, rest] if rest else base)


def file_of(module: str, ctx: FileContext, *, relative: bool = False) -> str | None:
    """The file of a module: the archive's table, else (a file ingested alone) only a
    relative import's, by the conventional layout: an absolute one may be anywhere."""
    if "resolve" in ctx.options:
        return ctx.resolve.get(module)
    return module.replace(".", "/") + ".py" if module and relative else None


def _import_statement(node: Node, ctx: FileContext) -> list[ImportRef]:
    out: list[ImportRef] = []
    for child in node.named_children:
        if child.type == "aliased_import":
            dotted = node_text(child.child_by_field_name("name"), ctx.source)
            local = node_text(child.child_by_field_name("alias"), ctx.source)
        elif child.type == "dotted_name":
            dotted = local = node_text(child, ctx.source)
        else:
            continue
        path = file_of(dotted, ctx)
        bindings = (Binding(local, Target(path)),) if path else ()
        out.append(ImportRef(dotted, path, bindings))
    return out


def _from_statement(node: Node, ctx: FileContext) -> list[ImportRef]:
    module_node = node.child_by_field_name("module_name")
    written = node_text(module_node, ctx.source)
    module = absolute(written, ctx)
    if module is None:
        return [ImportRef(written, None)]
    relative = written.startswith(".")
    path = file_of(module, ctx, relative=relative)
    bindings: list[Binding] = []
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            name = node_text(child.child_by_field_name("name"), ctx.source)
            local = node_text(child.child_by_field_name("alias"), ctx.source)
        else:
            name = local = node_text(child, ctx.source)
        dotted = f"{module}.{name}" if module else name
        origin = ctx.resolve.get("=" + dotted)  # re-exported by a package __init__
        if origin is not None and "#" in origin:
            where, _, member = origin.partition("#")
            bindings.append(Binding(local, Target(where, member)))
            continue
        sub = file_of(dotted, ctx, relative=relative)
        if sub is not None and ("resolve" in ctx.options or path is None):
            bindings.append(Binding(local, Target(sub)))
        elif path is not None:
            bindings.append(Binding(local, Target(path, name)))
    return [ImportRef(written, path, tuple(bindings))]


def imports(node: Node, ctx: FileContext) -> list[ImportRef]:
    if node.type == "import_statement":
        return _import_statement(node, ctx)
    return _from_statement(node, ctx)


def _dotted(node: Node, source: bytes) -> list[str] | None:
    parts: list[str] = []
    while node.type == "attribute":
        attribute = node.child_by_field_name("attribute")
        obj = node.child_by_field_name("object")
        if attribute is None or obj is None:
            return None
        parts.insert(0, node_text(attribute, source))
        node = obj
    if node.type != "identifier":
        return None
    parts.insert(0, node_text(node, source))
    return parts


def callee(_call: Node, node: Node, ctx: FileContext) -> CallForm | None:
    if node.type == "identifier":  # most calls: `f()`
        return CallForm("bare", node_text(node, ctx.source))
    parts = _dotted(node, ctx.source)
    if not parts:
        return None
    if len(parts) == 1:
        return CallForm("bare", parts[0])
    if len(parts) == 2 and parts[0] in _SELF:
        return CallForm("self", parts[1])
    return CallForm("qualified", parts[-1], tuple(parts[:-1]))


def _docstring(node: Node, source: bytes) -> str | None:
    # named_child(0), not named_children[0]: the list would make a node for every
    # statement of the body (a class's: every method), only to read the first.
    body = node.child_by_field_name("body")
    if body is None or not body.named_child_count:
        return None
    first = body.named_child(0)
    if first.type != "expression_statement" or not first.named_child_count:
        return None
    string = first.named_child(0)
    if string.type != "string":
        return None
    content = [node_text(c, source) for c in string.named_children if c.type == "string_content"]
    doc = "".join(content).strip()
    return doc[:2000] or None


def visibility(_node: Node, name: str, _source: bytes) -> str:
    if name.startswith("__") and name.endswith("__"):
        return "public"
    return "private" if name.startswith("_") else "public"


SPEC = Spec(
    name="python",
    separator=".",
    language=tree_sitter_python.language,
    query_file="python.scm",
    imports=imports,
    callee=callee,
    doc=_docstring,
    visibility=visibility,
)
