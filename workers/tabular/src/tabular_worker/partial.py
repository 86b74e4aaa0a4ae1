"""PartialBuffer: one partial submission being filled, turned into a builder when it is sent.

Rows arrive with their byte sizes already measured, so the buffer keeps plain records
(text pieces, node and edge specs) and only builds the IngestionResultBuilder when the
partial is flushed: `set_canonical_text` once, then the spans carved out of it by offset.
Nodes are addressed by their index in the buffer until then; a node of an earlier
partial is addressed by the id the core returned for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workers_common import Candidate, IngestionResultBuilder, ValidTime

__all__ = ["AmbiguitySpec", "Endpoint", "PartialBuffer"]

Endpoint = int | str
"""A node of this partial (its buffer index) or of an earlier one (its core id)."""


@dataclass(frozen=True, slots=True)
class _Node:
    labels: tuple[str, ...]
    properties: Mapping[str, Any]
    span: tuple[int, int, str] | None
    valid_time: ValidTime | None


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
    nodes: list[_Node] = field(default_factory=list)
    edges: list[tuple[str, Endpoint, Endpoint, Mapping[str, Any]]] = field(default_factory=list)
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
        self.nodes.append(_Node(labels, properties, span, valid_time))
        return len(self.nodes) - 1

    def add_edge(
        self, edge_type: str, source: Endpoint, target: Endpoint, properties: Mapping[str, Any]
    ) -> None:
        self.edges.append((edge_type, source, target, properties))

    def build(
        self, *, clarify: bool, stats: Mapping[str, Any] | None, final: bool
    ) -> dict[str, Any]:
        """The submission dict (the builder checks every offset, ref and value)."""
        builder = IngestionResultBuilder(base_offset=self.base_offset, clarify=clarify)
        builder.set_canonical_text("".join(self.pieces))
        if builder.end_offset != self.end_offset:
            # The rendering promised NFC, CR-free text whose sizes it measured; a mismatch
            # would put every later span in the wrong place.
            raise AssertionError(
                f"canonical text is {builder.byte_length} bytes, rows measured {self.byte_length}"
            )
        refs = []
        for node in self.nodes:
            spans = []
            if node.span is not None:
                start, end, kind = node.span
                spans.append(builder.add_span_range(start, end, kind=kind))
            refs.append(
                builder.add_node(
                    list(node.labels), node.properties, spans=spans, valid_time=node.valid_time
                )
            )
        for edge_type, source, target, properties in self.edges:
            ends: dict[str, Any] = {}
            for side, point in (("from", source), ("to", target)):
                if isinstance(point, int):
                    ends[f"{side}_ref"] = refs[point]
                else:
                    ends[f"{side}_id"] = point
            builder.add_relationship(edge_type, properties=properties, **ends)
        for ambiguity in self.ambiguities:
            builder.add_ambiguity(
                refs[ambiguity.node],
                "day_month_order",
                ambiguity.candidates,
                detector_confidence=ambiguity.detector_confidence,
                applied_candidate_confidence=ambiguity.applied_confidence,
            )
        if stats:
            builder.set_stats(stats)
        return builder.build(partial=not final)
