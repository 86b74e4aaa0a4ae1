"""Rust: `use` trees, `mod foo;`, and callees (`f()`, `self.m()`, `Self::m()`, `a::b::f()`).

Module paths resolve through the archive's table (`crate::a::b` → the file that is that
module, for this file's crate; `@crate` → the crate root file); a file ingested alone
assumes the conventional layout under the nearest `src/` (`crate::a::b` is
`src/a/b.rs`). A path that names an inline `mod` of this file resolves locally.
"""

from __future__ import annotations

import re

import tree_sitter_rust
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

__all__ = ["SPEC", "module_of_path"]

_GENERICS = re.compile(r"<.*>", re.DOTALL)


def module_of_path(path: str, crate_root: str) -> list[str] | None:
    """`crates/x/src/a/b.rs` with root `crates/x/src/lib.rs` → ["a", "b"] (None outside)."""
    base = crate_root.rpartition("/")[0]
    prefix = base + "/" if base else ""
    if path == crate_root:
        return []
    if not path.startswith(prefix) or not path.endswith(".rs"):
        return None
    parts = path[len(prefix) : -3].split("/")
    if parts[-1] == "mod":
        parts.pop()
    return parts


def _crate_root(ctx: FileContext) -> str:
    given = ctx.resolve.get("@crate")
    if given:
        return given
    parts = ctx.path.split("/")
    if "src" in parts:
        cut = len(parts) - 1 - parts[::-1].index("src")
        return "/".join([*parts[: cut + 1], "lib.rs"])
    return ctx.path


def _own_module(ctx: FileContext) -> list[str]:
    found = module_of_path(ctx.path, _crate_root(ctx))
    return [] if found is None else found


def file_of(module: list[str], ctx: FileContext) -> str | None:
    """The file that is the module `crate::<module>`."""
    root = _crate_root(ctx)
    if not module:
        return root
    key = "crate::" + "::".join(module)
    if "resolve" in ctx.options:
        return ctx.resolve.get(key)
    base = root.rpartition("/")[0]
    return "/".join([base, *module]).lstrip("/") + ".rs"


def absolute(segments: list[str], ctx: FileContext) -> list[str] | None:
    """`crate::a`, `self::a`, `super::a` → the path from the crate root (None: external)."""
    if not segments:
        return None
    head = segments[0]
    if head == "crate":
        return segments[1:]
    if head not in ("self", "super"):
        return None  # `std::…`, another crate: this file's own module is not needed
    own = _own_module(ctx)
    if head == "self":
        return [*own, *segments[1:]]
    ups = 0
    while ups < len(segments) and segments[ups] == "super":
        ups += 1
    if ups > len(own):
        return None
    return [*own[: len(own) - ups], *segments[ups:]]


def _follow(path: list[str], ctx: FileContext) -> list[str]:
    """`cli::Client` that `cli` re-exports with `pub use` → where it is defined."""
    applied: set[str] = set()
    for _ in range(4):
        for cut in range(len(path), 0, -1):
            key = "=" + "::".join(["crate", *path[:cut]])
            origin = ctx.resolve.get(key)
            # Each re-export once: `pub use dijkstra::dijkstra;` names a module and its
            # function alike, and would otherwise extend its own path hop after hop.
            if origin is not None and key not in applied:
                applied.add(key)
                path = [*origin.split("::")[1:], *path[cut:]]
                break
        else:
            return path
    return path


def _split(path: list[str], ctx: FileContext) -> Target | None:
    """The longest prefix of `path` that is a module file, and the rest as its member."""
    path = _follow(path, ctx)
    for cut in range(len(path), -1, -1):
        file_path = file_of(path[:cut], ctx)
        if file_path is not None and ("resolve" in ctx.options or cut == len(path) - 1):
            rest = path[cut:]
            return Target(file_path, "::".join(rest) if rest else None)
    return None


def _use_leaves(node: Node, prefix: list[str], ctx: FileContext) -> list[tuple[list[str], str]]:
    """Every (path, local name) a `use` tree binds."""
    text = ctx.source
    kind = node.type
    if kind in ("identifier", "crate", "self", "super"):
        segment = node_text(node, text)
        if segment == "self" and prefix:
            return [(prefix, prefix[-1])]
        return [([*prefix, segment], segment)]
    if kind == "scoped_identifier":
        path = [*prefix, *_segments(node, text)]
        return [(path, path[-1])]
    if kind == "use_as_clause":
        inner = node.child_by_field_name("path")
        alias = node_text(node.child_by_field_name("alias"), text)
        path = [*prefix, *_segments(inner, text)] if inner is not None else prefix
        return [(path, alias)]
    if kind == "use_list":
        return [leaf for child in node.named_children for leaf in _use_leaves(child, prefix, ctx)]
    if kind == "scoped_use_list":
        head = node.child_by_field_name("path")
        path = [*prefix, *(_segments(head, text) if head is not None else [])]
        listing = node.child_by_field_name("list")
        return [] if listing is None else _use_leaves(listing, path, ctx)
    return []


def _segments(node: Node, source: bytes) -> list[str]:
    if node.type == "scoped_identifier":
        path = node.child_by_field_name("path")
        name = node.child_by_field_name("name")
        head = _segments(path, source) if path is not None else []
        return [*head, node_text(name, source)]
    return [node_text(node, source)]


def imports(node: Node, ctx: FileContext) -> list[ImportRef]:
    if node.type == "mod_item":
        name = node_text(node.child_by_field_name("name"), ctx.source)
        own = _own_module(ctx)
        path = file_of([*own, name], ctx)
        return [ImportRef(f"mod {name}", path, (Binding(name, Target(path)),) if path else ())]
    argument = node.child_by_field_name("argument")
    if argument is None:
        return []
    written = " ".join(node_text(argument, ctx.source).split())
    bindings: list[Binding] = []
    files: list[str] = []
    for leaf, local in _use_leaves(argument, [], ctx):
        full = absolute(leaf, ctx)
        target = None if full is None else _split(full, ctx)
        if target is None or local in ("*", "_"):
            continue
        bindings.append(Binding(local, target))
        files.append(target.path)
    return [ImportRef(written, min(files) if files else None, tuple(bindings))]


def _callee_path(node: Node, source: bytes) -> list[str] | None:
    if node.type == "generic_function":
        inner = node.child_by_field_name("function")
        return None if inner is None else _callee_path(inner, source)
    if node.type in ("identifier", "self", "crate", "super"):
        return [node_text(node, source)]
    if node.type == "scoped_identifier":
        path = node.child_by_field_name("path")
        if path is not None and path.type not in (
            "identifier",
            "scoped_identifier",
            "crate",
            "self",
            "super",
        ):
            return None  # <T as Trait>::f, generic types: not a plain path
        return [_GENERICS.sub("", s) for s in _segments(node, source)]
    return None


def callee(_call: Node, node: Node, ctx: FileContext) -> CallForm | None:
    if node.type == "field_expression":
        value = node.child_by_field_name("value")
        field = node.child_by_field_name("field")
        if value is not None and value.type == "self" and field is not None:
            return CallForm("self", node_text(field, ctx.source))
        return None
    path = _callee_path(node, ctx.source)
    if not path:
        return None
    if len(path) == 1:
        return CallForm("bare", path[0])
    if path[0] == "Self" and len(path) == 2:
        return CallForm("self", path[1])
    return CallForm("qualified", path[-1], tuple(path[:-1]))


def fallback(call: CallForm, ctx: FileContext) -> Target | None:
    """`crate::a::f()`, `super::f()`: a path from the crate root into another file."""
    if call.kind != "qualified" or call.receiver[0] not in ("crate", "self", "super"):
        return None
    full = absolute([*call.receiver, call.name], ctx)
    if full is None:
        return None
    target = _split(full, ctx)
    if target is None or target.member is None or target.path == ctx.path:
        return None
    return target


def scope_name(name_node: Node, source: bytes) -> str:
    """An impl block's type, without generics or references (`impl<T> Foo<T>` → Foo)."""
    text = _GENERICS.sub("", node_text(name_node, source))
    return text.strip().lstrip("&").replace("mut ", "").strip().rsplit("::", 1)[-1]


def _doc(node: Node, source: bytes) -> str | None:
    return comment_block(
        node,
        source,
        lambda text: text.startswith(("///", "/**")) and not text.startswith("////"),
        lambda text: text.removeprefix("///").removeprefix("/**").removesuffix("*/").strip(),
    )


def visibility(node: Node, _name: str, source: bytes) -> str:
    for child in node.children:
        if child.type == "visibility_modifier":
            text = node_text(child, source).replace(" ", "")
            return "public" if text == "pub" else text
    return "private"


SPEC = Spec(
    name="rust",
    separator="::",
    language=tree_sitter_rust.language,
    query_file="rust.scm",
    imports=imports,
    callee=callee,
    doc=_doc,
    visibility=visibility,
    module_barrier=True,
    scope_name=scope_name,
    scope_is_type=True,
    fallback=fallback,
)
