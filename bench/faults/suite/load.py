"""Part 5: many small jobs through the real text pool while the fault storm runs in
another pool of the same core; throughput and the core's RSS before, during and after."""

from __future__ import annotations

import logging
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from . import inputs, storm
from .core import Core, real_pools

log = logging.getLogger("faults.load")

ACTIVE = ("queued", "leased", "retrying")


def _pending(core: Core, fmt: str) -> int:
    status = core.status()
    return sum(q.count for q in status.queue if q.format == fmt and q.state in ACTIVE)


def _baseline(core: Core, bodies: list[bytes], n: int) -> float:
    """Jobs/s of `n` jobs submitted and drained the same way, before the storm starts."""
    started = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        list(
            pool.map(
                lambda i: core.submit(bodies[i % 50], format="txt", name=f"base-{i}.txt"), range(n)
            )
        )
    while _pending(core, "txt"):
        time.sleep(0.2)
    return round(n / (time.monotonic() - started), 1)


def _succeeded(core: Core, fmt: str) -> int:
    return sum(q.count for q in core.status().queue if q.format == fmt and q.state == "succeeded")


def run(work: Path, count: int, storm_jobs: int, rng: random.Random, tag: str) -> dict[str, Any]:
    record = work / "records"
    record.mkdir(parents=True)
    pools = {"text": real_pools(workers=2)["text"], **storm.fault_pools(record, workers=2)}
    core = Core(work / "core", pools, run_tag=tag, jobs={"max_attempts": storm.MAX_ATTEMPTS})
    core.start()
    try:
        return _run(core, count, storm_jobs, record, rng)
    finally:
        core.stop()


def _run(
    core: Core, count: int, storm_jobs: int, record: Path, rng: random.Random
) -> dict[str, Any]:
    time.sleep(2)  # the pools' first workers connect
    rss_before = core.rss_mib()
    bodies = [inputs.text(i % 50) for i in range(50)]
    base_n = max(50, count // 20)
    baseline = _baseline(core, bodies, base_n)
    storm_result: list[storm.StormResult] = []
    storm_thread = threading.Thread(
        target=lambda: storm_result.append(storm.run(core, storm_jobs, record, rng)), daemon=True
    )
    storm_thread.start()
    started = time.monotonic()
    peak = rss_before

    def submit(i: int) -> str:
        return core.submit(bodies[i % 50], format="txt", name=f"load-{i}.txt").id

    # The core's RSS each second beside the jobs done so far: flat or not.
    samples: list[tuple[int, float]] = []
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(1.0):
            samples.append((_succeeded(core, "txt") - base_n, core.rss_mib()))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with ThreadPoolExecutor(4) as pool:
        ids = list(pool.map(submit, range(count), chunksize=64))
    submitted = time.monotonic() - started
    deadline = time.monotonic() + 600 + count / 20
    while _pending(core, "txt") and time.monotonic() < deadline:
        time.sleep(0.5)
    drained = time.monotonic() - started
    sampling.set()
    sampler.join()
    samples.append((_succeeded(core, "txt") - base_n, core.rss_mib()))
    peak = max([peak, *(rss for _, rss in samples)])
    marks = {
        f"{q}%": next((round(rss, 1) for done, rss in samples if done >= count * q / 100), None)
        for q in (25, 50, 75, 100)
    }
    storm_thread.join(timeout=1200)
    rss_after = core.rss_mib()
    jobs = {j.id: j for j in core.all_jobs(format="txt")}
    lost = sum(1 for i in ids if i not in jobs)
    stuck = sum(1 for i in ids if i in jobs and jobs[i].state in ACTIVE)
    bad = sum(1 for i in ids if i in jobs and jobs[i].state != "succeeded")
    figures: dict[str, Any] = {
        "load_jobs": count,
        "submit_jobs_per_s": round(count / max(submitted, 1e-9), 1),
        "through_jobs_per_s": round(count / max(drained, 1e-9), 1),
        "baseline_without_storm_jobs_per_s": baseline,
        "drain_seconds": round(drained, 1),
        "lost": lost,
        "stuck": stuck,
        "load_jobs_not_succeeded": bad,
        "core_rss_mib_before": round(rss_before, 1),
        "core_rss_mib_peak": round(peak, 1),
        "core_rss_mib_at_done": marks,
        "core_rss_mib_after": round(rss_after, 1),
        "storm": storm_result[0].figures() if storm_result else {"unfinished": storm_jobs},
    }
    return figures
