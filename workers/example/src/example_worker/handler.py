"""The example worker's entry: which formats it serves and how a job becomes a submission."""

from __future__ import annotations

from collections.abc import Mapping

from workers_common import Handler, Job, TooLarge

from .projection import project

__all__ = ["FORMATS", "HANDLERS", "handle"]

FORMATS = ("txt", "text")


def handle(job: Job) -> bytes:
    """Projects a UTF-8 text job (a leading BOM is dropped; bad bytes are invalid_input).

    Option `max_bytes` refuses larger content as too_large, before reading it.
    """
    limit = job.options.get("max_bytes")
    if isinstance(limit, int) and job.content is not None and job.content.size > limit:
        raise TooLarge(f"{job.content.size} bytes is over max_bytes={limit}")
    return project(job.read_text("utf-8-sig"), name=job.name, options=job.options)


HANDLERS: Mapping[str, Handler] = dict.fromkeys(FORMATS, handle)
