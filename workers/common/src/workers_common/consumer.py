"""WorkerConsumer: the poll / dispatch / heartbeat loop every worker package runs unmodified.

`run()` reads the TELHA_* environment, holds one PollJobs stream to the core (reconnecting
with capped backoff when the core is down or restarts), runs the handler for each job's
format one job at a time, reports typed failures, keeps leases alive from a heartbeat
thread and returns the process's exit code:

    raise SystemExit(WorkerConsumer({"txt": handle}).run())

Exit codes come from the generated WorkerExit table (exits.py): OK after SIGTERM/SIGINT
(the current job is finished first), CONFIG when the environment is wrong or the core
refuses the token, OOM when a MemoryError reaches the top.

With `TELHA_MAX_IN_FLIGHT=N` > 1 (the pool's `max_in_flight`) the worker prefetches: the
stream may hold up to N leased jobs, read by its own thread, each lease registered for
heartbeats the moment the job arrives (so it cannot run down in a buffer however long the
job before it takes), and a single-shot job's result is sent without waiting for the
core's answer (gRPC's own thread finishes the job when it comes) while the next job
already runs: the core's validate-and-commit overlaps the next jobs'
work instead of adding to it. At most N - 1 results are on their way at once (the job
running holds the other lease). Jobs already received when the worker is asked to stop
are run before it exits.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import mmap
import os
import queue
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from types import FrameType
from typing import TypeVar

import grpc

from ._proto import telha_pb2
from .backoff import Backoff
from .config import ConfigError, WorkerConfig
from .driver import Handler, Outcome, SingleShot, start
from .exits import EXIT_CONFIG, EXIT_OK, EXIT_OOM
from .failures import Unsupported, WorkerFailure, describe_failure
from .heartbeat import Heartbeater, InFlight, Lease
from .job import Job
from .rpc import CoreClient, JobStream, SubmitError, Submitted, status_of

__all__ = ["WorkerConsumer"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

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


_PREFETCH_SWITCH_INTERVAL = 0.0002
"""Seconds a thread may hold the GIL while another waits, for a prefetching worker whose
jobs are short."""
_LONG_JOB_SECS = 0.002
"""A prefetching worker whose jobs run longer than this on average keeps the interpreter's
own switch interval (5 ms): its handler holds the GIL for most of a job, and at 0.2 ms each
wake-up of the reader or a delivery thread takes it away dozens of times per job."""
_JOB_TIME_WEIGHT = 0.2
"""The weight of the latest job in the running mean of job times."""


class _GilPacing:
    """The GIL switch interval of a prefetching worker, following how long its jobs run.

    The reader and delivery threads block in gRPC while the job runs in its handler. When
    jobs are short, a wait for the GIL costs each of those threads more than the forced
    switches cost the handler, so the interval is short; when they are long (a code file:
    4-5 ms of tree-sitter and Python), the switches are what costs, so it is the default.
    bench/code: 66.9 against 70.2 s for the stdlib archive (workers' CPU 81 against 84 s).
    """

    def __init__(self, short: float, long: float) -> None:
        self.short = short
        self.long = long
        self._mean = 0.0
        self.current = short
        sys.setswitchinterval(short)

    def job_ran(self, seconds: float) -> None:
        self._mean += (seconds - self._mean) * _JOB_TIME_WEIGHT
        wanted = self.long if self._mean > _LONG_JOB_SECS else self.short
        if wanted != self.current:
            self.current = wanted
            sys.setswitchinterval(wanted)


_GC_YOUNG_THRESHOLD = 20_000
"""Allocations of container objects between two collections of the youngest generation
(CPython's default: 700). A job allocates hundreds of thousands of short-lived objects
(tree nodes, dicts of properties): at 700 the collector runs every few hundred of them and
walks the survivors each time. With the imports frozen (below) and this threshold, the code
worker's handler took 5-12 % less CPU per file over the CPython stdlib (800 files, six
alternating runs, in process)."""


def _tune_gc() -> Callable[[], None]:
    """Moves everything allocated so far (the imported modules: docling's or polars'
    are large) out of the collector's sight, so that no collection walks it again, and
    collects the young generation less often. Garbage cycles are still collected.
    Returns what puts the thresholds back (a consumer run inside a test process)."""
    gc.freeze()
    young, older, oldest = gc.get_threshold()
    gc.set_threshold(max(young, _GC_YOUNG_THRESHOLD), older, oldest)
    return lambda: gc.set_threshold(young, older, oldest)


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
        self._prefetching = False
        # Prefetching: the results on their way (oldest first), each done when answered.
        self._tails: deque[Future[None]] = deque()
        self._running = _RunningFile(None)
        self._pacing: _GilPacing | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def stop(self) -> None:
        """Asks run() to return: at once when idle, after the current job otherwise."""
        with self._lock:
            self._stopping.set()
            # Cancelling the stream while a job runs would tell the core the worker is gone
            # and hand the job to someone else; so the idle stream only. A prefetching
            # stream is read by its own thread: cancelling it ends the reading, and the
            # jobs already received are run before run() returns.
            stream = None if self._busy and not self._prefetching else self._stream
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
        restore_gc = _tune_gc()
        interval = sys.getswitchinterval()
        if config.max_in_flight > 1:
            # The reader and delivery threads block in gRPC, the job in its handler: at
            # the default 5 ms switch interval every blocking call of one costs the other
            # a wait for the GIL (bench/python_dispatch: 944-1,357 against 1,290-1,545
            # jobs/s at max_in_flight 8 with a 0.2 ms one), unless the jobs are long.
            self._pacing = _GilPacing(_PREFETCH_SWITCH_INTERVAL, interval)
        try:
            return self._serve(config)
        except MemoryError:
            # Best effort: there may be no memory left even for this line, and the exit
            # code matters more than the message.
            with contextlib.suppress(Exception):
                print("telha worker: out of memory (MemoryError)", file=sys.stderr, flush=True)
            return EXIT_OOM
        finally:
            sys.setswitchinterval(interval)
            restore_gc()
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
        self._running = _RunningFile(config.running_file)
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
            self._running.close()

    def _poll_once(self, client: CoreClient, config: WorkerConfig) -> int | None:
        """Holds one PollJobs stream until it ends; returns an exit code if run() should."""
        prefetch = config.max_in_flight > 1
        stream = client.poll_jobs(config.formats, max_in_flight=config.max_in_flight)
        opened = time.monotonic()
        with self._lock:
            self._stream = stream
            self._prefetching = prefetch
            if self._stopping.is_set():
                stream.cancel()
        arrivals = _Arrivals(stream, self._in_flight) if prefetch else None
        try:
            jobs = iter(arrivals) if arrivals is not None else self._arrivals(stream)
            for payload, lease in jobs:
                self._backoff.reset()
                self._process(client, config, payload, lease, defer=prefetch)
                # Prefetching, the stream was cancelled by stop(): it ends once the jobs
                # received before are run.
                if self._stopping.is_set() and not prefetch:
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
            if arrivals is not None:
                arrivals.close()
            self._settle_tails(0)
        # A stream that lived a while was a working connection: start the backoff over.
        if time.monotonic() - opened > self._backoff.maximum:
            self._backoff.reset()
        return None

    def _arrivals(self, stream: JobStream) -> Iterator[tuple[telha_pb2.JobPayload, Lease]]:
        """A stream that holds one job at a time: its lease is registered as it starts."""
        for payload in stream:
            yield (
                payload,
                self._in_flight.add(payload.job_id, payload.attempt, payload.lease_deadline),
            )

    def _process(
        self,
        client: CoreClient,
        config: WorkerConfig,
        payload: telha_pb2.JobPayload,
        lease: Lease,
        *,
        defer: bool,
    ) -> None:
        with self._lock:
            self._busy = True
        try:
            started = time.monotonic()
            self._running.mark(payload.job_id, payload.attempt)
            deliver = self._start_job(client, config, payload, lease)
            if self._pacing is not None:
                self._pacing.job_ran(time.monotonic() - started)
            if deliver is None:
                self._in_flight.remove(lease)
                return
            if not defer:
                self._finish_job(client, config, payload, lease, deliver, started)
                return
            # max_in_flight - 1 results on their way at most (the job running holds the
            # other lease): the oldest must be in before one more goes.
            self._settle_tails(config.max_in_flight - 2)
            if not isinstance(deliver, SingleShot) or lease.lost.is_set():
                # A stream (delivered already) or a lost lease: nothing is left to send.
                self._finish_job(client, config, payload, lease, deliver, started)
                return
            self._tails.append(self._send(client, config, payload, lease, deliver, started))
        finally:
            with self._lock:
                self._busy = False

    def _send(
        self,
        client: CoreClient,
        config: WorkerConfig,
        payload: telha_pb2.JobPayload,
        lease: Lease,
        deliver: SingleShot,
        started: float,
    ) -> Future[None]:
        """Starts a single-shot result on its way without a thread of ours waiting for the
        core's answer (a hand-off to a delivery thread per job was a tenth of a tiny job's
        CPU); the answer finishes the job where it arrives. The future is done then."""
        tail: Future[None] = Future()

        def answered(answer: Callable[[], Submitted]) -> None:
            try:
                self._finish_job(
                    client, config, payload, lease, lambda: deliver.finish(answer()), started
                )
            except BaseException as err:  # a MemoryError: settled, it ends the process
                tail.set_exception(err)
            else:
                tail.set_result(None)

        client.submit_async(_success(config, payload, deliver.data), answered)
        return tail

    def _settle_tails(self, limit: int) -> None:
        """Waits until at most `limit` results are on their way, oldest first (re-raising
        a MemoryError a delivery met: it ends the process as any other)."""
        while len(self._tails) > limit:
            self._tails.popleft().result()

    def _start_job(
        self, client: CoreClient, config: WorkerConfig, payload: telha_pb2.JobPayload, lease: Lease
    ) -> Callable[[], Outcome] | None:
        """Runs the job's handler; returns its delivery, or None when the job is over here
        (failed and reported, or dropped)."""
        job_id, attempt = payload.job_id, payload.attempt

        def submit(result_json: bytes) -> Submitted:
            return client.submit(_success(config, payload, result_json))

        def begin() -> Callable[[], Outcome]:
            handler = self._handlers.get(payload.kind)
            if handler is None:
                raise Unsupported(f"this worker has no handler for format {payload.kind!r}")
            job = Job.from_payload(payload, lambda: client.read_blob(job_id, attempt))
            return start(handler, job, submit, lease.lost.is_set)

        return self._classified(client, config, payload, lease, begin)

    def _finish_job(
        self,
        client: CoreClient,
        config: WorkerConfig,
        payload: telha_pb2.JobPayload,
        lease: Lease,
        deliver: Callable[[], Outcome],
        started: float,
    ) -> None:
        """Delivers a job's result and lets go of its lease."""
        try:
            outcome = self._classified(client, config, payload, lease, deliver)
        finally:
            self._in_flight.remove(lease)
        if outcome is None:
            return
        log.info(
            "job %s (%s): %s in %.3fs",
            payload.job_id,
            payload.kind,
            outcome.value,
            time.monotonic() - started,
        )
        if outcome is Outcome.ABANDONED:
            log.warning("job %s: lease lost, result not submitted", payload.job_id)

    def _classified(
        self,
        client: CoreClient,
        config: WorkerConfig,
        payload: telha_pb2.JobPayload,
        lease: Lease,
        step: Callable[[], _T],
    ) -> _T | None:
        """Runs one step of a job (its handler, or its result's delivery) under the one
        ladder that classifies how a job ended: None when the job is over here (a delivery
        problem drops it; any other Exception is its failure, reported). MemoryError and
        other BaseExceptions are not caught: they end the process (run() maps MemoryError)."""
        try:
            return step()
        except SubmitError as err:
            log.warning(
                "job %s: could not deliver a submission, dropping the job: %s", payload.job_id, err
            )
        except MemoryError:
            raise
        except Exception as err:
            self._report_failure(client, config, payload, lease, err)
        return None

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
                    retry_after_ms=report.retry_after_ms,
                )
            )
        except SubmitError as submit_err:
            log.warning("job %s: could not deliver the failure: %s", payload.job_id, submit_err)
            return
        if not answer.accepted:
            log.warning(
                "job %s: the core refused the failure report (%s)", payload.job_id, answer.reason
            )


def _success(
    config: WorkerConfig, payload: telha_pb2.JobPayload, result_json: bytes
) -> telha_pb2.IngestionResult:
    """A submission of the job under its lease, from this worker."""
    return telha_pb2.IngestionResult(
        job_id=payload.job_id,
        success=True,
        result_json=result_json,
        worker_id=config.worker_id,
        attempt=payload.attempt,
    )


class _RunningFile:
    """The job this worker runs, written where the core's pool reads it if the process
    dies (`TELHA_RUNNING_FILE`): with jobs held beside the one running, a crash is then
    charged to that job alone, and the held ones go back uncharged. The file is mapped
    shared, so marking a job is a store into memory the kernel already shares with any
    reader (a SIGKILL loses nothing): no system call, so the job's thread keeps the GIL
    (a pwrite per job handed it to the stream and delivery threads and waited up to a
    switch interval to get it back). A file that cannot be set up only costs that
    precision (every held job is charged)."""

    _WIDTH = 48  # fixed, so a shorter line never leaves the tail of a longer one

    def __init__(self, path: str | None) -> None:
        self._map: mmap.mmap | None = None
        if path is None:
            return
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        except OSError as err:
            log.warning("cannot open the running-job file %s: %s", path, err)
            return
        try:
            # Blank (no job yet: the pool reads nothing from it), then mapped.
            os.write(fd, b" " * (self._WIDTH - 1) + b"\n")
            self._map = mmap.mmap(fd, self._WIDTH)
        except (OSError, ValueError) as err:
            log.warning("cannot map the running-job file %s: %s", path, err)
        finally:
            os.close(fd)

    def mark(self, job_id: str, attempt: int) -> None:
        if self._map is None:
            return
        data = f"{job_id} {attempt}".encode().ljust(self._WIDTH - 1) + b"\n"
        if len(data) != self._WIDTH:  # not a core job id: better no job than a wrong one
            data = b" " * (self._WIDTH - 1) + b"\n"
        self._map[:] = data

    def close(self) -> None:
        if self._map is not None:
            with contextlib.suppress(OSError, ValueError, BufferError):
                self._map.close()
            self._map = None


class _Arrivals:
    """A prefetching stream, read by its own thread: each job's lease is registered (so
    heartbeats keep it alive) the moment the job arrives, not when it starts. Iterating
    yields the jobs in order, then raises what ended the stream (an RpcError) or stops."""

    _END = object()

    def __init__(self, stream: JobStream, in_flight: InFlight) -> None:
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._in_flight = in_flight
        self._thread = threading.Thread(
            target=self._read, args=(stream,), name="telha-jobs", daemon=True
        )
        self._thread.start()

    def _read(self, stream: JobStream) -> None:
        try:
            for payload in stream:
                lease = self._in_flight.add(payload.job_id, payload.attempt, payload.lease_deadline)
                self._queue.put((payload, lease))
        except BaseException as err:  # handed to the main thread, which decides
            self._queue.put(err)
        else:
            self._queue.put(self._END)

    def __iter__(self) -> Iterator[tuple[telha_pb2.JobPayload, Lease]]:
        while True:
            item = self._queue.get()
            if item is self._END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]

    def close(self) -> None:
        """After the stream was cancelled: jobs received but never started (the loop left
        early) are not kept alive; their leases run out and the core retries them."""
        self._thread.join(timeout=10)
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, tuple):
                payload, lease = item
                self._in_flight.remove(lease)
                log.warning("job %s: received but not started; left to its lease", payload.job_id)
