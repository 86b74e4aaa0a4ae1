"""Page geometry for the PDF heuristics: running headers and footers, columns, rows.

- Furniture: a line in the top or bottom 8 % of a page whose text, with digits folded,
  recurs in that band on at least two pages and 40 % of them, or that is a bare page
  number ("7", "Page 7 of 9", "- 7 -", "vii"), is a running header/footer.
- Columns: a vertical gutter at least 6 pt wide, between 25 % and 75 % of the page
  width, that at most 15 % of the lines cross, with at least two lines on each side
  whose median width is a fifth of the page (short table cells do not make columns).
  Lines that cross it (titles, full-width figures' captions) split the page into bands;
  each band is read left column first, then right, each top to bottom. Each column may
  split once more (three columns).
- Rows: lines of one column whose vertical extents overlap by half are one row (a
  bullet and its text, a table's cells), cells ordered left to right.
"""

from __future__ import annotations

import re
import statistics
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from .pdf_page import Line, PageContent

__all__ = ["Row", "body_size", "furniture_keys", "is_furniture", "reading_rows"]

BAND = 0.08
_DIGITS = re.compile(r"\d+")
_PAGE_NUMBER = re.compile(
    "^(?:page\\s*)?(?:#|[ivxlcdm]{1,6})(?:\\s*(?:of|/)\\s*#)?$|^[-\u2013\u2014]\\s*#\\s*[-\u2013\u2014]$",
    re.I,
)
_MIN_GUTTER = 6.0
_MAX_CROSSING = 0.15


@dataclass(frozen=True, slots=True)
class Row:
    """Cells on one baseline in one column, left to right (geometry computed once)."""

    cells: tuple[Line, ...]
    x0: float = field(init=False)
    x1: float = field(init=False)
    y0: float = field(init=False)
    y1: float = field(init=False)
    height: float = field(init=False)
    text: str = field(init=False)
    bold: bool = field(init=False)

    def __post_init__(self) -> None:
        cells = self.cells
        setattr_ = object.__setattr__
        setattr_(self, "x0", cells[0].x0)
        setattr_(self, "x1", max(c.x1 for c in cells))
        setattr_(self, "y0", min(c.y0 for c in cells))
        setattr_(self, "y1", max(c.y1 for c in cells))
        setattr_(self, "height", max(c.height for c in cells))
        setattr_(self, "text", " ".join(c.text for c in cells))
        setattr_(self, "bold", all(c.bold for c in cells))

    @property
    def page(self) -> int:
        return self.cells[0].page


def _key(text: str) -> str:
    return _DIGITS.sub("#", " ".join(text.lower().split()))


def _in_band(line: Line, page: PageContent) -> bool:
    return line.y0 >= page.height * (1 - BAND) or line.y1 <= page.height * BAND


def furniture_keys(pages: Sequence[PageContent]) -> frozenset[str]:
    """Folded texts that recur in the header/footer bands of enough pages."""
    seen: dict[str, set[int]] = {}
    for page in pages:
        for line in page.lines:
            if _in_band(line, page):
                seen.setdefault(_key(line.text), set()).add(page.number)
    need = max(2, int(0.4 * len(pages) + 0.999))
    return frozenset(key for key, where in seen.items() if len(where) >= need)


def is_furniture(line: Line, page: PageContent, keys: frozenset[str]) -> str | None:
    """ "header" or "footer" when the line is page furniture, else None."""
    if not _in_band(line, page):
        return None
    key = _key(line.text)
    if key in keys or _PAGE_NUMBER.match(key):
        return "header" if line.y0 >= page.height / 2 else "footer"
    return None


def body_size(pages: Sequence[PageContent]) -> float:
    """The body text's line height: the height carrying the most characters."""
    weight: dict[float, int] = {}
    for page in pages:
        for line in page.lines:
            size = round(line.height * 2) / 2
            weight[size] = weight.get(size, 0) + len(line.text)
    if not weight:
        return 10.0
    return max(sorted(weight), key=lambda size: weight[size])


def _gutter(lines: Sequence[Line], left: float, right: float) -> float | None:
    if len(lines) < 4:
        return None
    width = right - left
    # Each candidate position g is scored on sorted edges (bisect), not by a pass over the
    # lines: lines crossing g are those neither wholly left (x1 <= g+1) nor wholly right
    # (x0 >= g-1) of it; a line of width <= 2 can be both, so those are counted apart.
    starts = sorted(ln.x0 for ln in lines)
    ends = sorted(ln.x1 for ln in lines)
    narrow = [ln for ln in lines if ln.x1 - ln.x0 <= 2.0]
    n = len(lines)
    best: tuple[int, float, float] | None = None
    step = 2.0
    g = left + 0.25 * width
    while g <= left + 0.75 * width:
        n_left = bisect_right(ends, g + 1)
        first_right = bisect_left(starts, g - 1)
        if n_left and first_right < n:
            both = sum(1 for ln in narrow if ln.x0 >= g - 1 and ln.x1 <= g + 1)
            crossing = n - n_left - (n - first_right) + both
            clear = starts[first_right] - ends[n_left - 1]
            candidate = (crossing, -clear, g)
            if best is None or candidate < best:
                best = candidate
        g += step
    if best is None:
        return None
    crossing, neg_clear, g = best
    if crossing > _MAX_CROSSING * len(lines) or -neg_clear < _MIN_GUTTER:
        return None
    left_lines = [ln for ln in lines if ln.x1 <= g + 1]
    right_lines = [ln for ln in lines if ln.x0 >= g - 1]
    if len(left_lines) < 2 or len(right_lines) < 2:
        return None
    for side in (left_lines, right_lines):
        if statistics.median(ln.x1 - ln.x0 for ln in side) < 0.2 * width:
            return None
    gap_left = max(ln.x1 for ln in left_lines)
    gap_right = min(ln.x0 for ln in right_lines)
    return (gap_left + gap_right) / 2


def _top_down(lines: Sequence[Line]) -> list[Line]:
    return sorted(lines, key=lambda ln: (-ln.y1, ln.x0, ln.order))


def _ordered(lines: Sequence[Line], left: float, right: float, depth: int) -> list[Line]:
    gutter = _gutter(lines, left, right) if depth < 2 else None
    if gutter is None:
        return _top_down(lines)
    spanning = _top_down([ln for ln in lines if ln.x0 < gutter - 1 and ln.x1 > gutter + 1])
    rest = [ln for ln in lines if not (ln.x0 < gutter - 1 and ln.x1 > gutter + 1)]
    out: list[Line] = []
    upper = float("inf")
    for cut in [*spanning, None]:
        # Bands are cut at the spanning lines' centres, so every line lands in one band.
        lower = (cut.y0 + cut.y1) / 2 if cut is not None else float("-inf")
        band = [ln for ln in rest if lower <= (ln.y0 + ln.y1) / 2 < upper]
        out += _ordered([ln for ln in band if ln.x1 <= gutter + 1], left, gutter, depth + 1)
        out += _ordered([ln for ln in band if ln.x1 > gutter + 1], gutter, right, depth + 1)
        if cut is not None:
            out.append(cut)
            upper = lower
    return out


def _same_row(row: list[Line], line: Line) -> bool:
    for cell in row:
        overlap = min(cell.y1, line.y1) - max(cell.y0, line.y0)
        if overlap < 0.5 * min(cell.height, line.height):
            return False
        if not (line.x0 >= cell.x1 - 1 or line.x1 <= cell.x0 + 1):
            return False
    return True


def reading_rows(lines: Sequence[Line], width: float) -> list[Row]:
    """The lines of a page (furniture removed) as rows in reading order."""
    ordered = _ordered(lines, 0.0, width, 0)
    rows: list[list[Line]] = []
    for line in ordered:
        if rows and _same_row(rows[-1], line):
            rows[-1].append(line)
        else:
            rows.append([line])
    return [Row(tuple(sorted(cells, key=lambda c: c.x0))) for cells in rows]
