"""The example worker's entry: which formats it serves and how a job becomes a submission."""

from __future__ import annotations

from collections.abc import Mapping

from workers_common import SUBMISSION_CAPS, Handler, Job, TooLarge
from workers_common.text import decode_text

from .projection import project

__all__ = ["DEFAULT_MAX_BYTES", "FORMATS", "HANDLERS", "handle"]

FORMATS = ("txt", "text")

DEFAULT_MAX_BYTES = SUBMISSION_CAPS["max_text_bytes"]
"""A text file is one submission, whose canonical text is capped ([graph].max_text_bytes,
32 MiB): a larger file is refused before it is read. Reading an 86 MB one ran the worker
out of memory under the pool's 512 MB, five times, before the job was dead."""


def handle(job: Job) -> bytes:
    """Projects a text job: UTF-8, or what a byte-order mark says (UTF-16 and UTF-32 as
    Windows editors save them), or the encoding detected (a legacy code page). Bytes that
    do not decode become U+FFFD and are counted; binary data is invalid_input. DOCUMENT
    says how text that is not UTF-8 was decoded (`encoding`, `encoding_source`) and how
    many byte sequences did not decode (`replaced_bytes`).

    Option `max_bytes` (default DEFAULT_MAX_BYTES, 32 MiB) refuses larger content as
    too_large, before reading it.
    """
    limit = job.options.get("max_bytes", DEFAULT_MAX_BYTES)
    if not isinstance(limit, int) or isinstance(limit, bool):
        limit = DEFAULT_MAX_BYTES
    if job.content is not None and job.content.size > limit:
        raise TooLarge(f"{job.content.size} bytes is over max_bytes={limit}")
    decoded = decode_text(job.read_bytes())
    facts: dict[str, str | int] = {}
    if decoded.encoding != "utf-8":  # UTF-8, the common case, says nothing
        facts = {"encoding": decoded.encoding, "encoding_source": decoded.source}
    if decoded.replaced:
        facts["replaced_bytes"] = decoded.replaced
    return project(decoded.text, name=job.name, options=job.options, facts=facts)


HANDLERS: Mapping[str, Handler] = dict.fromkeys(FORMATS, handle)
