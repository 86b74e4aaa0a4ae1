"""Tables on a PDF page: ruled regions from stroked lines, and a block's cell grid.

- Ruled: three or more horizontal rules (merged within 1.5 pt) that share most of their
  horizontal extent (80 % overlap) and lie within 60 pt of the next one make a region;
  rows inside it belong to one table. With vertical rules inside the region, those are
  the column boundaries and the bands between horizontal rules are the rows (a cell may
  wrap onto several lines); without (a "booktabs" table), each text row is a table row
  and columns come from the cells' left edges.
- Column-aligned tables (no rules) are found by `pdf_blocks`; their columns are the
  first row's cells' left edges.
- Wrapped cells (tables without vertical rules): a text row with no cell in the first
  column holds wrapped lines of a neighbouring row's cells, joined into them (top-aligned
  cells continue the row above; centred ones go to the nearest first-column line). A
  first column that wraps itself is not recognised: its second line starts a row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .pdf_blocks import join_rows
from .pdf_page import Line, PageContent, Rule
from .pdf_rows import Row

__all__ = ["Region", "ruled_regions", "table_grid"]

_MERGE = 1.5
_MAX_ROW_GAP = 60.0


@dataclass(frozen=True, slots=True)
class Region:
    """A ruled table's box and its rules' positions."""

    x0: float
    y0: float
    x1: float
    y1: float
    levels: tuple[float, ...]  # horizontal rules, top to bottom
    columns: tuple[float, ...]  # inner vertical rules, left to right

    def holds(self, row: Row) -> bool:
        cy = (row.y0 + row.y1) / 2
        return self.y0 <= cy <= self.y1 and row.x0 >= self.x0 - 2 and row.x1 <= self.x1 + 2


def _levels(rules: Sequence[Rule]) -> list[tuple[float, float, float]]:
    out: list[list[float]] = []
    for rule in sorted((r for r in rules if r.horizontal), key=lambda r: -r.y0):
        if out and abs(out[-1][0] - rule.y0) <= _MERGE:
            out[-1][1] = min(out[-1][1], rule.x0)
            out[-1][2] = max(out[-1][2], rule.x1)
        else:
            out.append([rule.y0, rule.x0, rule.x1])
    return [(y, a, b) for y, a, b in out]


def _overlaps(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    common = min(a[2], b[2]) - max(a[1], b[1])
    return common >= 0.8 * max(a[2] - a[1], b[2] - b[1])


def _columns(
    rules: Sequence[Rule], x0: float, y0: float, x1: float, y1: float
) -> tuple[float, ...]:
    xs: list[float] = []
    for rule in sorted((r for r in rules if r.vertical), key=lambda r: r.x0):
        inside = x0 + 2 < rule.x0 < x1 - 2 and rule.y0 < y1 and rule.y1 > y0
        if inside and (not xs or rule.x0 - xs[-1] > _MERGE):
            xs.append(rule.x0)
    return tuple(xs)


def ruled_regions(page: PageContent) -> list[Region]:
    """The ruled table regions of a page."""
    levels = _levels(page.rules)
    regions: list[Region] = []
    group: list[tuple[float, float, float]] = []
    for level in [*levels, None]:
        if (
            level is not None
            and group
            and _overlaps(group[0], level)
            and (group[-1][0] - level[0] <= _MAX_ROW_GAP)
        ):
            group.append(level)
            continue
        if len(group) >= 3:
            x0, x1 = min(g[1] for g in group), max(g[2] for g in group)
            top, bottom = group[0][0], group[-1][0]
            regions.append(
                Region(x0, bottom, x1, top, tuple(g[0] for g in group),
                       _columns(page.rules, x0, bottom, x1, top))
            )  # fmt: skip
        group = [level] if level is not None else []
    return regions


def _column_of(cell: Line, bounds: Sequence[float]) -> int:
    centre = (cell.x0 + cell.x1) / 2
    return sum(1 for b in bounds if centre > b)


def _anchors(rows: Sequence[Row]) -> list[float]:
    widest = max(rows, key=lambda r: len(r.cells))
    return [(a.x1 + b.x0) / 2 for a, b in zip(widest.cells, widest.cells[1:], strict=False)]


def _band_of(row: Row, levels: Sequence[float]) -> int:
    cy = (row.y0 + row.y1) / 2
    return sum(1 for level in levels if cy < level)


def _centre(row: Row) -> float:
    return (row.y0 + row.y1) / 2


def _logical_rows(rows: Sequence[Row], bounds: Sequence[float]) -> list[int]:
    """Each text row's table row (an index into the rows that have a first-column cell).

    A row with no cell in the first column holds wrapped lines of its neighbours' cells.
    Cells set top-aligned continue the row above; when that would leave a row whose
    column is empty at its own line but filled below it (cells centred on their row, so
    a wrapped cell starts above the first column's line), each such row goes to the
    first-column line nearest to its centre instead (the one above on a tie)."""
    heads = [i for i, row in enumerate(rows) if any(_column_of(c, bounds) == 0 for c in row.cells)]
    if not heads or heads[0] != 0 or len(heads) == len(rows):
        return list(range(len(rows)))
    above = [0] * len(rows)
    for position, head in enumerate(heads):
        end = heads[position + 1] if position + 1 < len(heads) else len(rows)
        for index in range(head, end):
            above[index] = position
    top_aligned = True
    for position, head in enumerate(heads):
        end = heads[position + 1] if position + 1 < len(heads) else len(rows)
        own = {_column_of(c, bounds) for c in rows[head].cells}
        below = {_column_of(c, bounds) for r in rows[head + 1 : end] for c in r.cells}
        if below - own:
            top_aligned = False
            break
    if top_aligned:
        return above
    out = []
    for index, row in enumerate(rows):
        position = above[index]
        if index not in heads and position + 1 < len(heads):
            up = _centre(rows[heads[position]]) - _centre(row)
            down = _centre(row) - _centre(rows[heads[position + 1]])
            if down < up:
                position += 1
        out.append(position)
    return out


def table_grid(rows: Sequence[Row], region: Region | None) -> list[list[str]]:
    """A table's cell texts, row by row, every row as wide as the widest."""
    bounds: Sequence[float] = region.columns if region and region.columns else _anchors(rows)
    width = len(bounds) + 1
    if region and region.columns:
        keys_of = [_band_of(row, region.levels) for row in rows]
    else:
        keys_of = _logical_rows(rows, bounds)
    grid: dict[int, list[list[Line]]] = {}
    keys: list[int] = []
    for row, key in zip(rows, keys_of, strict=True):
        if key not in grid:
            grid[key] = [[] for _ in range(width)]
            keys.append(key)
        for cell in row.cells:
            grid[key][_column_of(cell, bounds)].append(cell)
    out = []
    for key in keys:
        # A cell's lines top to bottom (a centred cell's first line may come after the
        # row's first-column line in reading order), joined as a paragraph's are.
        texts = [sorted(cells, key=lambda c: (-c.y1, c.x0, c.order)) for cells in grid[key]]
        out.append([join_rows([c.text for c in cells]) for cells in texts])
    return out
