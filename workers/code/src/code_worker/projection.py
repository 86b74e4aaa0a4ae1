"""One source file → its submission: FILE, symbols, DEFINES, IMPORTS and CALLS.

Ids are deterministic (the core upserts on them): `code:file:<root>/<path>` and
`code:sym:<root>/<path>#<qualified name>` (Go: the package directory instead of the
file's path; `~2` for a second definition of one qualified name). Edges to symbols of
other files name those ids: dangling until the other file's job lands, then healed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import blake3

from workers_common import SUBMISSION_CAPS, IngestionResultBuilder, NodeRef, TooLarge

from .ids import file_id, symbol_id
from .languages import Spec
from .languages.base import FileContext, one_line
from .languages.rust import module_of_path
from .source import Source
from .symbols import CLASS_LIKE, Definition, FileModel, analyze

__all__ = ["FileIdentity", "file_id", "project_file", "symbol_id"]

_IMPORTS_LISTED = 500
MAX_NODES = SUBMISSION_CAPS["max_nodes"]
MAX_RELATIONSHIPS = SUBMISSION_CAPS["max_relationships"]
"""The core's default per-submission caps (rules.json): a file that projects to more (a
generated table of 100,000 functions) is too_large before it is projected, with its counts."""


@dataclass(frozen=True, slots=True)
class FileIdentity:
    root: str
    path: str
    language: str


def _signature(definition: Definition, source: bytes) -> str:
    node = definition.node
    body = node.child_by_field_name("body")  # once: body_start() would look it up again
    end = node.end_byte if body is None else body.start_byte
    head = source[node.start_byte : end].decode("utf-8", errors="replace")
    if body is None:
        head = head.split("\n", 1)[0]
    return one_line(head.rstrip().rstrip(":{").rstrip())


class _Projector:
    def __init__(
        self,
        spec: Spec | None,
        ident: FileIdentity,
        src: Source,
        raw: bytes,
        options: Mapping[str, object],
        file_props: Mapping[str, object],
    ) -> None:
        self.file_props = file_props
        self.spec = spec
        self.ident = ident
        self.src = src
        self.raw = raw
        self.builder = IngestionResultBuilder(options=options)
        self.builder.set_canonical_text(src.text)
        self.ctx = FileContext(ident.root, ident.path, src.encoded, options, _resolve(options))
        self.refs: dict[int, NodeRef] = {}

    def run(self) -> bytes:
        model = analyze(self.spec, self.ctx) if self.spec is not None else None
        if model is not None:
            _check_size(model)
        file_ref = self._file(model)
        if model is not None and self.spec is not None:
            container = self._crate_module(file_ref)
            self._symbols(model, container)
            self._imports(model, file_ref)
            self._calls(model, file_ref)
        return self.builder.to_json()

    def _file(self, model: FileModel | None) -> NodeRef:
        ident, src = self.ident, self.src
        props: dict[str, object] = {
            "path": ident.path,
            "root": ident.root,
            "language": ident.language,
            "bytes": len(self.raw),
            "lines": src.lines,
            "blake3": blake3.blake3(self.raw).hexdigest(),
            "parse_errors": 0 if model is None else model.parse_errors,
        }
        props.update(self.file_props)
        if src.replaced:
            props["replaced_bytes"] = src.replaced
        if src.encoding != "utf-8":  # a BOM or a Python coding declaration said so
            props["encoding"] = src.encoding
        if self.spec is not None and self.spec.name == "flow":  # JavaScript read as TSX
            props["dialect"] = "flow"
        if model is not None:
            counts: Counter[str] = Counter(model.counts)
            props["symbols"] = len(model.definitions)
            for key in ("calls", "calls_local", "calls_cross_file", "calls_unresolved"):
                props[key] = counts[key]
            if counts["calls_to_undefined"]:  # part of calls_unresolved (symbols.py)
                props["calls_to_undefined"] = counts["calls_to_undefined"]
            written = sorted({ref.written for ref in model.imports})
            props["imports"] = written[:_IMPORTS_LISTED]
            if len(written) > _IMPORTS_LISTED:
                props["imports_not_listed"] = len(written) - _IMPORTS_LISTED
            if self.ctx.package:
                props["package"] = self.ctx.package
            self.builder.set_stats(
                {"symbols": len(model.definitions), **dict(sorted(counts.items()))}
            )
        spans = (
            [self.builder.add_span_range(0, len(src.encoded), kind="file")] if src.encoded else []
        )
        return self.builder.add_node(
            ["FILE"], props, spans=spans, id=file_id(ident.root, ident.path)
        )

    def _crate_module(self, file_ref: NodeRef) -> NodeRef:
        if self.ident.language != "rust":
            return file_ref
        root = self.ctx.resolve.get("@crate")
        is_root = (
            self.ident.path == root
            if root
            else self.ident.path.rsplit("/", 1)[-1] in ("lib.rs", "main.rs")
        )
        if not is_root or module_of_path(self.ident.path, root or self.ident.path) != []:
            return file_ref
        crate = self.ctx.options.get("crate")
        name = crate if isinstance(crate, str) and crate else self.ident.root
        ref = self.builder.add_node(
            ["MODULE"],
            {"name": name, "qualified_name": "crate", "crate_root": True},
            id=symbol_id(self.ident.root, self.ident.path, "crate"),
        )
        self.builder.add_relationship("DEFINES", from_ref=file_ref, to_ref=ref)
        return ref

    def _id_path(self) -> str:
        assert self.spec is not None
        return self.spec.id_path(self.ctx) if self.spec.id_path is not None else self.ident.path

    def _symbols(self, model: FileModel, container: NodeRef) -> None:
        assert self.spec is not None
        spec, source = self.spec, self.src.encoded
        id_path = self._id_path()
        by_qualname = {d.qualname: d for d in model.definitions if d.ordinal == 1}
        for definition in model.definitions:
            node = definition.node
            span = self.builder.add_span_range(node.start_byte, node.end_byte, kind="definition")
            props: dict[str, object] = {
                "name": definition.name,
                "qualified_name": definition.qualname,
                "signature": _signature(definition, source),
                "visibility": spec.visibility(node, definition.name, source),
                "start_line": node.start_point[0] + 1,
                "end_line": node.end_point[0] + 1,
            }
            doc = spec.doc(node, source)
            if doc:
                props["doc"] = doc
            assert definition.label is not None
            ref = self.builder.add_node(
                [definition.label],
                props,
                spans=[span],
                id=symbol_id(self.ident.root, id_path, definition.key),
            )
            self.refs[id(definition)] = ref
            owner = self._owner(definition, by_qualname)
            parent_ref = container if owner is None else self.refs.get(id(owner), container)
            self.builder.add_relationship("DEFINES", from_ref=parent_ref, to_ref=ref)

    def _owner(
        self, definition: Definition, by_qualname: Mapping[str, Definition]
    ) -> Definition | None:
        assert self.spec is not None
        parent = definition.parent
        while parent is not None and parent.label is None:
            typed = by_qualname.get(parent.qualname)  # impl Foo → struct Foo of this file
            if typed is not None and typed.label in CLASS_LIKE:
                return typed
            parent = parent.parent
        if parent is None:
            owner = definition.qualname.rpartition(self.spec.separator)[0]
            found = by_qualname.get(owner)
            return found if found is not None and found is not definition else None
        return parent

    def _imports(self, model: FileModel, file_ref: NodeRef) -> None:
        own = file_id(self.ident.root, self.ident.path)
        for target in _import_targets(self.ident.root, model):
            if target != own:
                self.builder.add_relationship("IMPORTS", from_ref=file_ref, to_id=target)

    def _calls(self, model: FileModel, file_ref: NodeRef) -> None:
        local: Counter[tuple[int, int]] = Counter()
        cross: Counter[tuple[int, str]] = Counter()
        order: dict[int, Definition] = {}
        for edge in model.calls:
            caller = -1 if edge.caller is None else id(edge.caller)
            if edge.caller is not None:
                order[caller] = edge.caller
            if edge.local is not None:
                order[id(edge.local)] = edge.local
                local[(caller, id(edge.local))] += 1
            elif edge.target is not None and edge.target.member:
                target_id = symbol_id(self.ident.root, edge.target.path, edge.target.member)
                cross[(caller, target_id)] += 1
        position = {key: i for i, key in enumerate(sorted(order, key=lambda k: _place(order[k])))}
        position[-1] = -1
        for (caller, callee), count in sorted(
            local.items(), key=lambda kv: (position[kv[0][0]], position[kv[0][1]])
        ):
            from_ref = file_ref if caller == -1 else self.refs[caller]
            self.builder.add_relationship(
                "CALLS", from_ref=from_ref, to_ref=self.refs[callee], properties={"count": count}
            )
        for (caller, target_id), count in sorted(
            cross.items(), key=lambda kv: (position[kv[0][0]], kv[0][1])
        ):
            from_ref = file_ref if caller == -1 else self.refs[caller]
            self.builder.add_relationship(
                "CALLS",
                from_ref=from_ref,
                to_id=target_id,
                properties={"count": count, "cross_file": True},
            )


def _import_targets(root: str, model: FileModel) -> list[str]:
    return sorted({file_id(root, r.file_path) for r in model.imports if r.file_path})


def _check_size(model: FileModel) -> None:
    nodes = len(model.definitions) + 2
    edges = len(model.definitions) + len(model.imports) + len(model.calls)
    if nodes > MAX_NODES or edges > MAX_RELATIONSHIPS:
        raise TooLarge(
            f"the file projects to {nodes} nodes and up to {edges} edges, over the "
            f"{MAX_NODES} / {MAX_RELATIONSHIPS} a submission may carry"
        )


def _place(definition: Definition) -> tuple[int, int]:
    return (definition.node.start_byte, -definition.node.end_byte)


def _resolve(options: Mapping[str, object]) -> dict[str, str]:
    table = options.get("resolve")
    if not isinstance(table, Mapping):
        return {}
    return {k: v for k, v in table.items() if isinstance(k, str) and isinstance(v, str)}


def project_file(
    spec: Spec | None,
    ident: FileIdentity,
    src: Source,
    raw: bytes,
    options: Mapping[str, object],
    file_props: Mapping[str, object] | None = None,
) -> bytes:
    """The submission of one file (`spec` None: a FILE node alone, for unknown languages);
    `file_props` are added to its FILE (a notebook's cell counts)."""
    return _Projector(spec, ident, src, raw, options, file_props or {}).run()
