"""Rendering one page in Chromium: every request intercepted, guarded and fetched by the
worker; `load`, then a bounded settle; the DOM read back as HTML.

The document itself is fulfilled from the static fetch already made (the same bytes,
re-encoded as UTF-8 with the charset already decided), so Chromium renders exactly what
the worker fetched. Each sub-request (scripts, XHR, images, frames) goes through the
guard: a refused address is aborted and counted (`blocked_requests` on the PAGE); an
allowed one is fetched by the worker's pinned fetcher in a thread and fulfilled. Only GET
is fetched (rendering reads, never writes): other methods are aborted and counted as
skipped, as are requests past `max_subrequests`.

Settle: after `load` (or after the render timeout when `load` never comes), wait until no
intercepted request has been in flight for `quiet_ms`, at most `settle_ms`. Never
`networkidle`, which can wait forever on a page that polls.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

from playwright.async_api import Browser, Page, Request, Route
from playwright.async_api import Error as PlaywrightError

from workers_common import WorkerFailure

from .fetch import Fetcher, FetchLimits, Response
from .guard import Refused

__all__ = ["RenderLimits", "Rendered", "render_page"]


_SUBREQUEST = FetchLimits(connect_s=5.0, total_s=10.0, max_bytes=5 << 20)


@dataclass(frozen=True, slots=True)
class RenderLimits:
    load_ms: int = 15000
    settle_ms: int = 3000
    quiet_ms: int = 500
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
        self, fetcher: Fetcher, document: Response, html: str, limits: RenderLimits
    ) -> None:
        self.fetcher = fetcher
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
        self.made += 1
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
    browser: Browser,
    fetcher: Fetcher,
    document: Response,
    html: str,
    limits: RenderLimits,
) -> Rendered:
    """Renders `document` (already fetched and decoded to `html`) and returns its DOM."""
    interceptor = _Interceptor(fetcher, document, html, limits)
    context = await browser.new_context(java_script_enabled=True, service_workers="block")
    try:
        await context.route("**/*", interceptor.handle)
        page = await context.new_page()
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
            await asyncio.wait_for(context.close(), 5)
