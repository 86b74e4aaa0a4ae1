"""A web job's options, checked: a bad value is the job's fault (permanent invalid_input).

The README lists each option with its default. `depth`, `crawl_budget`, `crawl_host`,
`crawl_root` and `crawl_id` are set by the worker on crawl children, not by users.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workers_common import InvalidInput

from .fetch import FetchLimits
from .render import RenderLimits

__all__ = ["INHERITED", "RENDER_MODES", "Settings", "settings_from"]

RENDER_MODES = ("auto", "always", "never")
INHERITED = (
    "render",
    "respect_robots",
    "user_agent",
    "crawl_depth",
    "max_pages",
    "same_host",
    "include",
    "exclude",
    "crawl_delay_ms",
    "max_bytes",
    "connect_timeout_ms",
    "timeout_ms",
    "render_timeout_ms",
    "settle_ms",
    "extract_timeout_ms",
    "render_min_text",
)
"""Options a crawl child gets from its parent unchanged."""


@dataclass(frozen=True, slots=True)
class Settings:
    render: str
    respect_robots: bool
    user_agent: str
    crawl_depth: int
    max_pages: int
    same_host: bool
    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    crawl_delay_ms: int
    fetch: FetchLimits
    render_limits: RenderLimits
    extract_timeout_s: float
    render_min_text: int
    depth: int
    crawl_budget: int
    crawl_host: str
    crawl_root: str
    crawl_id: str


def _int(options: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"option {key} must be an integer in [{low}, {high}], not {value!r}")
    return value


def _bool(options: Mapping[str, Any], key: str, default: bool) -> bool:
    value = options.get(key, default)
    if not isinstance(value, bool):
        raise InvalidInput(f"option {key} must be true or false, not {value!r}")
    return value


def _patterns(options: Mapping[str, Any], key: str) -> tuple[re.Pattern[str], ...]:
    value = options.get(key, [])
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise InvalidInput(f"option {key} must be a regular expression or a list of them")
    try:
        return tuple(re.compile(i) for i in items)
    except re.error as err:
        raise InvalidInput(f"option {key}: bad regular expression: {err}") from err


def _render(options: Mapping[str, Any]) -> str:
    value = options.get("render", "auto")
    if value not in RENDER_MODES:
        raise InvalidInput(f"option render must be one of {', '.join(RENDER_MODES)}, not {value!r}")
    return str(value)


def _str(options: Mapping[str, Any], key: str, default: str) -> str:
    value = options.get(key, default)
    if not isinstance(value, str) or not value.strip() or len(value) > 512:
        raise InvalidInput(f"option {key} must be a non-empty string")
    return value.strip()


def _limits(options: Mapping[str, Any]) -> tuple[FetchLimits, RenderLimits]:
    fetch = FetchLimits(
        connect_s=_int(options, "connect_timeout_ms", 10_000, 100, 120_000) / 1000,
        total_s=_int(options, "timeout_ms", 30_000, 100, 600_000) / 1000,
        max_bytes=_int(options, "max_bytes", 10 << 20, 1, 1 << 30),
    )
    render = RenderLimits(
        load_ms=_int(options, "render_timeout_ms", 15_000, 100, 300_000),
        settle_ms=_int(options, "settle_ms", 3_000, 0, 60_000),
    )
    return fetch, render


def settings_from(options: Mapping[str, Any], default_user_agent: str) -> Settings:
    """The job's settings; a bad value raises InvalidInput naming the option."""
    fetch, render = _limits(options)
    max_pages = _int(options, "max_pages", 100, 1, 1_000_000)
    return Settings(
        render=_render(options),
        respect_robots=_bool(options, "respect_robots", True),
        user_agent=_str(options, "user_agent", default_user_agent),
        crawl_depth=_int(options, "crawl_depth", 0, 0, 100),
        max_pages=max_pages,
        same_host=_bool(options, "same_host", True),
        include=_patterns(options, "include"),
        exclude=_patterns(options, "exclude"),
        crawl_delay_ms=_int(options, "crawl_delay_ms", 1000, 0, 600_000),
        fetch=fetch,
        render_limits=render,
        extract_timeout_s=_int(options, "extract_timeout_ms", 5_000, 0, 600_000) / 1000,
        render_min_text=_int(options, "render_min_text", 200, 0, 1_000_000),
        depth=_int(options, "depth", 0, 0, 100),
        crawl_budget=_int(options, "crawl_budget", max_pages, 1, 1_000_000),
        crawl_host=str(options.get("crawl_host") or ""),
        crawl_root=str(options.get("crawl_root") or ""),
        crawl_id=str(options.get("crawl_id") or ""),
    )
