"""WorkerConsumer: the poll / dispatch / heartbeat loop every worker package runs unmodified.

`run()` reads the TELHA_* environment, holds one PollJobs stream to the core (reconnecting
with capped backoff when the core is down or restarts), runs the handler for each job's
format one job at a time, reports typed failures, keeps leases alive from a heartbeat
thread and returns the process's exit code:

    raise SystemExit(WorkerConsumer({"txt": handle}).run())

Exit codes come from the generated WorkerExit table (exits.py): OK after SIGTERM/SIGINT
(the current job is finished first), CONFIG when the environment is wrong or the core
refuses the token, OOM when a MemoryError reaches the top.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from types import FrameType

import grpc

from ._proto import telha_pb2
from .backoff import Backoff
from .config import ConfigError, WorkerConfig
from .driver import Handler, Outcome, drive
from .exits import EXIT_CONFIG, EXIT_OK, EXIT_OOM
from .failures import Unsupported, WorkerFailure, describe_failure
from .heartbeat import Heartbeater, InFlight, Lease
from .job import Job
from .rpc import CoreClient, JobStream, SubmitError, Submitted, status_of

__all__ = ["WorkerConsumer"]

log = logging.getLogger(__name__)

# The core answered, and the answer will not change by asking again: a wrong token, a
# worker id or format list it refuses, or a core that does not speak this protocol.
_FATAL_CODES = frozenset(
    {
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.UNIMPLEMENTED,
    }
)


class WorkerConsumer:
    """Serves the jobs of the given formats until asked to stop."""

    def __init__(
        self,
        handlers: Mapping[str, Handler],
        *,
        config: WorkerConfig | None = None,
        heartbeat_interval: float | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        """`handlers` maps each format to its handler; `config` defaults to the TELHA_*
        environment, read by run(); `heartbeat_interval` defaults to HEARTBEAT_INTERVAL_SECS,
        or a third of the shortest lease held when that is sooner (given explicitly, it is
        kept as given)."""
        self._handlers = dict(handlers)
        self._config = config
        self._heartbeat_interval = heartbeat_interval
        self._backoff = backoff or Backoff()
        self._in_flight = InFlight()
        # Guards the three fields below: stop() runs on another thread (or a signal's).
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._busy = False
        self._stream: JobStream | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def stop(self) -> None:
        """Asks run() to return: at once when idle, after the current job otherwise."""
        with self._lock:
            self._stopping.set()
            # Cancelling the stream while a job runs would tell the core the worker is gone
            # and hand the job to someone else; so the idle stream only.
            stream = None if self._busy else self._stream
        if stream is not None:
            stream.cancel()

    def run(self) -> int:
        """Serves until stopped; returns the process exit code (WorkerExit)."""
        logging.basicConfig(
            level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
        )
        try:
            config = self._config or WorkerConfig.from_env(os.environ)
            self._check_handlers(config)
        except ConfigError as err:
            print(f"telha worker: configuration error: {err}", file=sys.stderr, flush=True)
            return EXIT_CONFIG
        restore = self._install_signal_handlers()
        try:
            return self._serve(config)
        except MemoryError:
            # Best effort: there may be no memory left even for this line, and the exit
            # code matters more than the message.
            with contextlib.suppress(Exception):
                print("telha worker: out of memory (MemoryError)", file=sys.stderr, flush=True)
            return EXIT_OOM
        finally:
            restore()

    def _check_handlers(self, config: WorkerConfig) -> None:
        missing = [fmt for fmt in config.formats if fmt not in self._handlers]
        if missing:
            known = ", ".join(sorted(self._handlers)) or "none"
            raise ConfigError(
                f"TELHA_FORMATS names {', '.join(missing)}, which this worker has no handler "
                f"for (it handles: {known})"
            )

    def _install_signal_handlers(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None  # signals reach the main thread only; tests call stop()

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            log.info(
                "received %s: finishing the current job, then exiting", signal.Signals(signum).name
            )
            # stop() may cancel a gRPC call, which takes locks the interrupted main thread
            # could hold: do it from another thread, not from inside the signal handler.
            threading.Thread(target=self.stop, name="telha-stop", daemon=True).start()

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}

        def restore() -> None:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

        return restore

    # -- the loop --------------------------------------------------------------------------

    def _serve(self, config: WorkerConfig) -> int:
        client = CoreClient(config)
        heartbeater = Heartbeater(self._in_flight, client.heartbeat, self._heartbeat_interval)
        heartbeater.start()
        log.info(
            "worker %s polling %s for %s",
            config.worker_id,
            config.core_addr,
            ", ".join(config.formats),
        )
        try:
            while not self._stopping.is_set():
                code = self._poll_once(client, config)
                if code is not None:
                    return code
                if not self._stopping.is_set():
                    delay = self._backoff.next_delay()
                    log.info("reconnecting to the core in %.2fs", delay)
                    self._stopping.wait(delay)
            return EXIT_OK
        finally:
            heartbeater.stop()
            client.close()

    def _poll_once(self, client: CoreClient, config: WorkerConfig) -> int | None:
        """Holds one PollJobs stream until it ends; returns an exit code if run() should."""
        stream = client.poll_jobs(config.formats, max_in_flight=1)
        opened = time.monotonic()
        with self._lock:
            self._stream = stream
            if self._stopping.is_set():
                stream.cancel()
        try:
            for payload in stream:
                self._backoff.reset()
                self._process(client, config, payload)
                if self._stopping.is_set():
                    return EXIT_OK
            log.warning("the core closed the job stream")
        except grpc.RpcError as err:
            if self._stopping.is_set():
                return EXIT_OK
            code, details = status_of(err)
            if code in _FATAL_CODES:
                print(
                    f"telha worker: the core refused this worker ({code}: {details})",
                    file=sys.stderr,
                    flush=True,
                )
                return EXIT_CONFIG
            log.warning("job stream failed: %s: %s", code, details)
        finally:
            with self._lock:
                self._stream = None
            stream.cancel()
        # A stream that lived a while was a working connection: start the backoff over.
        if time.monotonic() - opened > self._backoff.maximum:
            self._backoff.reset()
        return None

    def _process(
        self, client: CoreClient, config: WorkerConfig, payload: telha_pb2.JobPayload
    ) -> None:
        with self._lock:
            self._busy = True
        lease = self._in_flight.add(payload.job_id, payload.attempt, payload.lease_deadline)
        try:
            self._run_job(client, config, payload, lease)
        finally:
            self._in_flight.remove(lease)
            with self._lock:
                self._busy = False

    def _run_job(
        self, client: CoreClient, config: WorkerConfig, payload: telha_pb2.JobPayload, lease: Lease
    ) -> None:
        job_id, attempt = payload.job_id, payload.attempt

        def submit(result_json: bytes) -> Submitted:
            return client.submit(
                telha_pb2.IngestionResult(
                    job_id=job_id,
                    success=True,
                    result_json=result_json,
                    worker_id=config.worker_id,
                    attempt=attempt,
                )
            )

        started = time.monotonic()
        # The one ladder that classifies how a job ended. MemoryError and other
        # BaseExceptions are not caught: they end the process (run() maps MemoryError).
        try:
            handler = self._handlers.get(payload.kind)
            if handler is None:
                raise Unsupported(f"this worker has no handler for format {payload.kind!r}")
            job = Job.from_payload(payload, lambda: client.read_blob(job_id, attempt))
            outcome = drive(handler, job, submit, lease.lost.is_set)
        except SubmitError as err:
            log.warning("job %s: could not deliver a submission, dropping the job: %s", job_id, err)
            return
        except MemoryError:
            raise
        except Exception as err:
            self._report_failure(client, config, payload, lease, err)
            return
        log.info(
            "job %s (%s): %s in %.3fs",
            job_id,
            payload.kind,
            outcome.value,
            time.monotonic() - started,
        )
        if outcome is Outcome.ABANDONED:
            log.warning("job %s: lease lost, result not submitted", job_id)

    def _report_failure(
        self,
        client: CoreClient,
        config: WorkerConfig,
        payload: telha_pb2.JobPayload,
        lease: Lease,
        err: Exception,
    ) -> None:
        report = describe_failure(err)
        # A typed failure is the handler's verdict; anything else is a bug worth its traceback
        # (the supervisor keeps the stderr tail as evidence).
        trace = None if isinstance(err, WorkerFailure) else err
        log.warning("job %s failed: %s", payload.job_id, report.reason, exc_info=trace)
        if lease.lost.is_set():
            log.warning("job %s: lease lost, failure not submitted", payload.job_id)
            return
        try:
            answer = client.submit(
                telha_pb2.IngestionResult(
                    job_id=payload.job_id,
                    success=False,
                    failure_reason=report.reason,
                    permanent=report.permanent,
                    worker_id=config.worker_id,
                    attempt=payload.attempt,
                )
            )
        except SubmitError as submit_err:
            log.warning("job %s: could not deliver the failure: %s", payload.job_id, submit_err)
            return
        if not answer.accepted:
            log.warning(
                "job %s: the core refused the failure report (%s)", payload.job_id, answer.reason
            )
