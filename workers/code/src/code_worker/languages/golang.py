"""Go: a package is a directory, so Go symbol ids are keyed by the package directory.

`code:sym:<root>/<dir>#F` and `#T.M` (an external test package, `package x_test`, is
`<dir>/x_test`): every file of a package defines into the same namespace, which is what
lets a call to a function of another file of the same package, or a package-qualified
call `pkg.F()` after `import "<module>/<dir>"`, name its target without seeing that file.
Import paths map to directories through the archive's go.mod files (option
`go_modules`: module path → directory); other imports are external and never resolved.
"""

from __future__ import annotations

import re

import tree_sitter_go
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

_BUILTINS = frozenset(
    [
        *("append", "cap", "clear", "close", "complex", "copy", "delete", "imag", "len"),
        *("make", "max", "min", "new", "panic", "print", "println", "real", "recover"),
        # conversions to the predeclared types
        *("any", "bool", "byte", "comparable", "complex64", "complex128", "error"),
        *("float32", "float64", "int", "int8", "int16", "int32", "int64", "rune"),
        *("string", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr"),
    ]
)
_FUNCTIONS = ("function_declaration", "method_declaration", "func_literal")
_DECLARING = {
    "parameter_declaration": "name",
    "variadic_parameter_declaration": "name",
    "var_spec": "name",
    "const_spec": "name",
    "short_var_declaration": "left",
    "range_clause": "left",
}
_MAJOR = re.compile(r"v[0-9]+\Z")


def _id_path(ctx: FileContext) -> str:
    if ctx.package.endswith("_test"):
        return f"{ctx.directory}/{ctx.package}".lstrip("/")
    return ctx.directory


def _prepare(root: Node, ctx: FileContext) -> None:
    for child in root.named_children:
        if child.type == "package_clause":
            names = [c for c in child.named_children if c.type == "package_identifier"]
            if names:
                ctx.package = node_text(names[0], ctx.source)
            return


def _directory(import_path: str, ctx: FileContext) -> str | None:
    modules = ctx.options.get("go_modules")
    if not isinstance(modules, dict):
        return None
    best: tuple[int, str] | None = None
    for module, directory in modules.items():
        if not isinstance(module, str) or not isinstance(directory, str):
            continue
        if import_path == module or import_path.startswith(module + "/"):
            rest = import_path[len(module) :].lstrip("/")
            candidate = "/".join(p for p in (directory, rest) if p)
            if best is None or len(module) > best[0]:
                best = (len(module), candidate)
    return None if best is None else best[1]


def _default_name(import_path: str) -> str:
    parts = import_path.split("/")
    last = parts[-1]
    if _MAJOR.match(last) and len(parts) > 1:
        last = parts[-2]
    return re.sub(r"\.v[0-9]+\Z", "", last).removeprefix("go-").replace("-", "_")


def imports(node: Node, ctx: FileContext) -> list[ImportRef]:
    path_node = node.child_by_field_name("path")
    written = node_text(path_node, ctx.source).strip('"`')
    directory = _directory(written, ctx)
    name_node = node.child_by_field_name("name")
    local = node_text(name_node, ctx.source) if name_node is not None else _default_name(written)
    bindings = (
        () if directory is None or local in (".", "_") else (Binding(local, Target(directory)),)
    )
    if local == ".":
        ctx.dot_imports.append(directory)
    return [ImportRef(written, None, bindings)]


def _receiver(node: Node, source: bytes) -> tuple[str | None, str | None]:
    """A method's (receiver type, receiver variable)."""
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return None, None
    for param in receiver.named_children:
        if param.type != "parameter_declaration":
            continue
        kind = param.child_by_field_name("type")
        while kind is not None and kind.type in (
            "pointer_type",
            "generic_type",
            "parenthesized_type",
        ):
            kind = kind.child_by_field_name("type") or (
                kind.named_children[0] if kind.named_children else None
            )
        variable = param.child_by_field_name("name")
        return (node_text(kind, source) or None), (node_text(variable, source) or None)
    return None, None


def owner(node: Node, source: bytes) -> str | None:
    return _receiver(node, source)[0] if node.type == "method_declaration" else None


def _declared(function: Node, ctx: FileContext) -> frozenset[str]:
    """Every name a function declares (parameters, :=, var, range), closures included."""
    cached = ctx.cache.get(function.id)
    if cached is not None:
        return cached
    names: set[str] = set()
    stack = [function]
    while stack:
        node = stack.pop()
        field = _DECLARING.get(node.type)
        if field is not None:
            for part in node.children_by_field_name(field):
                targets = part.named_children if part.type == "expression_list" else [part]
                names.update(node_text(t, ctx.source) for t in targets if t.type == "identifier")
        stack.extend(node.named_children)
    found = frozenset(names)
    ctx.cache[function.id] = found
    return found


def _local_variable(call: Node, name: str, ctx: FileContext) -> bool:
    scope = call.parent
    while scope is not None:
        if scope.type in _FUNCTIONS and name in _declared(scope, ctx):
            return True
        scope = scope.parent
    return False


def callee(call: Node, node: Node, ctx: FileContext) -> CallForm | None:
    if node.type == "identifier":
        name = node_text(node, ctx.source)
        # A call through a variable (a closure, a func parameter) names no definition.
        return None if _local_variable(call, name, ctx) else CallForm("bare", name)
    if node.type != "selector_expression":
        return None
    operand = node.child_by_field_name("operand")
    field = node.child_by_field_name("field")
    if operand is None or field is None or operand.type != "identifier":
        return None
    name, receiver = node_text(field, ctx.source), node_text(operand, ctx.source)
    method = call.parent
    while method is not None and method.type not in ("method_declaration", "function_declaration"):
        method = method.parent
    if (
        method is not None
        and method.type == "method_declaration"
        and _receiver(method, ctx.source)[1] == receiver
    ):
        return CallForm("self", name)
    return CallForm("qualified", name, (receiver,))


def fallback(call: CallForm, ctx: FileContext) -> Target | None:
    """A bare call to nothing of this file is, by Go's rules, another file of the package;
    except an exported name in a file with a dot import (`import . "x"`, what an external
    test package does with the package under test): that is the imported package's when
    the file has one dot import, of the archive, and unresolved when it has others (an
    external one, or two: which one defines it is not known here)."""
    if call.kind != "bare" or call.name in _BUILTINS:
        return None
    if ctx.dot_imports and call.name[:1].isupper():
        directory = ctx.dot_imports[0] if len(ctx.dot_imports) == 1 else None
        return None if directory is None else Target(directory, call.name)
    return Target(_id_path(ctx), call.name)


def _doc(node: Node, source: bytes) -> str | None:
    # A type's doc, and a lone `var f = func…`'s, sit above their declaration.
    parent = node.parent
    declared = node.type == "type_spec" or (
        node.type == "var_spec" and parent is not None and parent.type == "var_declaration"
    )
    anchor = parent if declared and parent is not None else node
    return comment_block(
        anchor,
        source,
        lambda text: text.startswith("//"),
        lambda text: text.removeprefix("//").strip(),
    )


def visibility(_node: Node, name: str, _source: bytes) -> str:
    return "exported" if name[:1].isupper() else "package"


SPEC = Spec(
    name="go",
    separator=".",
    language=tree_sitter_go.language,
    query_file="go.scm",
    imports=imports,
    callee=callee,
    doc=_doc,
    visibility=visibility,
    owner=owner,
    fallback=fallback,
    id_path=_id_path,
    prepare=_prepare,
)
