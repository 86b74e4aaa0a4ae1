"""The failure taxonomy a worker reports over the wire (DESIGN.md §6, worker-raised rows).

A handler raises a typed WorkerFailure subclass; anything else that escapes it is reported
as `transient`. `describe_failure` is the one place that turns an exception into the wire's
`(failure_reason, permanent)`: `"{kind}: {detail}"`, at most 512 bytes, cut on a UTF-8
boundary so the core never receives a broken character.
"""

from __future__ import annotations

import math
from typing import ClassVar, NamedTuple

from ._proto import wire_rules

__all__ = [
    "FAILURE_REASON_MAX_BYTES",
    "FailureReport",
    "FetchFailed",
    "InvalidInput",
    "TooLarge",
    "Unsupported",
    "WorkerFailure",
    "cap_utf8",
    "describe_failure",
]

FAILURE_REASON_MAX_BYTES = wire_rules.MAX_REASON_BYTES
"""The core stores at most this many bytes of a failure reason (proto/telha/v1/rules.json)."""


class WorkerFailure(Exception):
    """A failure the worker reports on purpose; retryable unless a subclass says otherwise.

    `retry_after_s`: the least time the next attempt should wait (an HTTP `Retry-After`, a
    quota's reset), sent as `IngestionResult.retry_after_ms`; the core's backoff applies
    on top, and the core caps the hint (`[jobs] retry_after_max_ms`). Meaningless on a
    permanent failure, so never sent with one.
    """

    kind: ClassVar[str] = "transient"
    permanent: ClassVar[bool] = False

    def __init__(self, *args: object, retry_after_s: float | None = None) -> None:
        super().__init__(*args)
        self.retry_after_s = retry_after_s


class InvalidInput(WorkerFailure):
    """The bytes are not a valid instance of the format."""

    kind = "invalid_input"
    permanent = True


class Unsupported(WorkerFailure):
    """Valid input this worker cannot handle (encrypted, scanned without the OCR extra, …)."""

    kind = "unsupported"
    permanent = True


class TooLarge(WorkerFailure):
    """Over a configured size limit."""

    kind = "too_large"
    permanent = True


class FetchFailed(WorkerFailure):
    """A network fetch failed; worth another attempt later."""

    kind = "fetch_failed"
    permanent = False


class FailureReport(NamedTuple):
    """What goes into IngestionResult for a failed attempt."""

    reason: str
    permanent: bool
    retry_after_ms: int = 0


def cap_utf8(text: str, max_bytes: int) -> str:
    """Returns the longest prefix of `text` whose UTF-8 encoding fits in `max_bytes`."""
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    # Dropping an incomplete trailing sequence is exactly what errors="ignore" does to
    # the cut bytes; anything before the cut is complete, so nothing else is lost.
    return encoded[:max_bytes].decode("utf-8", errors="ignore")


def describe_failure(error: BaseException) -> FailureReport:
    """Classifies an exception that escaped a handler into the wire's reason and permanence."""
    retry_after_ms = 0
    if isinstance(error, WorkerFailure):
        kind, permanent = error.kind, error.permanent
        detail = str(error) or type(error).__name__
        retry_after_ms = 0 if permanent else _wait_ms(error.retry_after_s)
    else:
        kind, permanent = WorkerFailure.kind, WorkerFailure.permanent
        # The class name says what went wrong when the message alone does not ("KeyError: 'x'").
        message = str(error)
        detail = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return FailureReport(
        cap_utf8(f"{kind}: {detail}", FAILURE_REASON_MAX_BYTES), permanent, retry_after_ms
    )


_MAX_WAIT_MS = (1 << 64) - 1


def _wait_ms(seconds: float | None) -> int:
    """A retry-after hint in whole ms for the wire's uint64 (rounded up: it is a floor);
    0 for none, a negative or a NaN hint."""
    if seconds is None or not seconds > 0:
        return 0
    if seconds == float("inf"):
        return _MAX_WAIT_MS
    return min(_MAX_WAIT_MS, math.ceil(seconds * 1000))
