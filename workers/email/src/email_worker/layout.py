"""The canonical text of a message and the byte ranges inside it.

The text is a headers block, a blank line and the body:

    From: Alice Example <alice@example.com>
    To: Bob <bob@example.com>, carol@example.com
    Date: Mon, 02 Mar 2026 10:00:00 +0000
    Subject: Re: Quarterly numbers

    <body>

`Writer` appends pieces through the builder (which normalizes each piece: NFC, LF) and
hands back the global byte range of each, so spans are carved from exactly the bytes the
core stores. Body positions found by character (quotes, date phrases) are turned into
byte offsets with `byte_offsets`.
"""

from __future__ import annotations

from collections.abc import Iterable

from workers_common import IngestionResultBuilder

__all__ = ["Writer", "byte_offsets"]


class Writer:
    """Appends canonical text and reports where each piece landed."""

    def __init__(self, builder: IngestionResultBuilder) -> None:
        self.builder = builder

    @property
    def position(self) -> int:
        return self.builder.end_offset

    def write(self, text: str) -> tuple[int, int]:
        """Appends `text`; returns its [start, end) byte range."""
        start = self.builder.end_offset
        if text:
            self.builder.add_text(text)
        return start, self.builder.end_offset


def byte_offsets(text: str, positions: Iterable[int]) -> dict[int, int]:
    """UTF-8 byte offset of each character position in `text` (one pass over the text)."""
    wanted = sorted(set(positions))
    out: dict[int, int] = {}
    chars = 0
    count = 0
    for position in wanted:
        count += len(text[chars:position].encode("utf-8"))
        chars = position
        out[position] = count
    return out
