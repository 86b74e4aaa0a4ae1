"""Part 2: a worker fault storm. Jobs of format `faulty` whose worker dies or fails in
every way the taxonomy names; each failure's kind is checked against the cause, each
job's path (retries, dead letter, success after a crash) against the policy."""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .core import FAULT_WORKER, VENV_PYTHON, Core, Pool, percentile

log = logging.getLogger("faults.storm")

MAX_ATTEMPTS = 2
JOB_TIMEOUT_SECS = 3
CPU_SECS = 2
FORMATS = ("faulty", "faulty-cpu")


@dataclass(frozen=True)
class Case:
    name: str
    options: dict[str, Any]
    kind: str
    """The failure kind every failed attempt must have ("" for none)."""
    permanent: bool = False
    then_ok: bool = False
    weight: int = 10
    format: str = "faulty"


CASES = [
    Case("ok", {"mode": "ok"}, "", weight=20),
    Case("memory", {"mode": "memory"}, "oom"),
    Case("native_oom", {"mode": "native_oom"}, "oom"),
    Case("exit3", {"mode": "exit", "code": 3}, "crash"),
    Case("exit70", {"mode": "exit", "code": 70}, "crash"),
    Case("segv", {"mode": "segv"}, "crash"),
    Case("abort", {"mode": "abort"}, "crash"),
    Case("sleep", {"mode": "sleep", "secs": 60}, "timeout", weight=2),
    Case("spin", {"mode": "spin", "secs": 600}, "cpu_limit", weight=2, format="faulty-cpu"),
    *(
        Case(f"malformed_{v}", {"mode": "malformed", "variant": v}, "protocol", True, weight=3)
        for v in ("not_json", "span_past_end", "inside_utf8", "bad_ref", "wrong_type", "bad_label")
    ),
    Case("invalid_input", {"mode": "invalid_input"}, "invalid_input", True),
    Case("unsupported", {"mode": "unsupported"}, "unsupported", True),
    Case("too_large", {"mode": "too_large"}, "too_large", True),
    Case("transient", {"mode": "transient"}, "transient"),
    Case("segv_then_ok", {"mode": "then_ok", "first": "segv"}, "crash", then_ok=True),
    Case("memory_then_ok", {"mode": "then_ok", "first": "memory"}, "oom", then_ok=True),
    Case("exit_then_ok", {"mode": "then_ok", "first": "exit"}, "crash", then_ok=True),
]


def fault_pools(record_dir: Path, workers: int = 3) -> dict[str, Pool]:
    """`faulty` with a short wall-clock timeout; `faulty-cpu` with a short CPU limit and a
    long timeout, so a CPU spin on a loaded machine (little CPU per wall second) still
    meets the CPU limit first."""
    command = [str(VENV_PYTHON), str(FAULT_WORKER)]
    env = {"FAULTS_RECORD_DIR": str(record_dir)}
    return {
        "faulty": Pool(["faulty"], command, workers, JOB_TIMEOUT_SECS, 320, 60, env=env),
        "faulty_cpu": Pool(["faulty-cpu"], command, 1, 300, 320, CPU_SECS, env=env),
    }


def plan(count: int, rng: random.Random) -> list[Case]:
    """Every case once, then weighted draws up to `count`."""
    cases = list(CASES)
    weights = [c.weight for c in CASES]
    cases += rng.choices(CASES, weights, k=max(0, count - len(cases)))
    rng.shuffle(cases)
    return cases


@dataclass
class StormResult:
    jobs: int = 0
    failures: int = 0
    classified_right: int = 0
    confusion: Counter[tuple[str, str]] = field(default_factory=Counter)
    policy_right: int = 0
    policy_wrong: list[str] = field(default_factory=list)
    unfinished: int = 0
    death_to_failed_ms: list[float] = field(default_factory=list)
    pool_back_secs: float = float("nan")
    seconds: float = 0.0

    def figures(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "failed_attempts": self.failures,
            "classified_right_pct": round(100 * self.classified_right / max(1, self.failures), 2),
            "policy_followed_pct": round(100 * self.policy_right / max(1, self.jobs), 2),
            "unfinished": self.unfinished,
            "death_to_failed_ms_p50": round(percentile(self.death_to_failed_ms, 0.5), 1),
            "death_to_failed_ms_max": round(max(self.death_to_failed_ms, default=float("nan")), 1),
            "pool_back_at_desired_secs": round(self.pool_back_secs, 2),
            "seconds": round(self.seconds, 1),
            "confusion": {f"{e or 'none'}->{o}": n for (e, o), n in sorted(self.confusion.items())},
            "policy_wrong_examples": self.policy_wrong[:5],
        }


def _expected_failures(case: Case) -> int:
    if not case.kind:
        return 0
    if case.then_ok or case.permanent:
        return 1
    return MAX_ATTEMPTS


def run(core: Core, count: int, record_dir: Path, rng: random.Random) -> StormResult:
    started = time.monotonic()
    result = StormResult()
    cases = plan(count, rng)
    ids: dict[str, Case] = {}
    for i, case in enumerate(cases):
        job = core.submit(
            b"storm job %d\n\nsecond paragraph\n" % i,
            format=case.format,
            name=f"storm-{i}-{case.name}",
            options=case.options,
        )
        ids[job.id] = case
    # Worst case per job: every attempt a timeout (+ kill grace), spread over the pool.
    budget = 120 + count * MAX_ATTEMPTS * (JOB_TIMEOUT_SECS + 2) / 3
    finished = core.wait_finished(list(ids), timeout=budget, formats=FORMATS)
    result.jobs = len(ids)
    for job_id, job in finished.items():
        case = ids[job_id]
        _score(result, case, job, record_dir)
    result.pool_back_secs = max(_pool_back(core, p) for p in ("faulty", "faulty_cpu"))
    result.seconds = time.monotonic() - started
    return result


def _score(result: StormResult, case: Case, job: Any, record_dir: Path) -> None:
    if job.state not in ("succeeded", "dead"):
        result.unfinished += 1
    for failure in job.failures:
        result.failures += 1
        result.confusion[(case.kind, failure.kind)] += 1
        result.classified_right += failure.kind == case.kind
        died = record_dir / f"{job.id}-{failure.attempt}.died"
        if died.exists():
            result.death_to_failed_ms.append((failure.at - int(died.read_text())) / 1000)
    want_state = "succeeded" if not case.kind or case.then_ok else "dead"
    permanent_ok = all(f.permanent == case.permanent for f in job.failures)
    if job.state == want_state and len(job.failures) == _expected_failures(case) and permanent_ok:
        result.policy_right += 1
    else:
        kinds = [f.kind for f in job.failures]
        result.policy_wrong.append(f"{case.name}: {job.state} after {kinds}")


def _pool_back(core: Core, pool: str, timeout: float = 60) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        for info in core.status().pools:
            idle = all(w.state == "idle" for w in info.workers)
            back = info.live == info.desired and idle and not info.degraded
            if info.name == pool and back:
                return time.monotonic() - started
        time.sleep(0.1)
    return float("inf")
