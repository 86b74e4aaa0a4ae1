"""The example worker's entry: which formats it serves and how a job becomes a submission."""

from __future__ import annotations

from collections.abc import Mapping

from workers_common import Handler, Job, TooLarge
from workers_common.text import decode_text

from .projection import project

__all__ = ["FORMATS", "HANDLERS", "handle"]

FORMATS = ("txt", "text")


def handle(job: Job) -> bytes:
    """Projects a text job: UTF-8, or what a byte-order mark says (UTF-16 and UTF-32 as
    Windows editors save them), or the encoding detected (a legacy code page). Bytes that
    do not decode become U+FFFD and are counted; binary data is invalid_input. DOCUMENT
    says how text that is not UTF-8 was decoded (`encoding`, `encoding_source`) and how
    many byte sequences did not decode (`replaced_bytes`).

    Option `max_bytes` refuses larger content as too_large, before reading it.
    """
    limit = job.options.get("max_bytes")
    if isinstance(limit, int) and job.content is not None and job.content.size > limit:
        raise TooLarge(f"{job.content.size} bytes is over max_bytes={limit}")
    decoded = decode_text(job.read_bytes())
    facts: dict[str, str | int] = {}
    if decoded.encoding != "utf-8":  # UTF-8, the common case, says nothing
        facts = {"encoding": decoded.encoding, "encoding_source": decoded.source}
    if decoded.replaced:
        facts["replaced_bytes"] = decoded.replaced
    return project(decoded.text, name=job.name, options=job.options, facts=facts)


HANDLERS: Mapping[str, Handler] = dict.fromkeys(FORMATS, handle)
