"""CoreClient: the worker's typed view of WorkerService, and the one place that speaks gRPC.

It opens the channel (TCP or Unix socket), attaches `authorization: Bearer <token>` to every
call, puts a deadline on every unary call (PollJobs is a long poll and has none), and
retries a submission a few times when the core is briefly unreachable: the core treats a
re-sent `seq` as idempotent, so a retry can never apply a submission twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol

import grpc

from ._proto import telha_pb2, telha_pb2_grpc
from .config import WorkerConfig

__all__ = ["CoreClient", "JobStream", "SubmitError", "Submitted", "status_of"]

log = logging.getLogger(__name__)

# Codes after which the same submission may well go through: the connection dropped or
# the core was momentarily overloaded. Anything else is an answer, not a hiccup.
_RETRYABLE = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    }
)


class JobStream(Protocol):
    """The PollJobs call: an iterator of jobs that can be cancelled from another thread."""

    def __iter__(self) -> Iterator[telha_pb2.JobPayload]: ...
    def __next__(self) -> telha_pb2.JobPayload: ...
    def cancel(self) -> bool: ...


class Submitted(NamedTuple):
    """The core's answer to one submission."""

    accepted: bool
    node_ids: list[str]
    reason: str


class SubmitError(Exception):
    """A submission could not be delivered (as opposed to being refused by the core)."""


class CoreClient:
    """A channel to the core plus the four WorkerService calls, typed."""

    def __init__(
        self,
        config: WorkerConfig,
        *,
        rpc_timeout_secs: float = 30.0,
        submit_attempts: int = 4,
        retry_delay_secs: float = 0.25,
    ) -> None:
        self._config = config
        self._timeout = rpc_timeout_secs
        self._submit_attempts = submit_attempts
        self._retry_delay = retry_delay_secs
        self._metadata = (("authorization", f"Bearer {config.token}"),)
        options: list[tuple[str, int | str]] = [
            # A worker on another host must notice a core that vanished without closing
            # the connection (host down, cable cut); otherwise its PollJobs waits forever.
            ("grpc.keepalive_time_ms", 60_000),
            ("grpc.keepalive_timeout_ms", 20_000),
            # Reconnect pacing is ours (the consumer's backoff), not the channel's.
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 2_000),
            ("grpc.max_receive_message_length", 64 * 1024 * 1024),
            ("grpc.max_send_message_length", 256 * 1024 * 1024),
        ]
        if config.is_unix:
            # tonic resets streams whose :authority is the socket path (NOTES.md).
            options.append(("grpc.default_authority", "localhost"))
        if config.ca_pem is not None:
            # A worker on another host: TLS, the core's certificate checked against TELHA_CA.
            credentials = grpc.ssl_channel_credentials(root_certificates=config.ca_pem)
            self._channel = grpc.secure_channel(config.core_addr, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(config.core_addr, options=options)
        # The generated stub is untyped; mypy sees it as Any, the methods below add types.
        self._stub = telha_pb2_grpc.WorkerServiceStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def poll_jobs(self, formats: Sequence[str], max_in_flight: int) -> JobStream:
        request = telha_pb2.PollJobsRequest(
            worker_id=self._config.worker_id, formats=list(formats), max_in_flight=max_in_flight
        )
        stream: JobStream = self._stub.PollJobs(request, metadata=self._metadata)
        return stream

    def submit(self, result: telha_pb2.IngestionResult) -> Submitted:
        """Delivers one submission, retrying connection failures; raises SubmitError."""
        return self._submit_from(result, 1)

    def submit_async(
        self, result: telha_pb2.IngestionResult, done: Callable[[Callable[[], Submitted]], None]
    ) -> None:
        """Starts delivering one submission and returns at once; `done` is called once with
        what gives the answer (or raises SubmitError), as `submit` would: on gRPC's own
        thread when the core answers (no thread of ours waits in between), or on a thread
        of its own when the delivery must be retried (the retries wait)."""
        try:
            call = self._stub.SubmitIngestionResult.future(
                result, metadata=self._metadata, timeout=self._timeout
            )
        except Exception as err:  # not even started (a closed channel): a failed delivery
            failure = SubmitError(f"SubmitIngestionResult could not start: {err}")
            failure.__cause__ = err
            done(_raiser(failure))
            return

        def answered(call: Any) -> None:
            try:
                answer = self._answer(call, result)
            except BaseException as err:  # never lost on gRPC's thread: `done` gets it
                answer = _raiser(err)
            if answer is not None:
                done(answer)
            else:
                threading.Thread(
                    target=lambda: done(lambda: self._submit_from(result, 2, self._retry_delay)),
                    name="telha-resubmit",
                    daemon=True,
                ).start()

        call.add_done_callback(answered)

    def _answer(
        self, call: Any, result: telha_pb2.IngestionResult
    ) -> Callable[[], Submitted] | None:
        """What gives a finished call's answer, or None when it is to be retried."""
        try:
            response: telha_pb2.SubmitResponse = call.result()
        except grpc.RpcError as err:
            failure = self._given_up(err, 1)
            if failure is not None:
                return _raiser(failure)
            log.warning(
                "job %s: submission attempt 1 failed (%s), retrying",
                result.job_id,
                _describe(err),
            )
            return None
        submitted = _submitted(response)
        return lambda: submitted

    def _given_up(self, err: grpc.RpcError, attempt: int) -> SubmitError | None:
        """What ends a submission whose attempt `attempt` failed with `err`: a refusal, or
        the last attempt's failure; None when it is tried again."""
        code, _ = status_of(err)
        if code in _RETRYABLE and attempt < self._submit_attempts:
            return None
        failure = SubmitError(f"SubmitIngestionResult failed: {_describe(err)}")
        failure.__cause__ = err
        return failure

    def _submit_from(
        self, result: telha_pb2.IngestionResult, first: int, delay: float = 0.0
    ) -> Submitted:
        """Attempts `first` to the last of a submission, after `delay` seconds."""
        if delay:
            time.sleep(delay)
        for attempt in range(first, self._submit_attempts + 1):
            try:
                response: telha_pb2.SubmitResponse = self._stub.SubmitIngestionResult(
                    result, metadata=self._metadata, timeout=self._timeout
                )
            except grpc.RpcError as err:
                failure = self._given_up(err, attempt)
                if failure is not None:
                    raise failure from err
                log.warning(
                    "job %s: submission attempt %d failed (%s), retrying",
                    result.job_id,
                    attempt,
                    _describe(err),
                )
                time.sleep(self._retry_delay * 2 ** (attempt - 1))
            else:
                return _submitted(response)
        raise AssertionError("unreachable: the loop returns or raises")

    def heartbeat(self, leases: Sequence[tuple[str, int]]) -> set[str]:
        """Asks the core to extend these (job_id, attempt) leases; returns the extended ids."""
        request = telha_pb2.HeartbeatRequest(
            worker_id=self._config.worker_id,
            job_ids=[job_id for job_id, _ in leases],
            leases=[telha_pb2.LeaseRef(job_id=j, attempt=a) for j, a in leases],
        )
        response: telha_pb2.HeartbeatResponse = self._stub.Heartbeat(
            request, metadata=self._metadata, timeout=self._timeout
        )
        return set(response.job_ids)

    def read_blob(self, job_id: str, attempt: int) -> Iterator[bytes]:
        """Streams a job's content from the core (for workers that cannot see its disk)."""
        request = telha_pb2.ReadBlobRequest(
            job_id=job_id, attempt=attempt, worker_id=self._config.worker_id
        )
        # No overall deadline: a large blob over a slow link may take long; a dead core
        # still ends the stream through keepalive.
        chunks: Iterable[telha_pb2.BlobChunk] = self._stub.ReadBlob(
            request, metadata=self._metadata
        )
        for chunk in chunks:
            yield chunk.data


def status_of(err: grpc.RpcError) -> tuple[grpc.StatusCode | None, str]:
    """The status code and details of a failed call.

    What grpcio raises from a call is both an RpcError and a grpc.Call; the type stubs
    cannot say so, hence the Any."""
    call: Any = err
    code = call.code() if callable(getattr(call, "code", None)) else None
    details = call.details() if callable(getattr(call, "details", None)) else None
    return code, details or str(err)


def _submitted(response: telha_pb2.SubmitResponse) -> Submitted:
    return Submitted(response.accepted, list(response.node_ids), response.reason)


def _raiser(err: BaseException) -> Callable[[], Submitted]:
    def raise_it() -> Submitted:
        raise err

    return raise_it


def _describe(err: grpc.RpcError) -> str:
    code, details = status_of(err)
    return f"{code.name if code else 'unknown'}: {details}"
