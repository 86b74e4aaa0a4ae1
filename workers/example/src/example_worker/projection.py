"""Plain text to graph: one DOCUMENT, one PARAGRAPH per paragraph, CONTAINS edges between.

A paragraph is a run of lines that are not blank, its span trimmed of surrounding
whitespace. The canonical text is the whole (normalized) document, so a paragraph's span
cites the source exactly; no wall clock and no unordered iteration, so the same bytes give
the same submission everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from workers_common import IngestionResultBuilder

__all__ = ["paragraph_ranges", "project"]


def _paragraph_chars(text: str) -> Iterator[tuple[int, int]]:
    """Yields each paragraph's [start, end) in characters: a run of lines holding a
    non-whitespace character, trimmed of the whitespace around it.

    Lines are LF-only here (the builder normalized them). One pass over the lines, linear
    in the text: the regex this replaces ("any characters, a non-space, any characters")
    backtracked over a whitespace-only line from each of its positions, quadratic in the
    line's length (a 64 KiB line of spaces took a minute; found by the fault suite).
    """
    start: int | None = None
    end = 0
    pos = 0
    for line in text.split("\n"):
        if line and not line.isspace():
            if start is None:
                start = pos + len(line) - len(line.lstrip())
            end = pos + len(line.rstrip())
        elif start is not None:
            yield start, end
            start = None
        pos += len(line) + 1
    if start is not None:
        yield start, end


def paragraph_ranges(text: str) -> Iterator[tuple[int, int]]:
    """Yields each paragraph's [start, end) as UTF-8 byte offsets into `text`."""
    chars = 0  # how far into `text` the byte count below has got, in characters
    byte_pos = 0
    for start, end in _paragraph_chars(text):
        byte_pos += len(text[chars:start].encode("utf-8"))
        start_byte = byte_pos
        byte_pos += len(text[start:end].encode("utf-8"))
        chars = end
        yield start_byte, byte_pos


def project(
    text: str,
    *,
    name: str,
    options: Mapping[str, Any] | None = None,
    facts: Mapping[str, str | int] | None = None,
) -> bytes:
    """The submission for a plain-text document called `name`; `facts` are more DOCUMENT
    properties (how the bytes were decoded)."""
    builder = IngestionResultBuilder(options=options)
    builder.set_canonical_text(text)
    ranges = list(paragraph_ranges(builder.canonical_text))
    document_spans = []
    if builder.byte_length:
        document_spans.append(builder.add_span_range(0, builder.byte_length, kind="document"))
    document = builder.add_node(
        ["DOCUMENT"],
        {"name": name, "paragraphs": len(ranges), **(facts or {})},
        spans=document_spans,
    )
    for index, (start, end) in enumerate(ranges):
        span = builder.add_span_range(start, end, kind="paragraph")
        paragraph = builder.add_node(["PARAGRAPH"], {"index": index}, spans=[span])
        builder.add_relationship("CONTAINS", from_ref=document, to_ref=paragraph)
    builder.set_stats({"bytes": builder.byte_length, "paragraphs": len(ranges)})
    return builder.to_json()
