"""Rows in reading order into blocks: headings, paragraphs, list items, footnotes, tables.

- Tables (column-aligned): three or more consecutive rows of two or more cells whose cells
  start at the same x positions (within 4 pt) as the first such row's, with short cells
  (40 characters on average at most). The first row is the header. Rows of one cell
  between them, starting at a column after the first and as close as a paragraph's
  lines, are wrapped lines of a cell (pdf_tables joins them into their row's cell).
- Paragraph breaks: a vertical gap over 0.6 of the line height, a change of size (over
  15 % of the body size), a row that starts with a list marker, or a row after one that
  ends a sentence well short of the column's right edge. A change of weight breaks only
  after a row that is short or ends a sentence: a bold row that runs to the column's
  edge mid-sentence is one of the paragraph's lines (a name set in bold at its start).
- Table-of-contents entries (dot leaders) end their block and are never headings;
  neither is text set only in a monospace font (code).
- Headings: at most three rows and 150 characters, not ending like a sentence, and
  either 15 % larger than the body text, or bold at body size with at most 100
  characters and 12 words (more reads as a sentence), or numbered ("1.2 Scope") and
  bold or larger. The level is the numbering's depth when numbered; an unnumbered one
  smaller than the numbered heading before it sits one level below that; else the rank
  of the heading's size among all heading sizes.
- Lists: a block whose first row starts with a bullet (bullet, circle, squares, triangle,
  hyphen bullet, en dash, -, *, middle dot) or an
  enumerator ("1.", "2)", "a.", "(iv)") followed by a space; consecutive items form one list.
- Footnotes: a block in the bottom 30 % of the page, smaller than the body (at most
  90 %), starting with a number or *, †, ‡, §.
- Paragraph text joins rows with a space; a row ending in a hyphen after a letter,
  followed by a row starting with a lower-case letter, joins without the hyphen.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .pdf_rows import Row

__all__ = ["Block", "classify_blocks", "heading_levels", "split_blocks"]

_BULLETS = "\u2022\u25e6\u25aa\u25ab\u25a0\u25a1\u25cf\u25cb\u2023\u2043\u2013-*\u00b7"
_BULLET = re.compile(rf"^([{re.escape(_BULLETS)}])\s*(?=\S)")
_ENUMERATOR = re.compile(r"^(\d{1,3}[.)]|[a-zA-Z][.)]|\((?:[ivxlc]{1,5}|[a-z]|\d{1,3})\))\s+(?=\S)")
_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,5})\.?\s+(?=\S)")
_FOOTNOTE = re.compile(r"^(\d{1,2}|[*†‡§])\s?(?=\S)")
_SENTENCE_END = (".", "!", "?", ":", ";")
_LEADERS = re.compile(r"(?:\. ?){4,}")
_MONOSPACE = re.compile(r"mono|courier|typewriter|cmtt|consol", re.I)
_ALIGN = 4.0
_MAX_BOLD_WORDS = 12  # a bold line at body size with more words reads as a sentence


@dataclass(slots=True)
class Block:
    """A run of rows that reads as one element."""

    kind: str  # paragraph | heading | list_item | footnote | table
    rows: list[Row]
    text: str = ""
    level: int = 0
    marker: str = ""
    size: float = 0.0
    region: object = None  # the ruled region of a ruled table

    @property
    def page(self) -> int:
        return self.rows[0].page

    def bbox(self) -> tuple[float, float, float, float]:
        """[left, bottom, right, top] over the rows of the block's first page."""
        rows = [r for r in self.rows if r.page == self.page]
        return (
            min(r.x0 for r in rows),
            min(r.y0 for r in rows),
            max(r.x1 for r in rows),
            max(r.y1 for r in rows),
        )


def marker_of(text: str) -> tuple[str, str] | None:
    """(marker, rest) when the text starts like a list item."""
    for pattern in (_BULLET, _ENUMERATOR):
        match = pattern.match(text)
        if match:
            return match.group(1), text[match.end() :]
    return None


def _wrapped_line(prev: Row, row: Row, anchors: Sequence[float]) -> bool:
    """A one-cell row inside a column-aligned table: a wrapped cell's line, starting at one
    of the columns after the first, as close to the row above as a paragraph's lines."""
    if len(row.cells) != 1 or row.page != prev.page:
        return False
    x0 = row.cells[0].x0
    if not any(abs(x0 - a) <= _ALIGN for a in anchors[1:]):
        return False
    gap = prev.y0 - row.y1
    return -0.5 * row.height <= gap <= 0.6 * max(prev.height, row.height)


def _table_run(rows: Sequence[Row], start: int) -> int:
    """How many rows from `start` form a column-aligned table (0 when none)."""
    first = rows[start]
    if len(first.cells) < 2:
        return 0
    anchors = [c.x0 for c in first.cells]
    end = start
    full = 0
    while end < len(rows):
        row = rows[end]
        if row.page != first.page:
            break
        if len(row.cells) < 2:
            if end > start and _wrapped_line(rows[end - 1], row, anchors):
                end += 1
                continue
            break
        if not all(
            any(abs(c.x0 - a) <= _ALIGN or c.x0 > anchors[-1] for a in anchors) for c in row.cells
        ):
            break
        end += 1
        full += 1
    count = end - start
    if full < 3:
        return 0
    cells = [c for row in rows[start:end] for c in row.cells]
    if sum(len(c.text) for c in cells) / len(cells) > 40:
        return 0
    return count


def _restyled(prev: Row, row: Row, body: float) -> bool:
    if abs(prev.height - row.height) > 0.15 * body:
        return True
    return marker_of(row.text) is not None


def _breaks(prev: Row, row: Row, body: float, right_edge: float) -> bool:
    if _LEADERS.search(prev.text) or _restyled(prev, row, body):
        return True  # a table-of-contents entry is a line of its own
    if row.page != prev.page:
        # A paragraph continues on the next page when the last row did not end it.
        return prev.text.endswith(_SENTENCE_END)
    gap = prev.y0 - row.y1
    if gap > 0.6 * max(prev.height, row.height) or gap < -0.5 * row.height:
        return True
    short = prev.x1 < right_edge - 0.15 * (right_edge - prev.x0 + 1)
    if prev.bold != row.bold:
        # A change of weight at the same size ends the block only after a line that
        # stands alone (short, or ending a sentence): a bold line that runs to the
        # column's edge mid-sentence (a name set in bold at a line's start) is the
        # paragraph's own line, however the next one is set.
        return short or prev.text.endswith(_SENTENCE_END)
    return short and prev.text.endswith(_SENTENCE_END)


def split_blocks(rows: Sequence[Row], body: float) -> list[Block]:
    """Groups rows (reading order, one page or more) into blocks; tables first."""
    blocks: list[Block] = []
    current: list[Row] = []
    edge = 0.0  # the right edge of the rows in `current`
    index = 0
    while index < len(rows):
        run = _table_run(rows, index)
        if run:
            if current:
                blocks.append(Block("paragraph", current))
                current = []
            blocks.append(Block("table", list(rows[index : index + run])))
            index += run
            continue
        row = rows[index]
        if current and _breaks(current[-1], row, body, max(edge, row.x1)):
            blocks.append(Block("paragraph", current))
            current = []
        edge = max(edge, row.x1) if current else row.x1
        current.append(row)
        index += 1
    if current:
        blocks.append(Block("paragraph", current))
    return blocks


def join_rows(texts: Sequence[str]) -> str:
    """Row texts joined into one paragraph, de-hyphenated."""
    out = ""
    for text in texts:
        if not out:
            out = text
        elif len(out) >= 2 and out.endswith("-") and out[-2].isalpha() and text[:1].islower():
            out = out[:-1] + text
        else:
            out += " " + text
    return out


def _heading_like(block: Block, body: float) -> bool:
    text = block.text
    if len(block.rows) > 3 or len(text) > 150 or not any(ch.isalpha() for ch in text):
        return False
    if _LEADERS.search(text) or all(_MONOSPACE.search(c.font) for r in block.rows for c in r.cells):
        return False  # a table-of-contents entry, or code
    if text.endswith((".", ",", ";")) and not _NUMBERED.match(text + " "):
        return False
    size = block.size
    bold = all(r.bold for r in block.rows)
    if size >= 1.15 * body:
        return True
    if bold and size >= 0.95 * body and len(text) <= 100 and len(text.split()) <= _MAX_BOLD_WORDS:
        return True
    return bool(_NUMBERED.match(text)) and (bold or size > body * 1.05)


def _classify(block: Block, body: float, page_height: float) -> None:
    block.text = join_rows([r.text for r in block.rows])
    block.size = max(r.height for r in block.rows)
    if block.kind == "table":
        return
    if _heading_like(block, body):
        block.kind = "heading"
        return
    found = marker_of(block.text)
    if found is not None:
        block.kind = "list_item"
        block.marker, block.text = found[0], found[1].strip()
        return
    top = max(r.y1 for r in block.rows)
    if block.size <= 0.9 * body and top <= 0.3 * page_height and _FOOTNOTE.match(block.text):
        block.kind = "footnote"


def classify_blocks(blocks: Sequence[Block], body: float, page_heights: dict[int, float]) -> None:
    """Sets each block's kind and text (in place)."""
    for block in blocks:
        _classify(block, body, page_heights.get(block.page, 792.0))


def heading_levels(blocks: Sequence[Block]) -> None:
    """Numbered headings take their numbering's depth; others sit below the numbered
    heading before them when smaller than it, else at the rank of their size."""
    headings = [b for b in blocks if b.kind == "heading"]
    sizes = sorted({round(b.size) for b in headings if not _NUMBERED.match(b.text)}, reverse=True)
    numbered_sizes = sorted({round(b.size) for b in headings if _NUMBERED.match(b.text)})
    last_numbered: Block | None = None
    for block in headings:
        match = _NUMBERED.match(block.text)
        if match:
            block.level = match.group(1).count(".") + 1
            last_numbered = block
            continue
        size = round(block.size)
        # An unnumbered heading as large as numbered top-level ones sits at their level;
        # one smaller than the numbered heading before it sits just below that one.
        if numbered_sizes and size >= numbered_sizes[-1]:
            block.level = 1
        elif last_numbered is not None and size < round(last_numbered.size):
            block.level = last_numbered.level + 1
        else:
            block.level = sizes.index(size) + 1 if size in sizes else 1
