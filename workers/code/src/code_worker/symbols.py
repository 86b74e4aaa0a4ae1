"""The symbol engine: one parse, one query, definitions in scopes, calls resolved.

Every language runs the same steps: its query (queries/<language>.scm) captures
definitions (`@def.<LABEL>` + `@name`), scopes without a node of their own (`@scope`:
a Rust impl block, a C++ namespace), imports (`@import`) and calls (`@call` with its
`@callee`). Definitions nest by byte range; a qualified name joins the enclosing
definitions' names with the language's separator. A call resolves, in this order, to a
definition of this file visible from the call's scope, to a name an import bound (a
symbol id in another file), or to the language's own rule (Go: another file of the same
package); anything else is counted as unresolved, never guessed.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree

from workers_common import TooLarge

from .languages.base import Binding, CallForm, FileContext, ImportRef, Spec, Target, node_text
from .limits import DEFAULT_MAX_PARSE_MS, int_option

__all__ = ["CallEdge", "Definition", "FileModel", "analyze", "parse", "parser_for"]

CLASS_LIKE = frozenset({"CLASS", "STRUCT", "ENUM", "TRAIT", "INTERFACE"})


@dataclass(eq=False, slots=True)
class Definition:
    """A symbol (label set) or a scope without a node (label None)."""

    label: str | None
    name: str
    node: Node
    name_node: Node
    parent: Definition | None = None
    qualname: str = ""
    ordinal: int = 1
    """1 for the first definition of a qualified name, 2, 3, … for later ones."""

    @property
    def key(self) -> str:
        """The qualified name as ids spell it (`f~2` for the second `f` in one scope)."""
        return self.qualname if self.ordinal == 1 else f"{self.qualname}~{self.ordinal}"


@dataclass(frozen=True, slots=True)
class CallEdge:
    """A resolved call: from a definition (None: the file's top level) to a local
    definition or to a symbol in another file."""

    caller: Definition | None
    local: Definition | None
    target: Target | None


@dataclass(slots=True)
class FileModel:
    definitions: list[Definition]
    imports: list[ImportRef]
    calls: list[CallEdge]
    counts: Counter[str] = field(default_factory=Counter)
    parse_errors: int = 0


@cache
def _language(spec: Spec) -> Language:
    return Language(spec.language())


@cache
def _query(spec: Spec) -> Query:
    """The language's query, compiled once per process. One query run with `matches()`
    for definitions, imports and calls alike: splitting it (calls through `captures()`)
    was measured slower, as the cursor's walk over the tree is most of its cost."""
    return Query(_language(spec), _query_text(spec))


def _query_text(spec: Spec) -> str:
    return resources.files("code_worker").joinpath("queries", spec.query_file).read_text()


@cache
def _pattern_code(spec: Spec) -> tuple[str, ...]:
    """Each pattern's text in the query file, its comments left out."""
    query, data = _query(spec), _query_text(spec).encode()
    out = []
    for index in range(query.pattern_count):
        text = data[query.start_byte_for_pattern(index) : query.end_byte_for_pattern(index)]
        out.append("\n".join(line.split(";", 1)[0] for line in text.decode().splitlines()))
    return tuple(out)


@cache
def _pattern_kinds(spec: Spec) -> tuple[str, ...]:
    """What each pattern of the query is about: "import", "call" or "definition"."""
    return tuple(
        "import" if "@import" in code else "call" if "@call" in code else "definition"
        for code in _pattern_code(spec)
    )


@cache
def _pattern_texts(spec: Spec) -> tuple[tuple[tuple[str, str], ...], ...]:
    """For each pattern, its `@_text.X` captures: (capture, X), the text each must read.
    The query's own `#eq?` would do it, but py-tree-sitter reads the text of a tree parsed
    from a callback (parse() below) out of a source such a tree does not keep: it crashes."""
    return tuple(
        tuple((capture, word) for capture, word in re.findall(r"@(_text\.([\w$]+))", code))
        for code in _pattern_code(spec)
    )


@cache
def _pattern_defs(spec: Spec) -> tuple[tuple[tuple[str, str | None], ...], ...]:
    """For each pattern, its `@def.<LABEL>` and `@scope` captures: (capture, label or None),
    read off once instead of testing every capture's name in every match."""
    return tuple(
        tuple(
            (capture, label or None)
            for capture, label in re.findall(r"@(def\.(\w+)|scope)\b", code)
        )
        for code in _pattern_code(spec)
    )


def _texts_hold(
    required: tuple[tuple[str, str], ...], captures: dict[str, list[Node]], source: bytes
) -> bool:
    return all(node_text(captures[name][0], source) == word for name, word in required)


_PARSERS: dict[str, Parser] = {}


def parser_for(spec: Spec) -> Parser:
    """This process's parser for the language (one per language, reused file after file)."""
    parser = _PARSERS.get(spec.name)
    if parser is None:
        parser = _PARSERS[spec.name] = Parser(_language(spec))
    return parser


def parse(spec: Spec, source: bytes, budget_ms: int = DEFAULT_MAX_PARSE_MS) -> Tree:
    """The file's tree, parsed within `budget_ms` of this thread's CPU time (tree-sitter's progress
    callback stops it) → TooLarge past it: a parse is linear on real code, so a file
    that takes longer is a generated or pathological one (option `max_parse_ms`)."""
    parser = parser_for(spec)
    deadline = time.thread_time() + budget_ms / 1000
    view = memoryview(source)

    def read(offset: int, _point: object) -> memoryview:
        return view[offset:]

    ticks = 0

    def halt(_offset: int, _has_error: bool) -> bool:
        nonlocal ticks  # tree-sitter calls this every few dozen µs: read the clock 1 in 8
        ticks += 1
        return ticks & 7 == 0 and time.thread_time() > deadline

    try:
        return parser.parse(read, progress_callback=halt)
    except ValueError:  # py-tree-sitter's "Parsing failed": the callback stopped it
        parser.reset()  # the next parse starts afresh instead of resuming this one
        raise TooLarge(
            f"parsing {len(source)} bytes of {spec.name} did not finish within "
            f"max_parse_ms={budget_ms} ms of CPU time"
        ) from None


def _count_errors(tree: Tree) -> int:
    if not tree.root_node.has_error:
        return 0
    errors = 0
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            errors += 1
            continue
        if node.has_error:
            stack.extend(node.children)
    return errors


def _scope_name(spec: Spec, node: Node, name_node: Node, source: bytes) -> str:
    if spec.scope_name is not None:
        return spec.scope_name(name_node, source)
    return node_text(name_node, source)


def _name(spec: Spec, name_node: Node, source: bytes) -> str:
    if spec.name_text is not None:
        return spec.name_text(name_node, source)
    return node_text(name_node, source)


def _collect(
    spec: Spec, tree: Tree, source: bytes
) -> tuple[list[Definition], list[Node], list[tuple[Node, Node]]]:
    defs: dict[tuple[int, int], Definition] = {}
    imports: list[Node] = []
    # Calls come with their sort key (start, end, arrival) so the sort compares ints only,
    # in the order a stable sort on (start, end) gives.
    placed: list[tuple[int, int, int, Node, Node]] = []
    kinds, texts, plans = _pattern_kinds(spec), _pattern_texts(spec), _pattern_defs(spec)
    for pattern, captures in QueryCursor(_query(spec)).matches(tree.root_node):
        if texts[pattern] and not _texts_hold(texts[pattern], captures, source):
            continue
        kind = kinds[pattern]
        if kind == "call":
            call = captures["call"][0]
            callee = captures["callee"][0] if "callee" in captures else call
            placed.append((call.start_byte, call.end_byte, len(placed), call, callee))
            continue
        if kind == "import":
            imports.append(captures["import"][0])
            continue
        name_node = captures["name"][0]
        for capture, label in plans[pattern]:
            node = captures[capture][0]
            key = (node.start_byte, -node.end_byte)
            if key in defs:  # the first match of a node names it: not read again
                continue
            name = (
                _scope_name(spec, node, name_node, source)
                if label is None
                else _name(spec, name_node, source)
            )
            defs[key] = Definition(label, name, node, name_node)
    ordered = [defs[key] for key in sorted(defs)]
    imports.sort(key=lambda n: n.start_byte)
    placed.sort()
    return ordered, imports, [(call, callee) for _, _, _, call, callee in placed]


def _nest(spec: Spec, ordered: list[Definition], source: bytes) -> None:
    """Parents by byte range, qualified names, METHOD for functions in type scopes."""
    stack: list[Definition] = []
    seen: Counter[str] = Counter()
    sep = spec.separator
    for definition in ordered:
        while stack and stack[-1].node.end_byte <= definition.node.start_byte:
            stack.pop()
        parent = stack[-1] if stack else None
        definition.parent = parent
        written = definition.name
        owner = None if spec.owner is None else spec.owner(definition.node, source)
        if sep in written and definition.label is not None:  # `void ns::C::m()`
            owner, definition.name = written.rsplit(sep, 1)
        prefix = parent.qualname + sep if parent is not None else ""
        if owner:
            prefix += owner + sep
        definition.qualname = prefix + definition.name
        seen[definition.qualname] += 1
        definition.ordinal = seen[definition.qualname]
        stack.append(definition)
    types = {d.qualname for d in ordered if d.label in CLASS_LIKE}
    for definition in ordered:
        if definition.label != "FUNCTION":
            continue
        parent = definition.parent
        in_type = parent is not None and (
            parent.label in CLASS_LIKE or (parent.label is None and spec.scope_is_type)
        )
        owner = definition.qualname.rpartition(sep)[0]
        if in_type or (owner and owner in types and (parent is None or parent.qualname != owner)):
            definition.label = "METHOD"


def _sweep(
    ordered: list[Definition], calls: list[tuple[Node, Node]]
) -> Iterator[tuple[Node, Node, Definition | None]]:
    """Each call with the innermost definition or scope around it (one pass, both sorted)."""
    stack: list[Definition] = []
    index = 0
    for call, callee in calls:
        while index < len(ordered) and ordered[index].node.start_byte <= call.start_byte:
            definition = ordered[index]
            while stack and stack[-1].node.end_byte <= definition.node.start_byte:
                stack.pop()
            stack.append(definition)
            index += 1
        while stack and stack[-1].node.end_byte < call.end_byte:
            stack.pop()
        yield call, callee, (stack[-1] if stack else None)


class _Resolver:
    def __init__(
        self, spec: Spec, ctx: FileContext, defs: list[Definition], imports: list[ImportRef]
    ) -> None:
        self.spec = spec
        self.ctx = ctx
        self.index: dict[str, Definition | bool] = {}
        """Qualified name → its one symbol, or False when two or more compete."""
        for definition in defs:
            if definition.label is not None:
                seen = definition.qualname in self.index
                self.index[definition.qualname] = False if seen else definition
        self.bindings: dict[str, Binding] = {}
        for ref in imports:
            for binding in ref.bindings:
                self.bindings.setdefault(binding.name, binding)
        self.stars = ctx.resolve.get("*" + ctx.path, "").split()
        """Files this one imports wholesale (`from x import *`, `use x::*;`)."""
        self._names: dict[str, frozenset[str] | None] = {}
        self.undefined = 0
        """Calls into another file that the archive's table says does not define the
        name: an enum variant's method, a derived or generated method, a value's method."""

    def _defined(self, path: str) -> frozenset[str] | None:
        """The names the archive saw `path` define (only those this file mentions), or
        None when the table does not say (a file ingested alone, Go, Java, C)."""
        if path not in self._names:
            listed = self.ctx.resolve.get("#" + path)
            self._names[path] = None if listed is None else frozenset(listed.split())
        return self._names[path]

    def settle(self, target: Target, hops: int = 3) -> Target | None:
        """A cross-file target checked against what the other file defines: kept, moved
        through that file's `*` re-exports, moved to its enum for a Rust tuple variant
        (`E::V(..)` → `E`), or None (counted in `undefined`): such an edge would never
        heal."""
        names = self._defined(target.path)
        if names is None or target.member is None:
            return target
        sep = self.spec.separator
        parts = target.member.split(sep)
        if all(part in names for part in parts):
            return target
        if parts[0] not in names and hops > 0:
            for star in self.ctx.resolve.get("*" + target.path, "").split():
                star_names = self._defined(star)
                if star_names is not None and parts[0] in star_names:
                    return self.settle(Target(star, target.member), hops - 1)
        if (
            self.spec.name == "rust"
            and len(parts) > 1
            and parts[-1][:1].isupper()
            and all(part in names for part in parts[:-1])
        ):
            return Target(target.path, sep.join(parts[:-1]))
        self.undefined += 1
        return None

    def _star(self, name: str) -> Target | None:
        """A bare name that one of this file's `*` imports defines."""
        for star in self.stars:
            names = self._defined(star)
            if names is not None and name in names:
                return Target(star, name)
        return None

    def lookup(self, qualname: str) -> Definition | bool | None:
        """The one symbol of that name (False when two or more compete)."""
        return self.index.get(qualname)

    def _scopes(self, scope: Definition | None) -> Iterator[str]:
        sep = self.spec.separator
        while scope is not None:
            is_type = scope.label in CLASS_LIKE or (scope.label is None and self.spec.scope_is_type)
            visible = not is_type
            if visible or self.spec.members_visible_bare:
                yield scope.qualname + sep
            if self.spec.module_barrier and scope.label == "MODULE":
                return
            scope = scope.parent
        yield ""

    def _class_of(self, scope: Definition | None) -> str | None:
        """The qualified name of the type a `self.m()` inside `scope` refers to."""
        sep = self.spec.separator
        while scope is not None:
            if scope.label in CLASS_LIKE or (scope.label is None and self.spec.scope_is_type):
                return scope.qualname
            parent = scope.parent
            if scope.label == "METHOD" and (parent is None or parent.label not in CLASS_LIKE):
                owner = scope.qualname.rpartition(sep)[0]
                if owner and (parent is None or parent.qualname != owner):
                    return owner
            scope = parent
        return None

    def resolve(
        self, call: CallForm, scope: Definition | None
    ) -> Definition | Target | bool | None:
        found = self._resolve(call, scope)
        if isinstance(found, Target) and found.member is not None:
            return self.settle(found)
        return found

    def _resolve(
        self, call: CallForm, scope: Definition | None
    ) -> Definition | Target | bool | None:
        sep = self.spec.separator
        if call.kind == "bare":
            for prefix in self._scopes(scope):
                found = self.lookup(prefix + call.name)
                if found is not None:
                    return found
            binding = self.bindings.get(call.name)
            if binding is not None:
                return binding.target if binding.target.member is not None else None
            if self.stars:
                star = self._star(call.name)
                if star is not None:
                    return star
        elif call.kind == "self":
            owner = self._class_of(scope)
            return None if owner is None else self.lookup(owner + sep + call.name)
        else:
            qualified = self._qualified(call, scope)
            if qualified is not None:
                return qualified
        if self.spec.fallback is not None:
            return self.spec.fallback(call, self.ctx)
        return None

    def _qualified(
        self, call: CallForm, scope: Definition | None
    ) -> Definition | Target | bool | None:
        sep = self.spec.separator
        written = sep.join(call.receiver)
        for prefix in self._scopes(scope) if self.spec.members_visible_bare else ("",):
            found = self.lookup(prefix + written + sep + call.name)
            if found is not None:
                return found
        if self.lookup(written) is not None:
            return None  # a local type without that member: nothing to guess
        for cut in range(len(call.receiver), 0, -1):
            binding = self.bindings.get(sep.join(call.receiver[:cut]))
            if binding is None:
                continue
            rest = [*call.receiver[cut:], call.name]
            target = binding.target
            member = sep.join([target.member, *rest] if target.member else rest)
            return Target(target.path, member)
        return None


def analyze(spec: Spec, ctx: FileContext) -> FileModel:
    """Parses `ctx.source` and resolves what it defines, imports and calls."""
    tree = parse(spec, ctx.source, int_option(ctx.options, "max_parse_ms", DEFAULT_MAX_PARSE_MS))
    ordered, import_nodes, call_nodes = _collect(spec, tree, ctx.source)
    if spec.prepare is not None:
        spec.prepare(tree.root_node, ctx)
    _nest(spec, ordered, ctx.source)
    imports = [ref for node in import_nodes for ref in spec.imports(node, ctx)]
    resolver = _Resolver(spec, ctx, ordered, imports)
    model = FileModel([d for d in ordered if d.label is not None], imports, [])
    model.parse_errors = _count_errors(tree)
    # A callee written again in the same scope (`self.assertEqual` in one test) resolves
    # the same way: resolved once, with what it added to `resolver.undefined`.
    memo: dict[tuple[object, ...], tuple[Definition | Target | bool | None, int]] = {}
    for call_node, callee_node, around in _sweep(ordered, call_nodes):
        model.counts["calls"] += 1
        caller = around
        while caller is not None and caller.label is None:
            caller = caller.parent
        form = spec.callee(call_node, callee_node, ctx)
        if form is None:
            found = None
        else:
            key = (form.kind, form.name, form.receiver, id(around))
            hit = memo.get(key)
            if hit is None:
                undefined = resolver.undefined
                found = resolver.resolve(form, around)
                memo[key] = (found, resolver.undefined - undefined)
            else:
                found = hit[0]
                resolver.undefined += hit[1]
        if isinstance(found, Definition):
            model.calls.append(CallEdge(caller, found, None))
            model.counts["calls_local"] += 1
        elif isinstance(found, Target):
            model.calls.append(CallEdge(caller, None, found))
            model.counts["calls_cross_file"] += 1
        else:
            model.counts["calls_unresolved"] += 1
    if resolver.undefined:
        model.counts["calls_to_undefined"] = resolver.undefined
    return model
