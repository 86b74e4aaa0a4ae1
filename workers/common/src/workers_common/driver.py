"""Runs one handler over one job and turns what it produces into wire submissions.

This is the seed's streaming protocol in one function, shared by the consumer (which
submits to the core) and the conformance kit (which collects): a single-shot handler
returns bytes, submitted as they are; a generator handler yields submission dicts, each
given the next `seq` and `partial: True` unless it says `partial: False`, and receives the
node ids the core assigned through `send()`. A generator that ends without a final dict
gets an empty finalizer. A refused submission ends the job for this worker: the generator
is closed and nothing more is sent.

Streams are pipelined: partials are delivered from background threads while the
generator already prepares the next one, so the worker's work and the core's overlap,
and the core parses one partial while it applies the one before. Two partials at most
are on their way (the core takes them in `seq` order: a partial that overtakes its
predecessor waits for it), so at most three are held at once. What the generator
receives is a `Sequence[str]` that waits for the core's answer when it is read: a
generator that needs a partial's ids (to link later partials to its nodes) reads them
and waits; one that does not never waits.

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
from collections import deque
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeAlias, overload

from .failures import TooLarge
from .job import Job
from .result import IngestionResultBuilder
from .rpc import Submitted
from .wire import canonical_json

__all__ = [
    "OVERSIZE_OPTION",
    "Handler",
    "HandlerResult",
    "Outcome",
    "SingleShot",
    "Submit",
    "drive",
    "start",
]

OVERSIZE_OPTION = "oversize"
"""Job option set by a parent on a child job it refused to inline: `{"bytes", "limit", "what"}`."""

log = logging.getLogger(__name__)

HandlerResult: TypeAlias = bytes | Generator[Mapping[str, Any], Sequence[str], None]
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
    return start(handler, job, submit, abandoned)()


def start(
    handler: Handler,
    job: Job,
    submit: Submit,
    abandoned: Callable[[], bool] = lambda: False,
) -> Callable[[], Outcome]:
    """`drive` in two steps: runs `handler` now and returns what is left to do. For a
    single-shot result that is its submission, which the caller may run on another
    thread while the next job starts; a stream is driven to its end here (its partials
    are pipelined already), and what is left only returns its outcome."""
    _refuse_oversize(job)
    result = handler(job)
    if isinstance(result, bytes | bytearray | memoryview):
        return SingleShot(job, bytes(result), submit, abandoned)
    if isinstance(result, Generator):
        outcome = _drive_stream(result, job, submit, abandoned)
        return lambda: outcome
    raise TypeError(
        f"handler for {job.format!r} returned {type(result).__name__}, "
        "expected bytes or a generator of submission dicts"
    )


class SingleShot:
    """What is left of a single-shot job: its one submission. Called, it delivers it
    through `submit` (unless the lease was lost); a caller that delivers `data` itself
    (without a thread waiting for the answer) hands the answer to `finish`."""

    __slots__ = ("_abandoned", "_submit", "data", "job")

    def __init__(
        self, job: Job, data: bytes, submit: Submit, abandoned: Callable[[], bool]
    ) -> None:
        self.job = job
        self.data = data
        self._submit = submit
        self._abandoned = abandoned

    def __call__(self) -> Outcome:
        if self._abandoned():
            return Outcome.ABANDONED
        return self.finish(self._submit(self.data))

    def finish(self, submitted: Submitted) -> Outcome:
        return _finish(self.job, submitted)


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


class _Refused(Exception):
    """Raised where a generator reads the node ids of a submission the core refused."""

    def __init__(self, submitted: Submitted) -> None:
        super().__init__(submitted.reason)
        self.submitted = submitted


class _NodeIds(Sequence[str]):
    """The node ids of a submission that may still be on its way: reading them waits
    for the core's answer (and raises the delivery's error, or _Refused)."""

    def __init__(self, answer: Future[Submitted]) -> None:
        self._answer = answer

    def _ids(self) -> list[str]:
        submitted = self._answer.result()
        if not submitted.accepted:
            raise _Refused(submitted)
        return submitted.node_ids

    def __len__(self) -> int:
        return len(self._ids())

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._ids()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __hash__(self) -> int:
        return hash(tuple(self._ids()))

    def __repr__(self) -> str:
        return repr(self._ids()) if self._answer.done() else "<node ids pending>"


_IN_FLIGHT = 2
"""Partials of a stream on their way at once. The core accepts seq k only after seq k-1
(a later one waits for it), and treats seq k arriving before seq k-2 was accepted as a
gap: the next partial is sent once the one two before it was answered."""


class _Deliveries:
    """A stream's submissions on their way, delivered in order by background threads."""

    def __init__(self, deliver: ThreadPoolExecutor, submit: Submit) -> None:
        self._deliver = deliver
        self._submit = submit
        self._in_flight: deque[Future[Submitted]] = deque()

    def send(self, payload: bytes) -> Future[Submitted]:
        delivery = self._deliver.submit(self._submit, payload)
        self._in_flight.append(delivery)
        return delivery

    def settle(self, limit: int) -> Submitted | None:
        """Waits until at most `limit` are on their way; returns the first refusal."""
        while len(self._in_flight) > limit:
            done = self._in_flight.popleft().result()
            if not done.accepted:
                return done
        return None


def _drive_stream(
    stream: Generator[Mapping[str, Any], Sequence[str], None],
    job: Job,
    submit: Submit,
    abandoned: Callable[[], bool],
) -> Outcome:
    seq = 0
    node_ids: _NodeIds | None = None
    # Leaving the block waits for deliveries still in flight (also when the handler
    # raised), so the job's failure is reported after what was already sent.
    with ThreadPoolExecutor(max_workers=_IN_FLIGHT, thread_name_prefix="telha-submit") as pool:
        deliveries = _Deliveries(pool, submit)
        try:
            while True:
                try:
                    # The first resume must be next() (send(None)); later ones carry node ids.
                    item = next(stream) if node_ids is None else stream.send(node_ids)
                except StopIteration:
                    break
                except _Refused as refused:
                    return _finish(job, refused.submitted)
                final = _is_final(item, seq)
                payload = canonical_json({**item, "seq": seq, "partial": not final})
                if (refusal := deliveries.settle(_IN_FLIGHT - 1)) is not None:
                    return _finish(job, refusal)
                if abandoned():
                    return Outcome.ABANDONED
                delivery = deliveries.send(payload)
                if final:
                    return _finish(job, deliveries.settle(0) or delivery.result())
                seq += 1
                node_ids = _NodeIds(delivery)
        finally:
            stream.close()
    if (refusal := deliveries.settle(0)) is not None:
        return _finish(job, refusal)
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
