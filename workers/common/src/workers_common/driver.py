"""Runs one handler over one job and turns what it produces into wire submissions.

This is the seed's streaming protocol in one function, shared by the consumer (which
submits to the core) and the conformance kit (which collects): a single-shot handler
returns bytes, submitted as they are; a generator handler yields submission dicts, each
given the next `seq` and `partial: True` unless it says `partial: False`, and receives the
node ids the core assigned through `send()`. A generator that ends without a final dict
gets an empty finalizer. A refused submission ends the job for this worker: the generator
is closed and nothing more is sent.

Exceptions raised by the handler propagate unchanged (the caller classifies them);
`submit` signals delivery problems with its own exception type.

A job whose options carry `oversize` was created by a parent worker for content it
judged too large to send (an email attachment over its cap): it fails as permanent
`too_large` before any handler runs, whatever its format, so the child job, not the
parent, carries the failure.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Generator, Mapping
from typing import Any, TypeAlias

from .failures import TooLarge
from .job import Job
from .result import IngestionResultBuilder
from .rpc import Submitted
from .wire import canonical_json

__all__ = ["OVERSIZE_OPTION", "Handler", "HandlerResult", "Outcome", "Submit", "drive"]

OVERSIZE_OPTION = "oversize"
"""Job option set by a parent on a child job it refused to inline: `{"bytes", "limit", "what"}`."""

log = logging.getLogger(__name__)

HandlerResult: TypeAlias = bytes | Generator[Mapping[str, Any], list[str], None]
Handler: TypeAlias = Callable[[Job], HandlerResult]
"""A format handler: `bytes` for one submission, or a generator of submission dicts."""

Submit: TypeAlias = Callable[[bytes], Submitted]
"""Delivers one result_json; the answer says whether it was accepted and the node ids."""


class Outcome(enum.Enum):
    """How a job ended for this worker."""

    FINISHED = "finished"
    """The final submission was accepted."""
    REFUSED = "refused"
    """The core did not accept a submission (fenced, or rejected): the job is not ours now."""
    ABANDONED = "abandoned"
    """The lease was lost (the core stopped extending it); nothing more was submitted."""


def drive(
    handler: Handler,
    job: Job,
    submit: Submit,
    abandoned: Callable[[], bool] = lambda: False,
) -> Outcome:
    """Runs `handler` on `job`, submitting everything it produces through `submit`."""
    _refuse_oversize(job)
    result = handler(job)
    if isinstance(result, bytes | bytearray | memoryview):
        if abandoned():
            return Outcome.ABANDONED
        return _finish(job, submit(bytes(result)))
    if isinstance(result, Generator):
        return _drive_stream(result, job, submit, abandoned)
    raise TypeError(
        f"handler for {job.format!r} returned {type(result).__name__}, "
        "expected bytes or a generator of submission dicts"
    )


def _refuse_oversize(job: Job) -> None:
    marker = job.options.get(OVERSIZE_OPTION)
    if not marker:
        return
    details = marker if isinstance(marker, Mapping) else {}
    what = details.get("what") or f"content of job {job.job_id}"
    raise TooLarge(
        f"{what}: {details.get('bytes', '?')} bytes is over the parent's limit of "
        f"{details.get('limit', '?')} bytes, so it was not sent"
    )


def _drive_stream(
    stream: Generator[Mapping[str, Any], list[str], None],
    job: Job,
    submit: Submit,
    abandoned: Callable[[], bool],
) -> Outcome:
    seq = 0
    node_ids: list[str] | None = None
    try:
        while True:
            try:
                # The first resume must be next() (send(None)); later ones carry node ids.
                item = next(stream) if node_ids is None else stream.send(node_ids)
            except StopIteration:
                break
            final = _is_final(item, seq)
            if abandoned():
                return Outcome.ABANDONED
            submitted = submit(canonical_json({**item, "seq": seq, "partial": not final}))
            if not submitted.accepted:
                return _finish(job, submitted)
            if final:
                return Outcome.FINISHED
            seq += 1
            node_ids = list(submitted.node_ids)
    finally:
        stream.close()
    if abandoned():
        return Outcome.ABANDONED
    # The generator ended without finalizing: close the job with an empty final partial.
    finalizer = IngestionResultBuilder().build(partial=False)
    return _finish(job, submit(canonical_json({**finalizer, "seq": seq})))


def _is_final(item: object, seq: int) -> bool:
    if not isinstance(item, Mapping):
        raise TypeError(
            f"partial {seq}: a generator handler yields dicts, not {type(item).__name__}"
        )
    partial = item.get("partial", True)
    if not isinstance(partial, bool):
        raise TypeError(f"partial {seq}: 'partial' must be a bool, not {partial!r}")
    return not partial


def _finish(job: Job, submitted: Submitted) -> Outcome:
    if submitted.accepted:
        return Outcome.FINISHED
    log.warning("job %s: the core refused the submission (%s)", job.job_id, submitted.reason)
    return Outcome.REFUSED
