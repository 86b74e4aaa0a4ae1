"""Fast reads of a whole document with selectolax (lexbor): metadata, links, the render
decision, and the fallback blocks used when trafilatura gives nothing in time.

Only `selectolax.lexbor` is used: it is the parser that imports with selectolax 1.0 here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from .model import Block, Link, PageMeta
from .urls import normalize

__all__ = ["fallback_blocks", "links", "meta", "needs_render", "parse", "visible_text"]

_WS = re.compile(r"\s+")
_NEEDS_JS = re.compile(
    r"(enable|turn on|requires?|need|activate)\s+javascript|javascript\s+is\s+(required|disabled"
    r"|needed|off)|without\s+javascript",
    re.IGNORECASE,
)
_INVISIBLE = "script, style, noscript, template, svg"
_BOILERPLATE = (
    "nav, header, footer, aside, form, [role=navigation], [role=banner], [aria-hidden=true]"
)
_BLOCKS = "h1, h2, h3, h4, h5, h6, p, li, pre, blockquote, table, dt, dd"
_MAX_META = 512
_DATE_KEYS = {"published": "datePublished", "modified": "dateModified"}
_DATE_META = {
    "published": ("article:published_time", "datePublished", "date", "dc.date.issued"),
    "modified": ("article:modified_time", "og:updated_time", "dateModified", "last-modified"),
}


def clean(text: str) -> str:
    """Whitespace runs as one space, trimmed."""
    return _WS.sub(" ", text).strip()


def parse(html: str) -> LexborHTMLParser:
    return LexborHTMLParser(html)


def visible_text(tree: LexborHTMLParser) -> str:
    """The body's text without scripts, styles and templates (on a copy of the tree)."""
    copy = LexborHTMLParser(tree.html or "")
    body = copy.body
    if body is None:
        return ""
    for node in body.css(_INVISIBLE):
        node.decompose()
    return clean(body.text(separator=" "))


def needs_render(tree: LexborHTMLParser, min_text: int) -> str | None:
    """Why `render = auto` renders this page, or None: the rule the README documents.

    Render when the visible text is shorter than `min_text` characters and the page has
    a script, or when the page (its <noscript> included) says it needs JavaScript.
    """
    text = visible_text(tree)
    scripts = len(tree.css("script"))
    if scripts and len(text) < min_text:
        return f"{len(text)} characters of text and {scripts} scripts"
    noscript = " ".join(clean(n.text()) for n in tree.css("noscript"))
    if _NEEDS_JS.search(noscript) or (scripts and _NEEDS_JS.search(text[:2000])):
        return "the page says it needs JavaScript"
    return None


def _attr(node: LexborNode | None, name: str) -> str:
    if node is None:
        return ""
    value = node.attributes.get(name)
    return clean(value)[:_MAX_META] if value else ""


_META_ATTRS = ("property", "name", "itemprop")


def _meta_index(tree: LexborHTMLParser) -> dict[tuple[str, str], str]:
    """(attribute, its value) → the content of the first <meta> with it: one pass over the
    document's <meta> elements for every lookup of a page."""
    index: dict[tuple[str, str], str] = {}
    for node in tree.css("meta"):
        attributes = node.attributes
        for attr in _META_ATTRS:
            key = attributes.get(attr)
            if key is not None and (attr, key) not in index:
                index[(attr, key)] = _attr(node, "content")
    return index


def _meta_content(index: dict[tuple[str, str], str], names: tuple[str, ...]) -> str:
    for name in names:
        for attr in _META_ATTRS:
            value = index.get((attr, name))
            if value:
                return value
    return ""


def _json_ld_objects(tree: LexborHTMLParser) -> Iterator[dict[str, Any]]:
    for script in tree.css('script[type="application/ld+json"]'):
        try:
            data = json.loads(script.text())
        except (ValueError, RecursionError):
            continue
        stack = [data]
        while stack:
            item = stack.pop(0)
            if isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, dict):
                yield item
                graph = item.get("@graph")
                if isinstance(graph, list):
                    stack.extend(graph)


def _date(tree: LexborHTMLParser, index: dict[tuple[str, str], str], which: str) -> str:
    stated = _meta_content(index, _DATE_META[which])
    if stated:
        return stated
    for obj in _json_ld_objects(tree):
        value = obj.get(_DATE_KEYS[which])
        if isinstance(value, str) and value.strip():
            return clean(value)[:_MAX_META]
    return ""


def meta(tree: LexborHTMLParser, base: str) -> PageMeta:
    """Title, language, canonical URL, description and stated dates."""
    title_node = tree.css_first("title")
    title = clean(title_node.text())[:_MAX_META] if title_node else ""
    canonical = _attr(tree.css_first('link[rel~="canonical"]'), "href")
    index = _meta_index(tree)
    return PageMeta(
        title=title or _meta_content(index, ("og:title",)),
        lang=_attr(tree.css_first("html"), "lang"),
        canonical_url=(normalize(canonical, base) or "") if canonical else "",
        description=_meta_content(index, ("description", "og:description")),
        published=_date(tree, index, "published"),
        modified=_date(tree, index, "modified"),
    )


def base_url(tree: LexborHTMLParser, page_url: str) -> str:
    """The URL relative links resolve against: <base href> when the page sets one."""
    base = _attr(tree.css_first("base[href]"), "href")
    return (normalize(base, page_url) or page_url) if base else page_url


def links(tree: LexborHTMLParser, base: str) -> tuple[str, ...]:
    """Every http(s) link target of the document, normalized, deduped in document order."""
    seen: dict[str, None] = {}
    for node in tree.css("a[href], area[href]"):
        url = normalize(node.attributes.get("href") or "", base)
        if url is not None:
            seen.setdefault(url, None)
    return tuple(seen)


def _anchors(node: LexborNode, text: str, base: str) -> tuple[Link, ...]:
    found: list[Link] = []
    cursor = 0
    for anchor in node.css("a[href]"):
        url = normalize(anchor.attributes.get("href") or "", base)
        label = clean(anchor.text())
        if url is None or not label:
            continue
        start = text.find(label, cursor)
        if start < 0:
            continue
        found.append(Link(url, start, start + len(label)))
        cursor = start + len(label)
    return tuple(found)


def _block(node: LexborNode, base: str) -> Block | None:
    tag = node.tag or ""
    if tag == "table":
        rows = [[clean(c.text()) for c in row.css("th, td")] for row in node.css("tr")]
        rows = [r for r in rows if any(r)]
        text = "\n".join(" | ".join(r) for r in rows)
        columns = max((len(r) for r in rows), default=0)
        return Block("table", text, rows=len(rows), columns=columns) if text else None
    text = clean(node.text(separator=" "))
    if not text:
        return None
    if len(tag) == 2 and tag[0] == "h" and tag[1].isdigit():
        return Block("heading", text, level=int(tag[1]), links=_anchors(node, text, base))
    kind = "list_item" if tag in ("li", "dd", "dt") else "paragraph"
    return Block(kind, text, links=_anchors(node, text, base))


def fallback_blocks(tree: LexborHTMLParser, base: str) -> tuple[Block, ...]:
    """Blocks from the outermost block elements, boilerplate elements removed (on a copy)."""
    copy = LexborHTMLParser(tree.html or "")
    body = copy.body
    if body is None:
        return ()
    for node in body.css(f"{_INVISIBLE}, {_BOILERPLATE}"):
        node.decompose()
    matched = body.css(_BLOCKS)
    ids = {n.mem_id for n in matched}
    blocks: list[Block] = []
    for node in matched:
        if _inside_matched(node, ids):
            continue
        block = _block(node, base)
        if block is not None:
            blocks.append(block)
    if not blocks:
        text = clean(body.text(separator=" "))
        return (Block("paragraph", text),) if text else ()
    return tuple(blocks)


def _inside_matched(node: LexborNode, ids: set[int]) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.mem_id in ids:
            return True
        parent = parent.parent
    return False
