"""Plain text to graph: one DOCUMENT, one PARAGRAPH per paragraph, CONTAINS edges between.

A paragraph is a run of lines that are not blank, its span trimmed of surrounding
whitespace. The canonical text is the whole (normalized) document, so a paragraph's span
cites the source exactly; no wall clock and no unordered iteration, so the same bytes give
the same submission everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from workers_common import IngestionResultBuilder

__all__ = ["paragraph_ranges", "project"]

# Lines are LF-only here (the builder normalized them). \S is any non-whitespace character.
_PARAGRAPH = re.compile(r"[^\n]*\S[^\n]*(?:\n[^\n]*\S[^\n]*)*")


def paragraph_ranges(text: str) -> Iterator[tuple[int, int]]:
    """Yields each paragraph's [start, end) as UTF-8 byte offsets into `text`."""
    chars = 0  # how far into `text` the byte count below has got, in characters
    byte_pos = 0
    for match in _PARAGRAPH.finditer(text):
        body = match.group()
        start = match.start() + (len(body) - len(body.lstrip()))
        end = match.end() - (len(body) - len(body.rstrip()))
        byte_pos += len(text[chars:start].encode("utf-8"))
        start_byte = byte_pos
        byte_pos += len(text[start:end].encode("utf-8"))
        chars = end
        yield start_byte, byte_pos


def project(text: str, *, name: str, options: Mapping[str, Any] | None = None) -> bytes:
    """The submission for a plain-text document called `name`."""
    builder = IngestionResultBuilder(options=options)
    builder.set_canonical_text(text)
    ranges = list(paragraph_ranges(builder.canonical_text))
    document_spans = []
    if builder.byte_length:
        document_spans.append(builder.add_span_range(0, builder.byte_length, kind="document"))
    document = builder.add_node(
        ["DOCUMENT"], {"name": name, "paragraphs": len(ranges)}, spans=document_spans
    )
    for index, (start, end) in enumerate(ranges):
        span = builder.add_span_range(start, end, kind="paragraph")
        paragraph = builder.add_node(["PARAGRAPH"], {"index": index}, spans=[span])
        builder.add_relationship("CONTAINS", from_ref=document, to_ref=paragraph)
    builder.set_stats({"bytes": builder.byte_length, "paragraphs": len(ranges)})
    return builder.to_json()
