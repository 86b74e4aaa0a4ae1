"""WorkerConsumer against a scripted WorkerService over real gRPC: the worker side's protocol.

Threads serve the quick protocol checks; real processes prove signals and exit codes.
The same behaviours against the real core are in test_e2e.py.
"""

from __future__ import annotations

import gc
import signal
import time
from collections.abc import Callable
from pathlib import Path

from example_worker import handle as handle_txt
from workers_common import EXIT_CONFIG, EXIT_OK, EXIT_OOM
from workers_common.conformance import check_submissions, run_handler

from running import ConsumerThread, WorkerProcess
from scripted_core import TOKEN, ScriptedCore, wait_for
from worker_app import HANDLERS, STREAM_PARAGRAPHS

StartConsumer = Callable[..., ConsumerThread]
StartWorker = Callable[..., WorkerProcess]


def test_single_shot_job_is_submitted_with_lease_and_token(
    core: ScriptedCore, start_consumer: StartConsumer, tmp_path: Path
) -> None:
    source = tmp_path / "doc.txt"
    source.write_bytes(b"One.\r\n\r\nTwo.\n")
    done = core.enqueue("j1", "txt", content=source.read_bytes(), path=str(source), attempt=3)
    start_consumer({"txt": handle_txt})
    assert done.wait(10)
    [sub] = core.submissions_for("j1")
    assert (sub.request.success, sub.request.worker_id, sub.request.attempt) == (
        True,
        "w-thread",
        3,
    )
    assert (
        sub.request.result_json == run_handler(handle_txt, source, format="txt", name="doc.txt")[0]
    )
    assert core.record.polls[0].formats == ["txt"]
    assert core.record.polls[0].max_in_flight == 1
    assert core.record.blob_reads == []  # the blob was local
    assert set(core.record.auth) == {f"Bearer {TOKEN}"}


def test_streaming_job_sends_node_ids_back(
    core: ScriptedCore, start_consumer: StartConsumer
) -> None:
    done = core.enqueue("j1", "stream", content=b"")
    start_consumer({"stream": HANDLERS["stream"]})
    assert done.wait(10)
    subs = core.submissions_for("j1")
    bodies = [s.body for s in subs]
    assert [(b["seq"], b["partial"]) for b in bodies] == [
        (0, True),
        (1, True),
        (2, True),
        (3, False),
    ]
    # Every paragraph's edge points at the id the core gave the DOCUMENT in partial 0.
    assert {b["relationships"][0]["toId"] for b in bodies[1:]} == {"j1/0/0"}
    check_submissions([s.request.result_json for s in subs])
    assert [b["canonicalText"] for b in bodies[1:]] == [p + "\n" for p in STREAM_PARAGRAPHS]


def test_open_ended_stream_is_finalized(core: ScriptedCore, start_consumer: StartConsumer) -> None:
    done = core.enqueue("j1", "stream", content=b"", options={"open_end": True})
    start_consumer({"stream": HANDLERS["stream"]})
    assert done.wait(10)
    bodies = [s.body for s in core.submissions_for("j1")]
    assert [(b["seq"], b["partial"]) for b in bodies][-2:] == [(3, True), (4, False)]
    assert bodies[-1]["nodes"] == []
    assert bodies[-1]["canonicalText"] == ""


def test_typed_and_unexpected_failures(core: ScriptedCore, start_consumer: StartConsumer) -> None:
    cases = {
        "invalid_input": ("invalid_input: boom", True),
        "fetch_failed": ("fetch_failed: boom", False),
        "unexpected": ("transient: ValueError: boom", False),
    }
    events = [core.enqueue(kind, "fail", content=b"", options={"kind": kind}) for kind in cases]
    start_consumer({"fail": HANDLERS["fail"]})
    for event in events:
        assert event.wait(10)
    for kind, (reason, permanent) in cases.items():
        [sub] = core.submissions_for(kind)
        assert not sub.request.success
        assert (sub.request.failure_reason, sub.request.permanent) == (reason, permanent)
        assert sub.request.result_json == b""


def test_unknown_format_is_unsupported(core: ScriptedCore, start_consumer: StartConsumer) -> None:
    """A job routed to a worker without its handler fails permanently, not forever."""
    core.strict_routing = False
    done = core.enqueue("j1", "csv", content=b"a,b")
    start_consumer({"txt": handle_txt})
    assert done.wait(10)
    [sub] = core.submissions_for("j1")
    assert not sub.request.success
    assert sub.request.permanent
    assert sub.request.failure_reason.startswith("unsupported: ")


def test_refused_partial_stops_the_job_and_the_worker_goes_on(
    core: ScriptedCore, start_consumer: StartConsumer
) -> None:
    core.accept = lambda req: not (req.job_id == "j1" and b'"seq":1' in req.result_json)
    first = core.enqueue("j1", "stream", content=b"")
    second = core.enqueue("j2", "txt", content=b"next job")
    start_consumer({"stream": HANDLERS["stream"], "txt": handle_txt})
    assert first.wait(10)
    assert second.wait(10)
    assert len(core.submissions_for("j1")) == 2  # seq 0 accepted, seq 1 refused, no more
    assert core.submissions_for("j2")[0].request.success


def test_read_blob_when_the_blob_is_not_local(
    core: ScriptedCore, start_consumer: StartConsumer
) -> None:
    done = core.enqueue("j1", "txt", content="Remote\n\nbytes é".encode(), path="/nonexistent/blob")
    start_consumer({"txt": handle_txt})
    assert done.wait(10)
    [read] = core.record.blob_reads
    assert (read.job_id, read.attempt, read.worker_id) == ("j1", 1, "w-thread")
    assert core.submissions_for("j1")[0].body["canonicalText"] == "Remote\n\nbytes é"


def test_heartbeats_name_the_leases_in_flight(
    core: ScriptedCore, start_consumer: StartConsumer
) -> None:
    done = core.enqueue("j1", "slow", content=b"x", options={"sleep_secs": 0.5}, attempt=4)
    start_consumer({"slow": HANDLERS["slow"]}, heartbeat_interval=0.05)
    assert done.wait(10)
    assert len(core.record.heartbeats) >= 3
    beat = core.record.heartbeats[0]
    assert (beat.worker_id, list(beat.job_ids)) == ("w-thread", ["j1"])
    assert [(lease.job_id, lease.attempt) for lease in beat.leases] == [("j1", 4)]
    assert core.submissions_for("j1")[0].request.success


def test_a_lease_not_extended_is_abandoned(
    core: ScriptedCore, start_consumer: StartConsumer
) -> None:
    core.extend = lambda job_id: job_id != "j1"
    lost = core.enqueue("j1", "slow", content=b"x", options={"sleep_secs": 0.4})
    after = core.enqueue("j2", "txt", content=b"y")
    start_consumer({"slow": HANDLERS["slow"], "txt": handle_txt}, heartbeat_interval=0.05)
    assert lost.wait(10)
    assert after.wait(10)
    wait_for(lambda: bool(core.submissions_for("j2")), what="the next job")
    time.sleep(0.1)
    assert core.submissions_for("j1") == []  # its result was never submitted


def test_reconnects_after_the_core_restarts(
    core: ScriptedCore, start_consumer: StartConsumer
) -> None:
    first = core.enqueue("j1", "txt", content=b"before")
    running = start_consumer({"txt": handle_txt})
    assert first.wait(10)
    port = core.port
    core.stop()
    time.sleep(0.3)  # the worker sees the stream fail and starts backing off
    restarted = ScriptedCore(port)
    try:
        done = restarted.enqueue("j2", "txt", content=b"after")
        assert done.wait(10), "the worker did not reconnect"
        assert restarted.submissions_for("j2")[0].request.success
        assert running.thread.is_alive()
    finally:
        running.stop()
        restarted.stop()


def test_the_collector_is_tuned_while_serving_and_put_back(
    core: ScriptedCore, start_consumer: StartConsumer
) -> None:
    before = gc.get_threshold()
    running = start_consumer({"txt": handle_txt})
    wait_for(lambda: bool(core.record.polls), what="the consumer to poll")
    assert gc.get_threshold()[0] >= 20_000
    assert gc.get_freeze_count() > 0  # the imports are out of the collector's sight
    assert running.stop() == EXIT_OK
    assert gc.get_threshold() == before


def test_stop_while_idle_returns_ok(core: ScriptedCore, start_consumer: StartConsumer) -> None:
    running = start_consumer({"txt": handle_txt})
    wait_for(lambda: bool(core.record.polls), what="the first poll")
    assert running.stop() == EXIT_OK


# -- real processes: signals and exit codes ------------------------------------------------


def test_sigterm_finishes_the_current_job_then_exits_ok(
    core: ScriptedCore, start_worker: StartWorker
) -> None:
    done = core.enqueue("j1", "slow", content=b"slow job", options={"sleep_secs": 1.0})
    worker = start_worker(core.addr, "slow,txt")
    wait_for(lambda: bool(core.record.polls), what="the worker to poll")
    time.sleep(0.3)  # the job is running now
    worker.process.send_signal(signal.SIGTERM)
    assert worker.wait(20) == EXIT_OK, worker.log()
    assert done.is_set()
    assert core.submissions_for("j1")[0].request.success


def test_running_file_names_the_job_running_and_survives_sigkill(
    core: ScriptedCore, start_worker: StartWorker, tmp_path: Path
) -> None:
    """A prefetching worker marks the job it runs where the pool reads it after a crash:
    blank before any job, then that job's id and lease, still there after a SIGKILL."""
    running = tmp_path / "running"
    core.enqueue("7", "slow", content=b"slow job", options={"sleep_secs": 30.0})
    worker = start_worker(
        core.addr,
        "slow",
        env={"TELHA_MAX_IN_FLIGHT": "4", "TELHA_RUNNING_FILE": str(running)},
    )
    wait_for(lambda: running.exists() and running.read_bytes().split() != [], what="the mark")
    data = running.read_bytes()
    assert len(data) == 48, data
    assert data.endswith(b"\n"), data
    assert data.split() == [b"7", b"1"], data
    worker.process.kill()
    worker.process.wait(20)
    assert running.read_bytes().split() == [b"7", b"1"]


def test_sigterm_while_idle_exits_ok_at_once(core: ScriptedCore, start_worker: StartWorker) -> None:
    worker = start_worker(core.addr, "txt")
    wait_for(lambda: bool(core.record.polls), what="the worker to poll")
    started = time.monotonic()
    assert worker.terminate() == EXIT_OK, worker.log()
    assert time.monotonic() - started < 5


def test_refused_token_exits_config(core: ScriptedCore, start_worker: StartWorker) -> None:
    worker = start_worker(core.addr, "txt", token="wrong")
    assert worker.wait(20) == EXIT_CONFIG
    assert "UNAUTHENTICATED" in worker.log()


def test_memory_error_exits_oom(core: ScriptedCore, start_worker: StartWorker) -> None:
    core.enqueue("j1", "oom", content=b"")
    worker = start_worker(core.addr, "oom")
    assert worker.wait(20) == EXIT_OOM
    assert "MemoryError" in worker.log()
    assert core.submissions_for("j1") == []  # the supervisor reports it, as oom


def test_unix_socket_address(tmp_path: Path, start_worker: StartWorker) -> None:
    """TELHA_CORE_ADDR=unix:/path works (the channel sets a plain :authority)."""
    from concurrent import futures

    import grpc

    from workers_common._proto import telha_pb2_grpc

    scripted = ScriptedCore()
    socket_path = tmp_path / "core.sock"
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    telha_pb2_grpc.add_WorkerServiceServicer_to_server(scripted, server)
    server.add_insecure_port(f"unix:{socket_path}")
    server.start()
    try:
        done = scripted.enqueue("j1", "txt", content=b"over a socket")
        worker = start_worker(f"unix:{socket_path}", "txt")
        assert done.wait(10), worker.log()
        assert worker.terminate() == EXIT_OK
    finally:
        server.stop(None).wait()
        scripted.stop()
