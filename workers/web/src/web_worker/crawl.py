"""Crawl fan-out: which links of a page become child `web` jobs, and with what budget.

A link is followed when the page is above `crawl_depth`, the link is http(s), on the
crawl's host when `same_host` (the host of the URL the crawl started from, carried as
`crawl_host`; `crawl_root` is that URL), matches an `include` pattern when there are any,
and matches no `exclude` pattern.

`max_pages` bounds a whole crawl without any shared counter: each job carries a budget
(`crawl_budget`, the pages it and its descendants may use, itself included). A page keeps
one for itself and hands the rest to its first links in document order: each child gets
one, and what is left is split evenly, earlier children getting the remainder. The sum
over the crawl tree never passes `max_pages`; the core's per-tenant name dedup
(`url:<normalized URL>`) stops cycles and duplicates, which only lowers the count. The
crawl ledger (ledger.py) keeps pages from spending budget on links the crawl already
handed out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import blake3

from workers_common import is_child_name

from .options import INHERITED, Settings

__all__ = ["Child", "Claim", "child_name", "crawl_id", "plan_children"]


@dataclass(frozen=True, slots=True)
class Child:
    name: str
    url: str
    options: dict[str, Any]


def child_name(url: str) -> str:
    """The child job's name; the core turns a content-less `url:` child into a URL job."""
    return f"url:{url}"


def _in_scope(url: str, settings: Settings, host: str) -> bool:
    if settings.same_host and (urlsplit(url).hostname or "") != host:
        return False
    if settings.include and not any(p.search(url) for p in settings.include):
        return False
    return not any(p.search(url) for p in settings.exclude)


def _shares(budget: int, count: int) -> list[int]:
    rest = budget - count
    return [1 + rest // count + (1 if i < rest % count else 0) for i in range(count)]


Claim = Callable[[str, list[str], int], list[str]]
"""(crawl id, candidate URLs, how many at most) -> the URLs this page hands out."""


def crawl_id(tenant: str, job_id: str, url: str) -> str:
    """A crawl's id, fixed by its first job: a later crawl of the same URL is a new one."""
    return blake3.blake3(f"{tenant}\n{job_id}\n{url}".encode()).hexdigest()[:32]


def plan_children(
    links: Sequence[str],
    page_url: str,
    settings: Settings,
    options: dict[str, Any],
    claim: Claim | None = None,
    root_id: str = "",
) -> list[Child]:
    """The crawl children of a page (none at `crawl_depth` or with no budget left).

    `claim` (the ledger) drops links another page of the crawl already handed out;
    `root_id` is the crawl id a first page starts (children inherit theirs).
    """
    if settings.depth >= settings.crawl_depth:
        return []
    host = settings.crawl_host or (urlsplit(page_url).hostname or "")
    # The crawl's first page was submitted under its bare URL, not as `url:<URL>`, so the
    # core's name dedup would not catch a link back to it: it is skipped here.
    root = settings.crawl_root or page_url
    budget = settings.crawl_budget - 1
    this_crawl = settings.crawl_id or root_id
    # A link no child job may be named after (a control character that survived
    # normalization, over 4,096 bytes) is not followed: the core would refuse the page's
    # whole submission for it.
    candidates = [
        u
        for u in links
        if u not in (page_url, root)
        and _in_scope(u, settings, host)
        and is_child_name(child_name(u))
    ]
    if budget <= 0:
        return []
    if claim is not None and this_crawl:
        chosen = claim(this_crawl, candidates, budget)
    else:
        chosen = candidates[:budget]
    if not chosen:
        return []
    inherited = {key: options[key] for key in INHERITED if key in options}
    children = []
    for url, share in zip(chosen, _shares(budget, len(chosen)), strict=True):
        child_options = {
            **inherited,
            "depth": settings.depth + 1,
            "crawl_budget": share,
            "crawl_host": host,
            "crawl_root": root,
            **({"crawl_id": this_crawl} if this_crawl else {}),
        }
        children.append(Child(child_name(url), url, child_options))
    return children
