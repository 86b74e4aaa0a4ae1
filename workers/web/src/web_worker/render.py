"""Rendering one page in Chromium: every request intercepted, guarded and fetched by the
worker; `load`, then a bounded settle; the DOM read back as HTML.

The document itself is fulfilled from the static fetch already made (the same bytes,
re-encoded as UTF-8 with the charset already decided), so Chromium renders exactly what
the worker fetched. Each sub-request (scripts, XHR, images, frames) goes through the
guard: a refused address is aborted and counted (`blocked_requests` on the PAGE); an
allowed one is fetched by the worker's pinned fetcher in a thread and fulfilled. Only GET
is fetched (rendering reads, never writes): other methods are aborted and counted as
skipped, as are requests past `max_subrequests` and images, media and fonts (guarded and
counted, never fetched: they carry no text).

Settle: after `load` (or after the render timeout when `load` never comes), wait until no
intercepted request has been in flight for `quiet_ms`, at most `settle_ms`. Never
`networkidle`, which can wait forever on a page that polls.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from dataclasses import dataclass

from playwright.async_api import BrowserContext, Page, Request, Route
from playwright.async_api import Error as PlaywrightError

from workers_common import WorkerFailure

from .fetch import Fetcher, FetchLimits, Response
from .guard import Refused

__all__ = ["RenderLimits", "Rendered", "SubresourceCache", "render_page"]


_NOT_FETCHED = frozenset({"image", "media", "font"})
_CACHED = frozenset({"script", "stylesheet"})


class SubresourceCache:
    """Scripts and stylesheets a worker fetched for earlier pages, as a browser's HTTP cache
    keeps them: a site's pages share most of theirs. Bounded in bytes, least recently used
    out first; an entry never connects anywhere, so the guard has nothing to check."""

    def __init__(self, max_bytes: int = 32 << 20, max_item: int = 2 << 20) -> None:
        self.max_bytes = max_bytes
        self.max_item = max_item
        self.size = 0
        self._items: OrderedDict[str, tuple[dict[str, str], bytes]] = OrderedDict()

    def get(self, url: str) -> tuple[dict[str, str], bytes] | None:
        item = self._items.get(url)
        if item is not None:
            self._items.move_to_end(url)
        return item

    def put(self, url: str, headers: dict[str, str], body: bytes) -> None:
        if len(body) > self.max_item or url in self._items:
            return
        self._items[url] = (headers, body)
        self.size += len(body)
        while self.size > self.max_bytes:
            _, (_, dropped) = self._items.popitem(last=False)
            self.size -= len(dropped)


_SUBREQUEST = FetchLimits(connect_s=5.0, total_s=10.0, max_bytes=5 << 20)


@dataclass(frozen=True, slots=True)
class RenderLimits:
    load_ms: int = 15000
    settle_ms: int = 3000
    quiet_ms: int = 300
    max_subrequests: int = 200
    subrequest: FetchLimits = _SUBREQUEST


@dataclass(frozen=True, slots=True)
class Rendered:
    html: str
    loaded: bool
    """Whether `load` fired within `load_ms`."""
    blocked: int
    """Sub-requests the guard refused."""
    skipped: int
    """Sub-requests not made: not GET, past max_subrequests, or failed to fetch."""
    subrequests: int


class _Interceptor:
    def __init__(
        self,
        fetcher: Fetcher,
        document: Response,
        html: str,
        limits: RenderLimits,
        cache: SubresourceCache,
    ) -> None:
        self.fetcher = fetcher
        self.cache = cache
        self.document = document
        self.html = html
        self.limits = limits
        self.blocked = 0
        self.skipped = 0
        self.made = 0
        self.in_flight = 0
        self.last_activity = time.monotonic()
        self.document_served = False

    async def handle(self, route: Route, request: Request) -> None:
        self.in_flight += 1
        self.last_activity = time.monotonic()
        try:
            await self._handle(route, request)
        finally:
            self.in_flight -= 1
            self.last_activity = time.monotonic()

    async def _handle(self, route: Route, request: Request) -> None:
        if not self.document_served and request.is_navigation_request():
            self.document_served = True
            await route.fulfill(
                status=200,
                headers={"content-type": "text/html; charset=utf-8"},
                body=self.html.encode("utf-8"),
            )
            return
        if request.method != "GET" or self.made >= self.limits.max_subrequests:
            self.skipped += 1
            await route.abort("blockedbyclient")
            return
        if request.resource_type in _NOT_FETCHED:
            # Checked by the guard all the same (a refused address counts as blocked),
            # but never fetched: pixels, sound and glyphs carry no text.
            refused = await asyncio.to_thread(self.fetcher.refusal, request.url)
            self.blocked += refused is not None
            self.skipped += refused is None
            await route.abort("blockedbyclient")
            return
        self.made += 1
        cacheable = request.resource_type in _CACHED
        cached = self.cache.get(request.url) if cacheable else None
        if cached is not None:
            await route.fulfill(status=200, headers=cached[0], body=cached[1])
            return
        try:
            response = await asyncio.to_thread(
                self.fetcher.get, request.url, self.limits.subrequest
            )
        except Refused:
            self.blocked += 1
            await route.abort("blockedbyclient")
            return
        except (WorkerFailure, OSError):
            self.skipped += 1
            await route.abort("failed")
            return
        headers = {"content-type": response.content_type} if response.content_type else {}
        if cacheable and response.status == 200:
            self.cache.put(request.url, headers, response.body)
        await route.fulfill(status=response.status, headers=headers, body=response.body)


async def _settle(page: Page, interceptor: _Interceptor, limits: RenderLimits) -> None:
    deadline = time.monotonic() + limits.settle_ms / 1000
    quiet = limits.quiet_ms / 1000
    while time.monotonic() < deadline:
        idle_for = time.monotonic() - interceptor.last_activity
        if interceptor.in_flight == 0 and idle_for >= quiet:
            return
        await page.wait_for_timeout(50)


async def render_page(
    context: BrowserContext,
    fetcher: Fetcher,
    document: Response,
    html: str,
    limits: RenderLimits,
    cache: SubresourceCache,
) -> Rendered:
    """Renders `document` (already fetched and decoded to `html`) in a new page of the
    worker's context (its cookies cleared after) and returns the DOM."""
    interceptor = _Interceptor(fetcher, document, html, limits, cache)
    page = await context.new_page()
    try:
        await page.route("**/*", interceptor.handle)
        loaded = True
        try:
            await page.goto(document.final_url, wait_until="load", timeout=limits.load_ms)
        except PlaywrightError as err:
            if "Timeout" not in str(err):
                raise
            loaded = False
        await _settle(page, interceptor, limits)
        # A page spinning in a script never answers: bound the read as well.
        content = await asyncio.wait_for(page.content(), limits.load_ms / 1000)
        return Rendered(
            html=content,
            loaded=loaded,
            blocked=interceptor.blocked,
            skipped=interceptor.skipped,
            subrequests=interceptor.made,
        )
    finally:
        with contextlib.suppress(PlaywrightError, TimeoutError):
            await asyncio.wait_for(page.close(), 5)
            await asyncio.wait_for(context.clear_cookies(), 5)
