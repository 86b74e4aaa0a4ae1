"""Attachments become child jobs: which format, under which name, and when not at all.

Format: from the file name's extension (or the declared content type when there is no
usable extension), checked against the bytes. A signature that settles the question
(`%PDF-`, `PAR1`) wins over the name; a binary format (xlsx, docx, msg, …) needs its
signature; a text format (csv, eml, …) needs bytes without NULs and without a binary
signature. A part that fails the check is not routed: its ATTACHMENT node says why.

Name: `attachment:<blake3 hex of the bytes>`, so identical bytes attached to any number
of messages are one child job and one source document (the core dedups names per
tenant; PR-067).

Too large: an attachment over `max_attachment_bytes` (a job option, default 25 MiB), or
one that would push the message's inline attachment bytes past 40 MiB (child content
travels base64-encoded inside the parent's submission, whose limit is 64 MiB), still
becomes a child job of its format and name, but without content and with the option
`oversize` set. The harness fails such a job at once as permanent `too_large` (see
workers_common.driver), so the child is dead with a clear reason in `telha job`, the
parent succeeds, and the ATTACHMENT node records `too_large: true`. The alternative,
recording only a marker on the node, would leave nothing an operator can list, retry
with a larger limit, or count among the dead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import blake3

from workers_common import formats

__all__ = [
    "DEFAULT_MAX_ATTACHMENT_BYTES",
    "FORMATS_ENV",
    "INLINE_BUDGET_BYTES",
    "ROUTABLE_FORMATS",
    "Route",
    "attachment_name",
    "detect_format",
    "routed_formats",
]

DEFAULT_MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024
INLINE_BUDGET_BYTES = 40 * 1024 * 1024
"""Most attachment bytes one submission carries inline (base64 grows them by a third)."""

FORMATS_ENV = "EMAIL_ATTACHMENT_FORMATS"
"""Comma-separated formats to route attachments to (the pool's `env` in supervisor.toml);
unset means every format below. A format outside it gets an ATTACHMENT node only."""

ROUTABLE_FORMATS = formats.ROUTABLE_FORMATS
"""Every format this worker can name for an attachment (all are formats the core knows)."""
Route = formats.Route
detect_format = formats.detect_format
"""The attachment's format by extension (or content type) and magic bytes
(workers_common.formats, shared with the web and code workers)."""


def attachment_name(data: bytes) -> str:
    """The child job's name: derived from the content alone (PR-067)."""
    return f"attachment:{blake3.blake3(data).hexdigest()}"


def routed_formats(environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """The formats attachments may be routed to, from EMAIL_ATTACHMENT_FORMATS."""
    return formats.routed_formats(FORMATS_ENV, environ)
