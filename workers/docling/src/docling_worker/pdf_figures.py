"""Figures on PDF pages: the page's images as FIGURE blocks, placed in reading order, each
with its caption when one is beside it.

- An image is a figure when it is at least 8 pt wide and high (smaller ones are bullets
  and marks), does not lie wholly in the running header/footer bands (logos), and, on a
  page with text, covers less than 80 % of the page (a scan behind its text layer, or a
  background). The same box drawn twice is one figure.
- Caption: a paragraph or heading on the same page that starts with "Figure N", "Fig. N"
  or "Table N" (any case), overlaps the image horizontally and lies within 2.5 body line
  heights (at least 12 pt) above or below it; the nearest one, each caption used once.
  It leaves the text flow and is written with its figure (CAPTION_OF).
- Reading order: a captioned figure takes its caption's place; another goes before the
  first block of its page that starts below the image's middle and overlaps it
  horizontally, else after its page's last block (or, on a page without text, before
  the next page's first block).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .pdf_blocks import Block
from .pdf_reader import Box, PageContent
from .pdf_rows import BAND

__all__ = ["Figure", "figures_of", "place_figures"]

_MIN_SIDE = 8.0
_MAX_PAGE_SHARE = 0.8
_CAPTION = re.compile(r"^(?:figure|fig\.|table)\s*\d+", re.I)
_CAPTION_KINDS = ("paragraph", "heading")


@dataclass(slots=True)
class Figure:
    """An image on a page, and the block that captions it."""

    page: int
    box: Box
    caption: Block | None = None


def figures_of(page: PageContent) -> list[Figure]:
    """The images of a page that are figures, top to bottom."""
    area = page.width * page.height
    seen: set[tuple[float, float, float, float]] = set()
    out = []
    for box in page.images:
        key = (round(box.x0, 1), round(box.y0, 1), round(box.x1, 1), round(box.y1, 1))
        if key in seen or box.x1 - box.x0 < _MIN_SIDE or box.y1 - box.y0 < _MIN_SIDE:
            continue
        if box.y0 >= page.height * (1 - BAND) or box.y1 <= page.height * BAND:
            continue
        share = (box.x1 - box.x0) * (box.y1 - box.y0) / area if area > 0 else 1.0
        if page.lines and share >= _MAX_PAGE_SHARE:
            continue
        seen.add(key)
        out.append(Figure(page.number, box))
    out.sort(key=lambda f: (-f.box.y1, f.box.x0))
    return out


def _overlaps(block: Block, box: Box) -> bool:
    left, _, right, _ = block.bbox()
    return min(right, box.x1) - max(left, box.x0) > 0


def _gap(block: Block, box: Box) -> float:
    _, bottom, _, top = block.bbox()
    if bottom >= box.y1:
        return bottom - box.y1  # the block is above the image
    if top <= box.y0:
        return box.y0 - top  # below it
    return 0.0


def _caption(figure: Figure, blocks: Sequence[Block], taken: set[int], reach: float) -> None:
    best: tuple[float, int] | None = None
    for index, block in enumerate(blocks):
        if index in taken or block.kind not in _CAPTION_KINDS or block.page != figure.page:
            continue
        if not _CAPTION.match(block.text) or not _overlaps(block, figure.box):
            continue
        gap = _gap(block, figure.box)
        if gap <= reach and (best is None or (gap, index) < best):
            best = (gap, index)
    if best is not None:
        taken.add(best[1])
        figure.caption = blocks[best[1]]


def _position(figure: Figure, blocks: Sequence[Block]) -> int:
    middle = (figure.box.y0 + figure.box.y1) / 2
    last_on_page = None
    for index, block in enumerate(blocks):
        if block.page > figure.page:
            return index if last_on_page is None else last_on_page + 1
        if block.page == figure.page:
            _, _, _, top = block.bbox()
            if top <= middle and _overlaps(block, figure.box):
                return index
            last_on_page = index
    return len(blocks) if last_on_page is None else last_on_page + 1


def place_figures(
    blocks: Sequence[Block], figures: Sequence[Figure], body: float
) -> list[Block | Figure]:
    """The blocks with the figures placed among them; captions move to their figure."""
    taken: set[int] = set()
    reach = max(12.0, 2.5 * body)
    for figure in figures:
        _caption(figure, blocks, taken, reach)
    at: dict[int, list[Figure]] = {}
    for figure in figures:
        if figure.caption is not None:
            index = next(i for i, b in enumerate(blocks) if b is figure.caption)
        else:
            index = _position(figure, blocks)
        at.setdefault(index, []).append(figure)
    out: list[Block | Figure] = []
    for index in range(len(blocks) + 1):
        out += at.get(index, [])
        if index < len(blocks) and index not in taken:
            out.append(blocks[index])
    return out
