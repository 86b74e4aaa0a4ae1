"""robots.txt: fetched through the same guard, parsed by protego, cached per host with a TTL.

Answers as crawlers commonly do (RFC 9309): a 2xx body is the rules; a 4xx means no rules
(everything allowed); a 5xx, a timeout or a connection error means the rules are unknown,
which is `fetch_failed` (the job is retried later) rather than a guess either way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from protego import Protego

from workers_common import FetchFailed, Unsupported

from .fetch import Fetcher, FetchLimits, Response
from .urls import host_key

__all__ = ["ROBOTS_LIMITS", "Robots", "RobotsCache", "RobotsDisallowed"]

ROBOTS_LIMITS = FetchLimits(connect_s=10.0, total_s=20.0, max_bytes=512 * 1024, max_redirects=5)
_MAX_HOSTS = 1024


class RobotsDisallowed(Unsupported):
    """The site's robots.txt disallows the URL for our user agent."""


@dataclass(frozen=True, slots=True)
class Robots:
    parser: Protego | None
    """None: no rules (robots.txt absent)."""
    fetched_at: float

    def allowed(self, url: str, user_agent: str) -> bool:
        return self.parser is None or bool(self.parser.can_fetch(url, user_agent))

    def crawl_delay(self, user_agent: str) -> float:
        if self.parser is None:
            return 0.0
        delay = self.parser.crawl_delay(user_agent)
        return float(delay) if delay else 0.0


def robots_url(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), "/robots.txt", "", ""))


class RobotsCache:
    """One worker's robots rules per `host:port`, each kept for `ttl_s` seconds."""

    def __init__(
        self,
        fetcher: Fetcher,
        ttl_s: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.fetcher = fetcher
        self.ttl_s = ttl_s
        self.clock = clock
        self._rules: dict[str, Robots] = {}

    def rules(self, url: str, fetch: Callable[[str], Response] | None = None) -> Robots:
        """The rules for `url`'s host (fetching them when missing or stale). `fetch` does
        the GET (the handler passes one that takes the host's politeness turn)."""
        key = host_key(url)
        cached = self._rules.get(key)
        now = self.clock()
        if cached is not None and now - cached.fetched_at < self.ttl_s:
            return cached
        target = robots_url(url)
        response = (fetch or self._fetch)(target)
        rules = _parse(response, target, now)
        if len(self._rules) >= _MAX_HOSTS:
            self._rules.pop(next(iter(self._rules)))
        self._rules[key] = rules
        return rules

    def _fetch(self, target: str) -> Response:
        return self.fetcher.get(target, ROBOTS_LIMITS)

    def check(
        self, url: str, user_agent: str, fetch: Callable[[str], Response] | None = None
    ) -> Robots:
        """The host's rules; raises permanent `unsupported` when they disallow `url`."""
        rules = self.rules(url, fetch)
        if not rules.allowed(url, user_agent):
            raise RobotsDisallowed(f"disallowed by robots.txt: {url}")
        return rules


def _parse(response: Response, target: str, now: float) -> Robots:
    status = response.status
    if 200 <= status < 300:
        text = response.body.decode("utf-8", "replace")
        return Robots(Protego.parse(text), now)
    if 400 <= status < 500:
        return Robots(None, now)
    raise FetchFailed(f"robots.txt unavailable: HTTP {status} for {target}")
