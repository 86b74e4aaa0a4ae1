"""What the extractors hand the projection: a page's metadata and its main content as blocks."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Block", "Extracted", "Link", "PageMeta"]


@dataclass(frozen=True, slots=True)
class Link:
    """A link inside a block: its normalized target and the anchor's character range."""

    url: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Block:
    """One unit of main content in reading order."""

    kind: str
    """heading, paragraph, list_item or table."""
    text: str
    level: int = 0
    """Heading level 1-6 (0 for other kinds)."""
    links: tuple[Link, ...] = ()
    rows: int = 0
    columns: int = 0


@dataclass(frozen=True, slots=True)
class PageMeta:
    """What the page states about itself (absent values are empty strings)."""

    title: str = ""
    lang: str = ""
    canonical_url: str = ""
    description: str = ""
    published: str = ""
    modified: str = ""


@dataclass(frozen=True, slots=True)
class Extracted:
    meta: PageMeta
    blocks: tuple[Block, ...]
    extractor: str
    """trafilatura, or fallback when it failed, found nothing or ran out of time."""
    crawl_links: tuple[str, ...] = field(default=())
    """Every http(s) link of the whole document, normalized, first-seen order, deduped."""
