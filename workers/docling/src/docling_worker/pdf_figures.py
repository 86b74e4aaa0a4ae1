"""Figures on PDF pages: the page's images as FIGURE blocks, placed in reading order, each
with its caption when one is beside it.

- An image is a figure when it is at least 8 pt wide and high (smaller ones are bullets
  and marks), does not lie wholly in the running header/footer bands (logos), and, on a
  page with text, covers less than 80 % of the page (a scan behind its text layer, or a
  background). The same box drawn twice is one figure. A page with more than 200 such
  images (tiles, a pattern) gives none: counted as `pages_with_image_tiles`.
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
from .pdf_page import Box, PageContent
from .pdf_rows import BAND

__all__ = ["Figure", "figures_of", "place_figures"]

_MIN_SIDE = 8.0
MAX_PER_PAGE = 200  # more images than this on a page are tiles of one picture, or a pattern
_MAX_PAGE_SHARE = 0.8
_CAPTION = re.compile(r"^(?:figure|fig\.|table)\s*\d+", re.I)
_CAPTION_KINDS = ("paragraph", "heading")


@dataclass(slots=True)
class Figure:
    """An image on a page, and the block that captions it."""

    page: int
    box: Box
    caption: Block | None = None


def figures_of(page: PageContent) -> list[Figure] | None:
    """The images of a page that are figures, top to bottom; None for a tiled page."""
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
        if len(out) > MAX_PER_PAGE:
            break
    if len(out) > MAX_PER_PAGE:
        return None
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


def _caption(
    figure: Figure, blocks: Sequence[Block], on_page: Sequence[int], taken: set[int], reach: float
) -> int | None:
    """The index of the block that captions the figure (marked taken), if any."""
    best: tuple[float, int] | None = None
    for index in on_page:
        block = blocks[index]
        if index in taken or block.kind not in _CAPTION_KINDS:
            continue
        if not _CAPTION.match(block.text) or not _overlaps(block, figure.box):
            continue
        gap = _gap(block, figure.box)
        if gap <= reach and (best is None or (gap, index) < best):
            best = (gap, index)
    if best is None:
        return None
    taken.add(best[1])
    figure.caption = blocks[best[1]]
    return best[1]


def _position(figure: Figure, blocks: Sequence[Block], on_page: Sequence[int]) -> int:
    middle = (figure.box.y0 + figure.box.y1) / 2
    for index in on_page:
        _, _, _, top = blocks[index].bbox()
        if top <= middle and _overlaps(blocks[index], figure.box):
            return index
    if on_page:
        return on_page[-1] + 1
    # No text on the figure's page: before the first block of a later page.
    return next((i for i, b in enumerate(blocks) if b.page > figure.page), len(blocks))


def place_figures(
    blocks: Sequence[Block], figures: Sequence[Figure], body: float
) -> list[Block | Figure]:
    """The blocks with the figures placed among them; captions move to their figure."""
    taken: set[int] = set()
    reach = max(12.0, 2.5 * body)
    by_page: dict[int, list[int]] = {}
    for position, block in enumerate(blocks):
        by_page.setdefault(block.page, []).append(position)
    captions = [_caption(f, blocks, by_page.get(f.page, []), taken, reach) for f in figures]
    at: dict[int, list[Figure]] = {}
    for figure, where in zip(figures, captions, strict=True):
        if where is None:
            where = _position(figure, blocks, by_page.get(figure.page, []))
        at.setdefault(where, []).append(figure)
    out: list[Block | Figure] = []
    for index in range(len(blocks) + 1):
        out += at.get(index, [])
        if index < len(blocks) and index not in taken:
            out.append(blocks[index])
    return out
