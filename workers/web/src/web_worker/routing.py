"""What a response's type is: HTML to project here, or another format's bytes for a child job.

The `Content-Type` decides; a missing or generic one (application/octet-stream) is sniffed
from the first bytes (`%PDF-`, an HTML start). `WEB_CONTENT_FORMATS` (the pool's `env`,
comma-separated) names the formats a pool of this deployment serves: a response of any
other format is `unsupported`, so no child job waits forever for a worker that never comes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from workers_common import formats
from workers_common.formats import media_type

__all__ = ["CONTENT_FORMATS_ENV", "ROUTES", "classify", "media_type", "routed_formats"]

CONTENT_FORMATS_ENV = "WEB_CONTENT_FORMATS"
HTML = "html"
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
ROUTES: Mapping[str, str] = formats.MEDIA_TYPES
"""Media type -> the format whose pool projects it (workers_common.formats, shared with
the email and code workers)."""
_GENERIC = frozenset({"", "application/octet-stream", "binary/octet-stream"})


def _sniff(body: bytes) -> str | None:
    head = body[:1024].lstrip().lower()
    if head.startswith(b"%pdf-"):
        return "pdf"
    if head.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
        return HTML
    return None


def classify(content_type: str, body: bytes) -> str | None:
    """`html`, a routed format name, or None when nothing here serves the type."""
    media = media_type(content_type)
    if media in _HTML_TYPES:
        return HTML
    if media in _GENERIC:
        return _sniff(body)
    return ROUTES.get(media)


def routed_formats(environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """The formats non-HTML responses may become child jobs of (all known ones by default)."""
    return formats.routed_formats(CONTENT_FORMATS_ENV, environ, frozenset(ROUTES.values()))
