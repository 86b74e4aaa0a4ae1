"""The web worker's entry: format `web`, a URL job fetched, maybe rendered, and projected.

One `WebWorker` per process holds what outlives a job: the guard, the fetcher's clients,
the robots cache, the per-host turns and the browser (started on the first page that
needs it). The pool's environment configures it:

- `WEB_ALLOW_NETS`        CIDRs the SSRF guard lets through (default none)
- `WEB_USER_AGENT`        the default user agent (option `user_agent` overrides it)
- `WEB_STATE_DIR`         the per-host politeness files shared by the pool's workers
- `WEB_CHROMIUM`          the browser binary (default `chromium` on PATH)
- `WEB_BROWSER_MAX_PAGES` restart the browser after this many pages (default 50)
- `WEB_ROBOTS_TTL_S`      how long robots.txt rules are kept per host (default 3600)
- `WEB_CONTENT_FORMATS`   formats non-HTML responses may be routed to (routing.py)

Job options: see options.py and the README's table.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from playwright.async_api import Error as PlaywrightError
from selectolax.lexbor import LexborHTMLParser

from workers_common import FetchFailed, Handler, InvalidInput, Job, Unsupported

from .browser import Renderer, find_chromium
from .charset import decode_html
from .crawl import crawl_id, plan_children
from .extract import extract, prime_trafilatura
from .fetch import Fetcher, Response, StatusFailure, check_status
from .guard import Guard
from .htmlscan import needs_render, parse
from .ledger import CrawlLedger
from .options import Settings, settings_from
from .polite import STATE_DIR_ENV, HostSlots, default_state_dir
from .projection import PageFacts, project_page, project_routed
from .render import Rendered, SubresourceCache, render_page
from .robots import ROBOTS_LIMITS, Robots, RobotsCache
from .routing import HTML, classify, media_type, routed_formats
from .urls import host_key, normalize

__all__ = ["DEFAULT_USER_AGENT", "FORMATS", "HANDLERS", "WebWorker", "handle", "worker"]

FORMATS = ("web",)
DEFAULT_USER_AGENT = "TelhaBot/0.1 (+https://github.com/telha/telha)"


def _env_int(environ: Mapping[str, str], key: str, default: int) -> int:
    value = environ.get(key, "")
    return int(value) if value.isdigit() else default


@dataclass(frozen=True, slots=True)
class _Fetched:
    response: Response
    html: str
    facts: PageFacts
    tree: LexborHTMLParser | None = None
    """The static HTML's selectolax parse when the render rule made one (shared with
    the extraction: one parse per page)."""


class WebWorker:
    """A worker's long-lived state; `handle(job)` is one page."""

    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        # httpx logs every request at INFO: one line per sub-request of a rendered page.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        self.user_agent = environ.get("WEB_USER_AGENT") or DEFAULT_USER_AGENT
        self.guard = Guard.from_env(environ)
        self.fetcher = Fetcher(self.guard, self.user_agent)
        self.robots = RobotsCache(
            self.fetcher, ttl_s=float(_env_int(environ, "WEB_ROBOTS_TTL_S", 3600))
        )
        state_dir = environ.get(STATE_DIR_ENV)
        self.slots = HostSlots(Path(state_dir) if state_dir else default_state_dir())
        self.ledger = CrawlLedger(self.slots.dir)
        self.renderer = Renderer(
            find_chromium(environ), max_pages=_env_int(environ, "WEB_BROWSER_MAX_PAGES", 50)
        )
        self.formats = routed_formats(environ)
        self.cache = SubresourceCache()

    def close(self) -> None:
        self.renderer.close()
        self.cache = SubresourceCache()
        self.fetcher.close()

    def handle(self, job: Job) -> bytes:
        if not job.url:
            raise InvalidInput("a web job needs a URL (telha ingest https://...)")
        url = normalize(job.url)
        if url is None:
            raise InvalidInput(f"not an http(s) URL: {job.url}")
        settings = settings_from(job.options, self.user_agent)
        host = host_key(url)
        interval = settings.crawl_delay_ms / 1000
        if settings.respect_robots:
            rules = self._robots(url, settings)
            interval = max(interval, rules.crawl_delay(settings.user_agent))
        try:
            with self.slots.turn(host, interval):
                fetched = self._fetch(url, settings)
        except StatusFailure as failure:
            if failure.retry_after_s:
                self.slots.defer(host, failure.retry_after_s)
            raise
        return self._project(fetched, settings, job)

    def _robots(self, url: str, settings: Settings) -> Robots:
        def fetch(target: str) -> Response:
            # robots.txt is a fetch from the host like any other: it takes a turn.
            with self.slots.turn(host_key(target), settings.crawl_delay_ms / 1000):
                return self.fetcher.get(target, ROBOTS_LIMITS)

        return self.robots.check(url, settings.user_agent, fetch)

    def _fetch(self, url: str, settings: Settings) -> _Fetched:
        def on_hop(hop: str) -> None:
            if hop != url and settings.respect_robots:
                self.robots.check(hop, settings.user_agent)

        headers = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
        response = self.fetcher.get(url, settings.fetch, on_hop=on_hop, extra_headers=headers)
        check_status(response)
        kind = classify(response.content_type, response.body)
        facts = PageFacts(
            url=url,
            final_url=normalize(response.final_url) or response.final_url,
            status=response.status,
            content_type=media_type(response.content_type),
            fetched_via="static",
            redirects=tuple(normalize(r) or r for r in response.redirects),
        )
        if kind != HTML:
            return _Fetched(response, "", facts)
        decoded = decode_html(response.body, response.content_type)
        facts = _with(facts, encoding=decoded.encoding)
        return self._maybe_render(response, decoded.text, facts, settings)

    def _maybe_render(
        self, response: Response, html: str, facts: PageFacts, settings: Settings
    ) -> _Fetched:
        if settings.render == "never":
            return _Fetched(response, html, facts)
        if settings.render == "always":
            reason = "render=always"
        else:
            tree = parse(html)
            found = needs_render(tree, settings.render_min_text)
            if found is None or not self.renderer.available:
                return _Fetched(response, html, facts, tree)
            reason = found
        try:
            rendered = self._render(response, html, settings)
        except (FetchFailed, Unsupported) as err:
            if settings.render == "always":
                raise
            failed = f"{reason}; rendering failed, static HTML used: {err}"[:300]
            return _Fetched(response, html, _with(facts, render_reason=failed))
        return _Fetched(response, rendered.html, _rendered_facts(facts, rendered, reason))

    def _render(self, response: Response, html: str, settings: Settings) -> Rendered:
        limits = settings.render_limits
        try:
            return self.renderer.run(
                lambda context: render_page(
                    context, self.fetcher, response, html, limits, self.cache
                )
            )
        except (TimeoutError, PlaywrightError) as err:
            # A wedged or crashed page: the next page gets a fresh browser.
            self.renderer.restart()
            raise FetchFailed(f"render of {response.final_url} failed: {err}") from err

    def _project(self, fetched: _Fetched, settings: Settings, job: Job) -> bytes:
        facts = fetched.facts
        response = fetched.response
        if not fetched.html and classify(response.content_type, response.body) != HTML:
            fmt = classify(response.content_type, response.body)
            if fmt is None or fmt not in self.formats:
                what = facts.content_type or "an unknown type"
                raise Unsupported(f"{facts.final_url} is {what}, which no pool here serves")
            return project_routed(facts, response.body, fmt)
        extracted = extract(
            fetched.html, facts.final_url, limit_s=settings.extract_timeout_s, tree=fetched.tree
        )
        children = plan_children(
            extracted.crawl_links,
            facts.final_url,
            settings,
            dict(job.options),
            claim=lambda crawl, urls, limit: self.ledger.claim(crawl, job.job_id, urls, limit),
            root_id=crawl_id(job.tenant_id, job.job_id, facts.url),
        )
        return project_page(facts, extracted, children)


def _with(facts: PageFacts, **changes: Any) -> PageFacts:
    return replace(facts, **changes)


def _rendered_facts(facts: PageFacts, rendered: Rendered, reason: str) -> PageFacts:
    return _with(
        facts,
        fetched_via="chromium",
        render_reason=reason,
        blocked_requests=rendered.blocked,
        skipped_requests=rendered.skipped,
        loaded=rendered.loaded,
    )


_WORKER: WebWorker | None = None


def worker() -> WebWorker:
    """This process's WebWorker, made on first use."""
    global _WORKER
    if _WORKER is None:
        _WORKER = WebWorker()
        atexit.register(_WORKER.close)
        threading.Thread(target=prime_trafilatura, name="prime-trafilatura", daemon=True).start()
    return _WORKER


def handle(job: Job) -> bytes:
    """Fetches and projects one URL job (typed failures: see the README's table)."""
    return worker().handle(job)


HANDLERS: Mapping[str, Handler] = dict.fromkeys(FORMATS, handle)
