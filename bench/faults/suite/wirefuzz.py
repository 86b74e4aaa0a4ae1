"""Part 3 (gRPC level): thousands of malformed and adversarial submissions sent by a fake
worker over the real WorkerService of a real core; every accepted one is read back.

The suite plays the worker itself: it opens PollJobs for `txt` (no pool serves it in
this core), submits one job per case, and answers its lease with the case's bodies.
"""

from __future__ import annotations

import json
import logging
import queue
import random
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc

from workers_common._proto import telha_pb2

from .core import Core, percentile
from .wirecases import Case, cases

log = logging.getLogger("faults.wire")

WORKER_ID = "fault-suite-fuzzer"


class FakeWorker:
    """One PollJobs stream; `next_lease()` is the next job it was handed."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.leases: queue.Queue[telha_pb2.JobPayload] = queue.Queue()
        self.stream = core.worker.PollJobs(
            telha_pb2.PollJobsRequest(worker_id=WORKER_ID, formats=["txt"], max_in_flight=1)
        )
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        try:
            for payload in self.stream:
                self.leases.put(payload)
        except grpc.RpcError:
            pass

    def next_lease(self, timeout: float = 30) -> telha_pb2.JobPayload:
        return self.leases.get(timeout=timeout)

    def close(self) -> None:
        self.stream.cancel()


def _project_back(core: Core, job_id: str) -> dict[str, Any]:
    p = core.ingest.GetProjection(telha_pb2.GetProjectionRequest(job_id=job_id), timeout=60)
    return {
        "canonicalText": p.canonical_text,
        "spans": [(s.start, s.end, s.kind) for s in p.spans],
        "nodes": [
            (list(n.labels), json.loads(n.properties_json or "{}"), list(n.span_refs))
            for n in p.nodes
        ],
        "relationships": sorted(r.type for r in p.relationships),
    }


def _sent(case: Case) -> dict[str, Any]:
    doc = json.loads(case.bodies[-1])
    return {
        "canonicalText": doc.get("canonicalText", ""),
        "spans": [(s["start"], s["end"], s["kind"]) for s in doc.get("spans", [])],
        "nodes": [
            (n["labels"], n.get("properties", {}), n.get("spanRefs", []))
            for n in doc.get("nodes", [])
        ],
        "relationships": sorted(r["type"] for r in doc.get("relationships", [])),
    }


def _diff(a: Any, b: Any, path: str = "") -> str:
    """Where two JSON values first differ (empty when `_same`)."""
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return next((d for k in a if (d := _diff(a[k], b[k], f"{path}.{k}"))), "")
    if isinstance(a, list | tuple) and isinstance(b, list | tuple) and len(a) == len(b):
        return next(
            (
                d
                for i, (x, y) in enumerate(zip(a, b, strict=True))
                if (d := _diff(x, y, f"{path}[{i}]"))
            ),
            "",
        )
    return "" if _same(a, b) else f"{path}: read {str(a)[:60]!r}, sent {str(b)[:60]!r}"


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, with the type of numbers kept (1e19 is not 2**64 + 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return type(a) is type(b) and a == b and str(a) == str(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class Tally:
    def __init__(self) -> None:
        self.cases = 0
        self.by_family: Counter[str] = Counter()
        self.accepted_valid = 0
        self.refused_valid: list[str] = []
        self.accepted_but_changed: list[str] = []
        self.accepted_malformed: list[str] = []
        self.refusal_untyped: list[str] = []
        self.rpc_errors: Counter[str] = Counter()
        self.unanswered = 0
        self.timings: list[tuple[int, float]] = []


def _send_case(core: Core, worker: FakeWorker, case: Case, tally: Tally, n: int) -> None:
    job = core.submit(b"fuzz\n", format="txt", name=f"fuzz-{n}-{case.family}")
    lease = worker.next_lease()
    if lease.job_id != job.id:
        log.warning("leased %s, expected %s", lease.job_id, job.id)
    transport_refused, answers = _deliver(core, lease, case, tally)
    state = core.job(lease.job_id)
    if state.state not in ("succeeded", "dead"):
        # Partials accepted (or the transport refused the message): end the job as a
        # worker would, so the next lease is the next case's.
        core.worker.SubmitIngestionResult(
            telha_pb2.IngestionResult(
                job_id=lease.job_id,
                success=False,
                permanent=True,
                failure_reason="invalid_input: fuzz case over",
                worker_id=WORKER_ID,
                attempt=lease.attempt,
            ),
            timeout=30,
        )
        state = core.job(lease.job_id)
    _judge(core, case, state, tally, f"{case.family}#{n}", transport_refused, answers)


def _deliver(
    core: Core, lease: telha_pb2.JobPayload, case: Case, tally: Tally
) -> tuple[bool, list[tuple[bool, str]]]:
    """Sends the case's bodies until one is refused: whether gRPC itself refused one,
    and the core's answers (accepted, reason)."""
    answers: list[tuple[bool, str]] = []
    for body in case.bodies:
        started = time.perf_counter()
        try:
            resp = core.worker.SubmitIngestionResult(
                telha_pb2.IngestionResult(
                    job_id=lease.job_id,
                    success=True,
                    result_json=body,
                    worker_id=WORKER_ID,
                    attempt=lease.attempt,
                ),
                timeout=120,
            )
        except grpc.RpcError as e:
            tally.rpc_errors[str(e.code())] += 1
            return True, answers
        if len(case.bodies) == 1:
            # Sequences wait for their gaps by design (partial_wait_secs): not a cost.
            tally.timings.append((len(body), time.perf_counter() - started))
        answers.append((resp.accepted, resp.reason))
        if not resp.accepted:
            break
    return False, answers


def _judge(
    core: Core,
    case: Case,
    state: telha_pb2.Job,
    tally: Tally,
    label: str,
    transport: bool,
    answers: list[tuple[bool, str]],
) -> None:
    all_accepted = len(answers) == len(case.bodies) and all(a for a, _ in answers)
    if case.valid and state.state == "succeeded":
        tally.accepted_valid += 1
        read, sent = _project_back(core, state.id), _sent(case)
        diff = _diff(read, sent)
        if diff:
            tally.accepted_but_changed.append(f"{label} {diff}")
        return
    if case.valid:
        reason = state.failures[-1].reason[:160] if state.failures else ""
        tally.refused_valid.append(f"{label}: {reason}")
        return
    if all_accepted:
        if not case.either:
            tally.accepted_malformed.append(label)
        return
    if transport:
        return
    # A refusal says why, and a job that died of it died as `protocol`.
    typed = bool(answers) and bool(answers[-1][1])
    if state.state == "dead":
        typed = typed and any(f.kind == "protocol" for f in state.failures)
    if not typed:
        tally.refusal_untyped.append(f"{label}: {answers[-1:]} {[f.kind for f in state.failures]}")


def _refusal_costs(timings: list[tuple[int, float]]) -> dict[str, Any]:
    buckets: dict[str, list[float]] = defaultdict(list)
    per_mib: list[float] = []
    for size, secs in timings:
        key = (
            "<=1KiB"
            if size <= 1024
            else "<=64KiB"
            if size <= 65536
            else "<=1MiB"
            if size <= 1 << 20
            else "<=16MiB"
            if size <= 16 << 20
            else ">16MiB"
        )
        buckets[key].append(secs * 1000)
        if size >= 1 << 20:
            per_mib.append(secs * 1000 / (size / (1 << 20)))
    out: dict[str, Any] = {
        k: {"n": len(v), "p50_ms": round(percentile(v, 0.5), 2), "max_ms": round(max(v), 2)}
        for k, v in sorted(buckets.items())
    }
    out["max_ms_per_mib_over_1mib"] = round(max(per_mib, default=0.0), 2)
    return out


def run(work: Path, count: int, rng: random.Random, tag: str, *, smoke: bool) -> dict[str, Any]:
    core = Core(work / "core", {}, run_tag=tag, jobs={"max_attempts": 1})
    core.start()
    rss_before = core.rss_mib()
    tally = Tally()
    worker = FakeWorker(core)
    try:
        stream: Iterator[Case] = cases(count, rng, big=1 if smoke else 6)
        for n, case in enumerate(stream):
            tally.cases += 1
            tally.by_family[case.family] += 1
            try:
                _send_case(core, worker, case, tally, n)
            except queue.Empty:
                tally.unanswered += 1
            if not core.alive():
                break
    finally:
        worker.close()
    alive = core.alive()
    rss_after = core.rss_mib() if alive else 0.0
    core.stop()
    panics = core.tail(10**9).count("panicked")
    return {
        "cases": tally.cases,
        "families": dict(tally.by_family),
        "panics": panics,
        "core_died": int(not alive),
        "accepted_valid": tally.accepted_valid,
        "accepted_but_changed": len(tally.accepted_but_changed),
        "accepted_but_changed_examples": tally.accepted_but_changed[:5],
        "accepted_malformed": len(tally.accepted_malformed),
        "accepted_malformed_examples": tally.accepted_malformed[:5],
        "refused_valid": len(tally.refused_valid),
        "refused_valid_examples": tally.refused_valid[:5],
        "refusal_not_protocol": len(tally.refusal_untyped),
        "refusal_not_protocol_examples": tally.refusal_untyped[:5],
        "rpc_errors": dict(tally.rpc_errors),
        "unanswered": tally.unanswered,
        "core_rss_mib_before": round(rss_before, 1),
        "core_rss_mib_after": round(rss_after, 1),
        "submit_ms_by_size": _refusal_costs(tally.timings),
    }
