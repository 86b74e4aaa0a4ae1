"""End to end: the real `telha serve`, real worker processes, the CLI as an operator runs it.

The core binary is TELHA_BIN or target/debug/telha under the repo root. Until it exists
these tests skip (TELHA_E2E_REQUIRED=1 makes a missing binary a failure instead). Workers
join the way a worker on another host would: started by the test with the TELHA_*
environment pointing at the core's address and token.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from example_worker import handle as handle_txt
from workers_common import EXIT_OK
from workers_common.conformance import run_handler, submission_hash

from running import WORKER_APP, WorkerProcess
from serve_core import FINISHED, MISSING, TELHA_BIN, ServeCore
from worker_app import STREAM_PARAGRAPHS

if MISSING and os.environ.get("TELHA_E2E_REQUIRED") == "1":
    raise RuntimeError(f"TELHA_E2E_REQUIRED=1 but the core binary {TELHA_BIN} does not exist")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        MISSING,
        reason=f"core binary {TELHA_BIN} not built yet (cargo build, or set TELHA_BIN)",
    ),
]

MAX_ATTEMPTS = 3
LEASE_SECS = 2.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Core(ServeCore):
    """One `telha serve` with short leases (2 s), restartable; jobs are `txt`."""

    def __init__(self, root: Path, *, port: int = 0) -> None:
        jobs = {"max_attempts": MAX_ATTEMPTS, "lease_secs": LEASE_SECS}
        super().__init__(root, listen=f"127.0.0.1:{port}", jobs=jobs)

    def ingest(self, path: Path, *, options: dict[str, Any] | None = None) -> dict[str, Any]:
        job: dict[str, Any] = self.submit(path, options=options, fmt="txt")
        return job

    def wait_job(
        self,
        job_id: str,
        until: Callable[[dict[str, Any]], bool] = lambda job: job["state"] in FINISHED,
        timeout: float = 40,
        worker: WorkerProcess | None = None,
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            if until(job):
                return job
            if time.monotonic() > deadline:
                worker_log = worker.log() if worker else ""
                raise AssertionError(
                    f"job {job_id} still {json.dumps(job, indent=1)}\n"
                    f"--- serve log ---\n{self.log()}\n--- worker log ---\n{worker_log}"
                )
            time.sleep(0.1)


@pytest.fixture
def core(tmp_path: Path) -> Iterator[Core]:
    running = Core(tmp_path / "core")
    running.start()
    yield running
    running.stop()


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(core: Core, formats: str = "txt", **kwargs: Any) -> WorkerProcess:
        worker = WorkerProcess(core.addr, core.token, formats, tmp_path, **kwargs)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.kill()


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_single_shot_example_worker(
    core: Core, workers: Callable[..., WorkerProcess], tmp_path: Path
) -> None:
    """The example worker's submission reaches the core byte for byte, deterministically."""
    source = write(tmp_path, "doc.txt", b"Alpha owes Beta.\r\n\r\nSecond paragraph.\n\nThird.\n")
    worker = workers(core, "txt,text", module="example_worker", worker_id="example-1")
    job = core.ingest(source)
    done = core.wait_job(job["id"], worker=worker)
    assert (done["state"], done["failures"], done["attempts"]) == ("succeeded", [], 0)
    assert done["node_count"] == 4  # one DOCUMENT, three PARAGRAPHs
    [expected] = run_handler(handle_txt, source, format="txt", name=job["name"])
    assert done["submission_hash"] == submission_hash([expected])
    again = core.wait_job(core.ingest(source)["id"], worker=worker)
    assert again["submission_hash"] == done["submission_hash"]
    assert worker.terminate() == EXIT_OK


@pytest.mark.parametrize("copies", [50, 5000], ids=["inline", "blob-file"])
def test_content_streamed_with_read_blob(
    core: Core, workers: Callable[..., WorkerProcess], tmp_path: Path, copies: int
) -> None:
    """A worker that cannot see the core's blob file (or the inline bytes of a small
    content) gets the same bytes over ReadBlob."""
    source = write(tmp_path, "r.txt", "Über den Wolken\n\nmuss die Freiheit\n".encode() * copies)
    worker = workers(core)
    job = core.ingest(source, options={"mode": "remote"})
    done = core.wait_job(job["id"], worker=worker)
    assert (done["state"], done["failures"]) == ("succeeded", []), worker.log()
    options = {"mode": "remote"}
    [expected] = run_handler(handle_txt, source, format="txt", name=job["name"], options=options)
    assert done["submission_hash"] == submission_hash([expected])


@pytest.mark.parametrize("open_end", [False, True], ids=["explicit-final", "consumer-finalizes"])
def test_streaming_with_node_ids_and_cross_partial_edges(
    core: Core, workers: Callable[..., WorkerProcess], tmp_path: Path, open_end: bool
) -> None:
    """Partials carry seq/partial; the DOCUMENT's core-assigned id comes back via send() and
    later partials' PART_OF edges point at it by id."""
    record = tmp_path / "record"
    record.mkdir()
    worker = workers(core, env={"TELHA_TEST_RECORD_DIR": str(record)})
    job = core.ingest(
        write(tmp_path, "s.txt", b"ignored"), options={"mode": "stream", "open_end": open_end}
    )
    done = core.wait_job(job["id"], worker=worker)
    assert (done["state"], done["failures"]) == ("succeeded", []), worker.log()
    assert done["node_count"] == 1 + len(STREAM_PARAGRAPHS)
    received = json.loads((record / f"{job['id']}.json").read_text())
    # Partial 0 had one node (the DOCUMENT); each partial after it had one PARAGRAPH.
    assert [len(ids) for ids in received] == [1] * len(received)
    assert len(received) == (len(STREAM_PARAGRAPHS) + 1 if open_end else len(STREAM_PARAGRAPHS))
    all_ids = [ids[0] for ids in received]
    assert all(all_ids)
    assert len(set(all_ids)) == len(all_ids)


@pytest.mark.parametrize(
    ("kind", "reason", "permanent"),
    [
        ("invalid_input", "invalid_input: boom", True),
        ("unsupported", "unsupported: boom", True),
        ("too_large", "too_large: boom", True),
        ("fetch_failed", "fetch_failed: boom", False),
        ("transient", "transient: boom", False),
        ("unexpected", "transient: ValueError: boom", False),
    ],
)
def test_typed_failures_arrive_as_their_kind(
    core: Core,
    workers: Callable[..., WorkerProcess],
    tmp_path: Path,
    kind: str,
    reason: str,
    permanent: bool,
) -> None:
    """Permanent kinds go dead at once; retryable ones are retried up to max_attempts."""
    worker = workers(core)
    job = core.ingest(write(tmp_path, "f.txt", b"x"), options={"mode": "fail", "kind": kind})
    done = core.wait_job(job["id"], worker=worker)
    assert done["state"] == "dead"
    expected_failures = 1 if permanent else MAX_ATTEMPTS
    assert len(done["failures"]) == expected_failures, done
    wire_kind = "transient" if kind == "unexpected" else kind
    for failure in done["failures"]:
        assert (failure["kind"], failure["permanent"]) == (wire_kind, permanent)
        assert failure["reason"] == reason


def test_heartbeats_keep_a_job_alive_past_its_lease(
    core: Core, workers: Callable[..., WorkerProcess], tmp_path: Path
) -> None:
    """A job running 2.5 leases long succeeds on its first lease when heartbeats run."""
    worker = workers(core, env={"TELHA_TEST_HEARTBEAT_SECS": "0.3"})
    options = {"mode": "slow", "sleep_secs": LEASE_SECS * 2.5}
    job = core.ingest(write(tmp_path, "slow.txt", b"slow"), options=options)
    done = core.wait_job(job["id"], worker=worker)
    assert (done["state"], done["failures"], done["attempts"]) == ("succeeded", [], 0), worker.log()


def test_the_default_heartbeat_follows_a_lease_shorter_than_the_seeds_interval(
    core: Core, workers: Callable[..., WorkerProcess], tmp_path: Path
) -> None:
    """No interval configured (the seed's 60 s) against a 2 s lease: the harness beats at a
    third of the lease the core granted, and a job 2.5 leases long keeps its first lease."""
    worker = workers(core)
    options = {"mode": "slow", "sleep_secs": LEASE_SECS * 2.5}
    job = core.ingest(write(tmp_path, "slow.txt", b"slow"), options=options)
    done = core.wait_job(job["id"], worker=worker)
    assert (done["state"], done["failures"], done["attempts"]) == ("succeeded", [], 0), worker.log()


def test_without_heartbeats_the_lease_expires_and_the_late_result_is_refused(
    core: Core, workers: Callable[..., WorkerProcess], tmp_path: Path
) -> None:
    """The control for the test above: same job, heartbeats too rare to matter."""
    worker = workers(core, env={"TELHA_TEST_HEARTBEAT_SECS": "60"})
    options = {"mode": "slow", "sleep_secs": LEASE_SECS * 1.75}
    job = core.ingest(write(tmp_path, "slow.txt", b"slow"), options=options)
    expired = core.wait_job(job["id"], until=lambda j: bool(j["failures"]), worker=worker)
    assert expired["failures"][0]["kind"] == "lease_expired"
    deadline = time.monotonic() + 20
    while "refused" not in worker.log():
        assert time.monotonic() < deadline, worker.log()
        time.sleep(0.1)


def test_sigterm_finishes_the_current_job_then_exits_ok(
    core: Core, workers: Callable[..., WorkerProcess], tmp_path: Path
) -> None:
    """SIGTERM mid-job: the job still succeeds on its first lease and the worker exits 0."""
    worker = workers(core)
    job = core.ingest(
        write(tmp_path, "t.txt", b"term"), options={"mode": "slow", "sleep_secs": 1.5}
    )
    core.wait_job(job["id"], until=lambda j: j["state"] == "leased", worker=worker)
    worker.process.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=20) == EXIT_OK, worker.log()
    done = core.job(job["id"])
    assert (done["state"], done["failures"], done["attempts"]) == ("succeeded", [], 0)


PREFETCH = {"TELHA_MAX_IN_FLIGHT": "2"}


@pytest.mark.parametrize("depth", ["2", "8"])
def test_a_prefetching_worker_returns_the_same_results(
    core: Core, workers: Callable[..., WorkerProcess], tmp_path: Path, depth: str
) -> None:
    """With jobs held beside the one running and results delivered behind (up to depth - 1
    at once), 30 jobs on one worker all succeed on their first lease with the submissions
    a lone run gives."""
    env = {"TELHA_MAX_IN_FLIGHT": depth}
    worker = workers(core, "txt,text", module="example_worker", env=env)
    sources = [
        write(tmp_path, f"p{i}.txt", f"Paragraph {i}.\n\nAnother, {i * i}.\n".encode())
        for i in range(30)
    ]
    jobs = [core.ingest(source) for source in sources]
    for source, job in zip(sources, jobs, strict=True):
        done = core.wait_job(job["id"], worker=worker)
        assert (done["state"], done["failures"], done["attempts"]) == ("succeeded", [], 0)
        [expected] = run_handler(handle_txt, source, format="txt", name=job["name"])
        assert done["submission_hash"] == submission_hash([expected])
    assert worker.terminate() == EXIT_OK


def test_a_prefetched_jobs_lease_is_kept_alive_behind_a_slow_job(
    core: Core, workers: Callable[..., WorkerProcess], tmp_path: Path
) -> None:
    """One worker holds a quick job while a slow one runs 2.5 leases long: the held job's
    lease is heartbeated from the moment it arrives, so neither job loses a lease."""
    worker = workers(core, env=PREFETCH)
    slow = core.ingest(
        write(tmp_path, "slow.txt", b"slow"),
        options={"mode": "slow", "sleep_secs": LEASE_SECS * 2.5},
    )
    core.wait_job(slow["id"], until=lambda j: j["state"] == "leased", worker=worker)
    held = core.ingest(write(tmp_path, "quick.txt", b"quick"))
    # Delivered to the busy worker (it asked for two), while the slow job still runs.
    leased = core.wait_job(held["id"], until=lambda j: j["state"] != "queued", worker=worker)
    assert leased["state"] == "leased", leased
    assert core.job(slow["id"])["state"] == "leased"
    for job in (slow, held):
        done = core.wait_job(job["id"], worker=worker)
        assert (done["state"], done["failures"], done["attempts"]) == ("succeeded", [], 0), (
            worker.log()
        )


def test_a_deeper_prefetch_holds_that_many_jobs_behind_a_slow_one(
    core: Core, workers: Callable[..., WorkerProcess], tmp_path: Path
) -> None:
    """TELHA_MAX_IN_FLIGHT=4: while a slow job runs, the worker holds three more (leased to
    it, heartbeated), and all four succeed on their first lease."""
    worker = workers(core, env={"TELHA_MAX_IN_FLIGHT": "4"})
    slow = core.ingest(
        write(tmp_path, "slow.txt", b"slow"), options={"mode": "slow", "sleep_secs": 3}
    )
    core.wait_job(slow["id"], until=lambda j: j["state"] == "leased", worker=worker)
    quick = [core.ingest(write(tmp_path, f"q{i}.txt", b"quick")) for i in range(3)]
    for job in quick:
        leased = core.wait_job(job["id"], until=lambda j: j["state"] != "queued", worker=worker)
        assert leased["state"] == "leased", leased
    assert core.job(slow["id"])["state"] == "leased"  # all four held at once
    for job in (slow, *quick):
        done = core.wait_job(job["id"], worker=worker)
        assert (done["state"], done["failures"], done["attempts"]) == ("succeeded", [], 0), (
            worker.log()
        )


def test_a_crash_is_charged_to_the_running_job_not_to_the_ones_held_beside_it(
    tmp_path: Path,
) -> None:
    """A pool worker at max_in_flight 4 holds three quick jobs while the job it runs
    crashes the process: the pool reads the job it was running (TELHA_RUNNING_FILE) and
    charges the crash to that one alone; the held jobs go back uncharged and succeed on
    the respawned worker with no failure recorded."""
    pool = (
        '[pools.text]\nformats = ["txt"]\nworkers = 1\nmax_in_flight = 4\n'
        f'command = ["{sys.executable}", "{WORKER_APP}"]\njob_timeout_secs = 60\n'
    )
    core = ServeCore(tmp_path / "core", jobs={"max_attempts": 2, "lease_secs": 30}, extra_toml=pool)
    core.start()
    try:
        crash = core.submit(
            write(tmp_path, "crash.txt", b"crash"),
            options={"mode": "crash", "sleep_secs": 2},
            fmt="txt",
        )
        core.wait(lambda: core.job(crash["id"])["state"] == "leased", "the crash job leased")
        quick = [core.submit(write(tmp_path, f"q{i}.txt", b"quick"), fmt="txt") for i in range(3)]
        core.wait(
            lambda: all(core.job(j["id"])["state"] == "leased" for j in quick),
            "the quick jobs held beside it",
        )
        for job in quick:
            done = core.finished(job["id"])
            assert (done["state"], done["failures"], done["attempts"]) == ("succeeded", [], 0)
        dead = core.finished(crash["id"])
        assert dead["state"] == "dead", dead
        assert [f["kind"] for f in dead["failures"]] == ["crash", "crash"], dead["failures"]
    finally:
        core.stop()


def test_sigterm_runs_the_held_job_too_then_exits_ok(
    core: Core, workers: Callable[..., WorkerProcess], tmp_path: Path
) -> None:
    """SIGTERM while a prefetching worker runs one job and holds another: both succeed on
    their first lease, and the worker exits 0 with nothing left leased."""
    worker = workers(core, env=PREFETCH)
    slow = core.ingest(
        write(tmp_path, "t.txt", b"term"), options={"mode": "slow", "sleep_secs": 1.5}
    )
    core.wait_job(slow["id"], until=lambda j: j["state"] == "leased", worker=worker)
    held = core.ingest(write(tmp_path, "h.txt", b"held"))
    core.wait_job(held["id"], until=lambda j: j["state"] == "leased", worker=worker)
    worker.process.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=20) == EXIT_OK, worker.log()
    for job in (slow, held):
        done = core.job(job["id"])
        assert (done["state"], done["failures"], done["attempts"]) == ("succeeded", [], 0)


@pytest.mark.timeout(120)
def test_worker_reconnects_after_the_core_restarts(
    tmp_path: Path, workers: Callable[..., WorkerProcess]
) -> None:
    """The core crashes and comes back on the same address: the idle worker reconnects and
    serves new jobs, and a job that was in flight is finished after the restart."""
    core = Core(tmp_path / "core", port=free_port())
    core.start()
    try:
        worker = workers(core)
        first = core.wait_job(core.ingest(write(tmp_path, "a.txt", b"before"))["id"], worker=worker)
        assert first["state"] == "succeeded"

        core.kill()
        time.sleep(0.5)  # the worker notices and backs off
        core.start()
        second = core.wait_job(core.ingest(write(tmp_path, "b.txt", b"after"))["id"], worker=worker)
        assert second["state"] == "succeeded", worker.log()

        slow = core.ingest(
            write(tmp_path, "c.txt", b"in flight"), options={"mode": "slow", "sleep_secs": 1.5}
        )
        core.wait_job(slow["id"], until=lambda j: j["state"] == "leased", worker=worker)
        core.kill()
        core.start()
        done = core.wait_job(slow["id"], worker=worker, timeout=60)
        assert done["state"] == "succeeded", worker.log()
        assert worker.process.poll() is None  # the worker rode it out
        assert worker.terminate() == EXIT_OK
    finally:
        core.stop()
