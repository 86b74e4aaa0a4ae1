"""PartialBuffer: one partial submission being filled, turned into a builder when it is sent.

The few per-table elements (TABLE and COLUMN nodes, HAS_COLUMN edges) are kept as plain
records; rows come in runs already encoded as JSON (rowjson.py), for which the buffer
counts the node and span indices they will get. The IngestionResultBuilder is only built
when the partial is flushed: `set_canonical_text` once, the spans carved out of it by
offset, the runs spliced in where they were added. Nodes are addressed by their index in
the partial until then; a node of an earlier partial by the id the core returned for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workers_common import Candidate, IngestionResultBuilder, ValidTime
from workers_common.wire import canonical_json_text

from .rowjson import EncodedRows, PreparedRows

__all__ = ["AmbiguitySpec", "Endpoint", "PartialBuffer"]

Endpoint = int | str
"""A node of this partial (its index) or of an earlier one (its core id)."""


@dataclass(frozen=True, slots=True)
class _Node:
    labels: tuple[str, ...]
    properties: Mapping[str, Any]
    span: tuple[int, int, str] | None
    valid_time: ValidTime | None


@dataclass(frozen=True, slots=True)
class _Edge:
    edge_type: str
    source: Endpoint
    target: Endpoint
    properties: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class AmbiguitySpec:
    """A temporal ambiguity on a node of the buffer."""

    node: int
    candidates: tuple[Candidate, ...]
    detector_confidence: float
    applied_confidence: float


@dataclass(slots=True)
class PartialBuffer:
    """The partial being filled; `base_offset` is where its text starts globally."""

    base_offset: int
    pieces: list[str] = field(default_factory=list)
    byte_length: int = 0
    rows: int = 0
    node_count: int = 0
    span_count: int = 0
    items: list[_Node | _Edge | EncodedRows] = field(default_factory=list)
    """Nodes, edges and row runs in the order they were added."""
    ambiguities: list[AmbiguitySpec] = field(default_factory=list)

    @property
    def end_offset(self) -> int:
        return self.base_offset + self.byte_length

    def add_text(self, text: str, size: int) -> tuple[int, int]:
        """Appends text of `size` UTF-8 bytes (measured by the caller); its global range."""
        start = self.end_offset
        self.pieces.append(text)
        self.byte_length += size
        return start, self.end_offset

    def add_node(
        self,
        labels: tuple[str, ...],
        properties: Mapping[str, Any],
        *,
        span: tuple[int, int, str] | None = None,
        valid_time: ValidTime | None = None,
    ) -> int:
        self.items.append(_Node(labels, properties, span, valid_time))
        if span is not None:
            self.span_count += 1
        self.node_count += 1
        return self.node_count - 1

    def add_edge(
        self, edge_type: str, source: Endpoint, target: Endpoint, properties: Mapping[str, Any]
    ) -> None:
        self.items.append(_Edge(edge_type, source, target, properties))

    def add_rows(
        self, rows: PreparedRows, start: int, stop: int, *, table: Endpoint, first_index: int
    ) -> int:
        """Adds rows [start, stop) of a chunk (ROW nodes, their spans and lines, HAS_ROW
        edges from `table` indexed from `first_index`); returns the first ROW's index."""
        encoded = rows.encode(
            start,
            stop,
            first_span=self.span_count,
            first_node=self.node_count,
            first_index=first_index,
            text_start=self.end_offset,
            table=_from_member(table),
        )
        self.items.append(encoded)
        self.add_text(encoded.text, encoded.byte_length)
        count = stop - start
        self.rows += count
        self.span_count += encoded.spans.count if encoded.spans is not None else 0
        self.node_count += count
        return encoded.first_node

    def build(
        self, *, clarify: bool, stats: Mapping[str, Any] | None, final: bool
    ) -> dict[str, Any]:
        """The submission dict (the builder checks every offset, ref and value it makes;
        the rows' runs it takes as encoded)."""
        builder = IngestionResultBuilder(base_offset=self.base_offset, clarify=clarify)
        builder.set_canonical_text("".join(self.pieces))
        if builder.end_offset != self.end_offset:
            # The rendering promised NFC, CR-free text whose sizes it measured; a mismatch
            # would put every later span in the wrong place.
            raise AssertionError(
                f"canonical text is {builder.byte_length} bytes, rows measured {self.byte_length}"
            )
        for item in self.items:
            if isinstance(item, _Node):
                _add_node(builder, item)
            elif isinstance(item, EncodedRows):
                _add_row_nodes(builder, item)
        for item in self.items:
            if isinstance(item, _Edge):
                _add_edge(builder, item)
            elif isinstance(item, EncodedRows):
                builder.add_encoded_relationships(item.edges)
        for ambiguity in self.ambiguities:
            builder.add_ambiguity(
                builder.node_ref(ambiguity.node),
                "day_month_order",
                ambiguity.candidates,
                detector_confidence=ambiguity.detector_confidence,
                applied_candidate_confidence=ambiguity.applied_confidence,
            )
        if stats:
            builder.set_stats(stats)
        return builder.build(partial=not final)


def _from_member(table: Endpoint) -> str:
    """The HAS_ROW edges' source as their first JSON member."""
    if isinstance(table, int):
        return f'"fromRef":{table}'
    return f'"fromId":{canonical_json_text(table)}'


def _add_node(builder: IngestionResultBuilder, node: _Node) -> None:
    spans = []
    if node.span is not None:
        start, end, kind = node.span
        spans.append(builder.add_span_range(start, end, kind=kind))
    builder.add_node(list(node.labels), node.properties, spans=spans, valid_time=node.valid_time)


def _add_row_nodes(builder: IngestionResultBuilder, rows: EncodedRows) -> None:
    if (builder.span_count, builder.node_count) != (rows.first_span, rows.first_node):
        # The run's spanRefs and the edges' toRef were written for these indices.
        raise AssertionError(
            f"rows encoded for span {rows.first_span} and node {rows.first_node} land at "
            f"span {builder.span_count} and node {builder.node_count}"
        )
    if rows.spans is not None:
        builder.add_encoded_spans(rows.spans)
    builder.add_encoded_nodes(rows.nodes)


def _add_edge(builder: IngestionResultBuilder, edge: _Edge) -> None:
    ends: dict[str, Any] = {}
    for side, point in (("from", edge.source), ("to", edge.target)):
        if isinstance(point, int):
            ends[f"{side}_ref"] = builder.node_ref(point)
        else:
            ends[f"{side}_id"] = point
    builder.add_relationship(edge.edge_type, properties=edge.properties, **ends)
