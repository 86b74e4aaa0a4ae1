"""One decoded PDF page as the layout heuristics read it: text lines with geometry and
fonts, stroked rules, image boxes (PDF points, origin bottom left). Plain data, importable
without the PDF libraries, with a JSON form that round-trips exactly (pdf_helper sends
pages decoded in its own process as this)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Box", "Line", "PageContent", "Rule", "page_from_wire", "page_to_wire"]

_BOLD = re.compile(r"bold|black|heavy|semibold|demi", re.I)
_ITALIC = re.compile(r"italic|oblique", re.I)


@dataclass(frozen=True, slots=True)
class Line:
    """One text line cell: [x0, x1] x [y0, y1] in points, origin bottom left."""

    page: int
    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    font: str
    order: int

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def bold(self) -> bool:
        return bool(_BOLD.search(self.font))

    @property
    def italic(self) -> bool:
        return bool(_ITALIC.search(self.font))


@dataclass(frozen=True, slots=True)
class Rule:
    """A straight stroked segment (a table rule candidate)."""

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def horizontal(self) -> bool:
        return abs(self.y1 - self.y0) < 1.0 and abs(self.x1 - self.x0) >= 5.0

    @property
    def vertical(self) -> bool:
        return abs(self.x1 - self.x0) < 1.0 and abs(self.y1 - self.y0) >= 5.0


@dataclass(frozen=True, slots=True)
class Box:
    """An image's box on its page: [x0, x1] x [y0, y1] in points, origin bottom left."""

    x0: float
    y0: float
    x1: float
    y1: float


@dataclass(frozen=True, slots=True)
class PageContent:
    """Everything the layout heuristics read from one page."""

    number: int
    width: float
    height: float
    lines: tuple[Line, ...]
    rules: tuple[Rule, ...]
    image_area: float
    images: tuple[Box, ...] = ()  # bitmaps' boxes, clipped to the page, in drawing order


def page_to_wire(page: PageContent) -> list[Any]:
    """The page as JSON-ready lists (floats round-trip exactly through JSON)."""
    return [
        page.number,
        page.width,
        page.height,
        [[ln.x0, ln.y0, ln.x1, ln.y1, ln.text, ln.font, ln.order] for ln in page.lines],
        [[r.x0, r.y0, r.x1, r.y1] for r in page.rules],
        page.image_area,
        [[b.x0, b.y0, b.x1, b.y1] for b in page.images],
    ]


def page_from_wire(value: Any) -> PageContent:
    """The page `page_to_wire` wrote (ValueError/TypeError/KeyError on anything else)."""
    number, width, height, lines, rules, image_area, images = value
    number = int(number)
    return PageContent(
        number,
        float(width),
        float(height),
        tuple(
            Line(
                number, float(x0), float(y0), float(x1), float(y1), str(text), str(font), int(order)
            )
            for x0, y0, x1, y1, text, font, order in lines
        ),
        tuple(Rule(float(x0), float(y0), float(x1), float(y1)) for x0, y0, x1, y1 in rules),
        float(image_area),
        tuple(Box(float(x0), float(y0), float(x1), float(y1)) for x0, y0, x1, y1 in images),
    )
