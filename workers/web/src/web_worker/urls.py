"""URL normalization: one spelling per link target, for URL_REF dedup and crawl child names.

`normalize` resolves a link against its page, keeps http(s) only, lower-cases scheme and
host, drops the fragment, the user info, the scheme's default port and tracking
parameters (utm_*, gclid, fbclid, …), and gives an empty path as `/`. The query's other
parameters keep their order: reordering them can change what a server returns.
"""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

__all__ = ["DEFAULT_PORTS", "host_key", "is_tracking_param", "normalize"]

DEFAULT_PORTS = {"http": 80, "https": 443}
_TRACKING_EXACT = frozenset(
    {
        "gclid",
        "dclid",
        "gbraid",
        "wbraid",
        "fbclid",
        "msclkid",
        "yclid",
        "igshid",
        "mc_cid",
        "mc_eid",
        "_ga",
        "_gl",
        "_hsenc",
        "_hsmi",
        "mkt_tok",
        "oly_anon_id",
        "oly_enc_id",
        "vero_id",
        "si",
    }
)


def is_tracking_param(name: str) -> bool:
    """Whether a query parameter only tracks the visitor (dropped by `normalize`)."""
    lowered = name.lower()
    return lowered.startswith("utm_") or lowered in _TRACKING_EXACT


def _netloc(host: str, port: int | None, scheme: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    if port is None or port == DEFAULT_PORTS.get(scheme):
        return shown
    return f"{shown}:{port}"


@lru_cache(maxsize=1 << 16)
def normalize(href: str, base: str | None = None) -> str | None:
    """The normalized absolute URL `href` points at (relative to `base`), or None when it is
    not an http(s) URL (mailto:, javascript:, a malformed port, …). Cached: a site's pages
    repeat their links."""
    href = href.strip()
    if not href:
        return None
    try:
        joined = urljoin(base, href) if base else href
        parts = urlsplit(joined)
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS or not parts.hostname:
            return None
        port = parts.port
    except ValueError:
        return None
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    kept = [(k, v) for k, v in query if not is_tracking_param(k)]
    new_query = parts.query if len(kept) == len(query) else urlencode(kept)
    netloc = _netloc(parts.hostname.lower().rstrip("."), port, scheme)
    return urlunsplit((scheme, netloc, parts.path or "/", new_query, ""))


def host_key(url: str) -> str:
    """`host:port` of a normalized URL: the unit of politeness and of the robots cache."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower(), 0)
    return f"{host}:{port}"
