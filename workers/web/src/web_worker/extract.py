"""Main content: trafilatura under a time limit, its XML body read into blocks; the
selectolax fallback when it fails, finds nothing or runs out of time.

trafilatura's time has a long tail (NOTES.md: median 26 ms, max 24 s over 290 real pages),
so it runs under an interval timer (SIGALRM, main thread only: the consumer runs handlers
there). The timer interrupts Python code between bytecodes, which is where trafilatura
spends its time.
"""

from __future__ import annotations

import re
import signal
import threading
from bisect import bisect_right
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import accumulate
from types import FrameType
from typing import Any

import trafilatura
from selectolax.lexbor import LexborHTMLParser

from . import htmlscan
from .model import Block, Extracted, Link
from .urls import normalize

__all__ = ["ExtractTimeout", "extract", "prime_trafilatura"]

_WS = re.compile(r"\s+")


class ExtractTimeout(BaseException):
    """trafilatura ran past its time limit (a BaseException: its own `except Exception`
    blocks must not swallow it)."""


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _expired(_signum: int, _frame: FrameType | None) -> None:
        raise ExtractTimeout

    previous = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def prime_trafilatura() -> None:
    """Builds trafilatura's union of justext stoplists now, not on the first page that
    falls back to justext (seconds of CPU, once per process; the worker runs this in a
    background thread while it waits for its first job)."""
    from trafilatura import external

    if not external.JT_STOPLIST:
        external.jt_stoplist_init()


def _inline(element: Any, base: str) -> tuple[str, list[Link]]:
    """An element's text with its <ref> anchors located, nested lists left out."""
    parts: list[str] = []
    links: list[Link] = []
    length = 0

    def add(text: str | None) -> None:
        nonlocal length
        if text:
            parts.append(text)
            length += len(text)

    add(element.text)
    for child in element:
        if child.tag == "list":
            add(" ")
            add(child.tail)
            continue
        start = length
        add("".join(child.itertext()))
        if child.tag == "ref":
            url = normalize(child.get("target") or "", base)
            if url is not None and length > start:
                links.append(Link(url, start, length))
        add(child.tail)
    return _collapse("".join(parts), links)


def _collapse(raw: str, links: list[Link]) -> tuple[str, list[Link]]:
    """Whitespace runs as one space, trimmed, with the links' offsets moved to match."""
    text = _WS.sub(" ", raw)
    lead = 1 if text.startswith(" ") else 0
    text = text.strip()
    if not links:  # most blocks: no offsets to move
        return text, []
    runs = [(m.start(), m.end()) for m in _WS.finditer(raw)]
    starts = [r[0] for r in runs]
    removed = list(accumulate((e - b - 1 for b, e in runs), initial=0))

    def moved(position: int) -> int:
        i = bisect_right(starts, position) - 1  # the last run starting at or before
        if i >= 0 and position < runs[i][1]:  # inside a run: at its one space
            new = runs[i][0] - removed[i] + min(1, position - runs[i][0])
        else:
            new = position - removed[i + 1]
        return max(0, min(new - lead, len(text)))

    out: list[Link] = []
    for link in links:
        begin, finish = moved(link.start), moved(link.end)
        while begin < finish and text[begin] == " ":
            begin += 1
        while finish > begin and text[finish - 1] == " ":
            finish -= 1
        if finish > begin:
            out.append(Link(link.url, begin, finish))
    return text, out


def _table(element: Any) -> Block | None:
    rows: list[list[str]] = []
    for row in element.iter("row"):
        cells = [htmlscan.clean("".join(c.itertext())) for c in row if c.tag == "cell"]
        if any(cells):
            rows.append(cells)
    text = "\n".join(" | ".join(r) for r in rows)
    if not text:
        return None
    return Block("table", text, rows=len(rows), columns=max(len(r) for r in rows))


def _blocks(element: Any, base: str) -> Iterator[Block]:
    for child in element:
        tag = child.tag
        if tag == "table":
            table = _table(child)
            if table is not None:
                yield table
            continue
        if tag == "list":
            yield from _list_items(child, base)
            continue
        if tag not in ("head", "p", "quote", "code"):
            yield from _blocks(child, base)
            continue
        text, links = _inline(child, base)
        if not text:
            continue
        if tag == "head":
            level = _heading_level(child.get("rend") or "")
            yield Block("heading", text, level=level, links=tuple(links))
        else:
            yield Block("paragraph", text, links=tuple(links))


def _list_items(element: Any, base: str) -> Iterator[Block]:
    for item in element:
        if item.tag != "item":
            continue
        text, links = _inline(item, base)
        if text:
            yield Block("list_item", text, links=tuple(links))
        for nested in item:
            if nested.tag == "list":
                yield from _list_items(nested, base)


def _heading_level(rend: str) -> int:
    if len(rend) == 2 and rend[0] == "h" and rend[1] in "123456":
        return int(rend[1])
    return 2


def _trafilatura_blocks(html: str, url: str, limit_s: float) -> tuple[Block, ...]:
    with _time_limit(limit_s):
        # No `url`: given one, trafilatura resolves links against the site's root, not the
        # page (`rel/x` on /a/b becomes /rel/x); they are resolved here, against `url`.
        document = trafilatura.bare_extraction(
            html,
            include_links=True,
            include_tables=True,
            include_comments=False,
            with_metadata=False,
            deduplicate=False,
        )
    body = getattr(document, "body", None)
    if body is None:
        return ()
    return tuple(_blocks(body, url))


def extract(
    html: str, url: str, *, limit_s: float = 5.0, tree: LexborHTMLParser | None = None
) -> Extracted:
    """The page's metadata, main-content blocks and every link, from its HTML (`tree`:
    its selectolax parse when the caller has one already, e.g. from the render rule)."""
    if tree is None:
        tree = htmlscan.parse(html)
    base = htmlscan.base_url(tree, url)
    extractor = "trafilatura"
    try:
        blocks = _trafilatura_blocks(html, base, limit_s)
    except ExtractTimeout:
        blocks, extractor = (), "fallback:timeout"
    except Exception:  # trafilatura's own bugs on odd markup must not lose the page
        blocks, extractor = (), "fallback:error"
    if not blocks:
        blocks = htmlscan.fallback_blocks(tree, base)
        extractor = extractor if extractor != "trafilatura" else "fallback:empty"
    return Extracted(
        meta=htmlscan.meta(tree, base),
        blocks=blocks,
        extractor=extractor,
        crawl_links=htmlscan.links(tree, base),
    )
