"""`bench/faults/run [--smoke] [--parts crash,storm,wire,hostile,load]`: the fault suite.

Every part starts its own `telha serve` (loopback, port 0) on a temp data dir, prints its
figures as one JSON document per part, checks them against the bars (0 lost, 0 stuck, 0
duplicated, 0 panics, 100 % typed, ...) and cleans up every process it started: each
core generation's workers carry FAULTS_TAG in their environment and are looked for in
/proc when the part ends. The exit code is 1 when any bar is missed.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import bars, crash_loop, hostile, load, storm, wirefuzz
from .core import Core, kill_tagged, setup_logging, tagged_pids

log = logging.getLogger("faults")

PARTS = ("crash", "storm", "wire", "hostile", "load")


def _storm(work: Path, args: argparse.Namespace, rng: random.Random, tag: str) -> dict[str, Any]:
    record = work / "records"
    record.mkdir(parents=True)
    core = Core(
        work / "core",
        storm.fault_pools(record),
        run_tag=tag,
        jobs={"max_attempts": storm.MAX_ATTEMPTS},
    )
    core.start()
    try:
        result = storm.run(core, args.storm_jobs, record, rng)
        return result.figures() | {"core_rss_mib": round(core.rss_mib(), 1)}
    finally:
        core.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/faults/run", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="a few rounds of each part (CI)")
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--rounds", type=int, default=20, help="crash loop rounds")
    parser.add_argument("--storm-jobs", type=int, default=300)
    parser.add_argument("--wire-cases", type=int, default=3000)
    parser.add_argument("--hostile-per-format", type=int, default=20)
    parser.add_argument("--load-jobs", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, data)")
    parser.add_argument("--json", type=Path, help="also write all figures to this file")
    args = parser.parse_args(argv)
    if args.smoke:
        args.rounds, args.storm_jobs, args.wire_cases = 3, len(storm.CASES), 120
        args.hostile_per_format, args.load_jobs = 2, 300
    setup_logging()
    parts = [p for p in args.parts.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; known: {', '.join(PARTS)}")
    run_tag = f"faults-{secrets.token_hex(4)}"
    work = Path(tempfile.mkdtemp(prefix="telha-faults-"))
    runners: dict[str, Callable[[Path, random.Random, str], dict[str, Any]]] = {
        "crash": lambda w, r, t: crash_loop.run(w, args.rounds, r, t),
        "storm": lambda w, r, t: _storm(w, args, r, t),
        "wire": lambda w, r, t: wirefuzz.run(w, args.wire_cases, r, t, smoke=args.smoke),
        "hostile": lambda w, r, t: hostile.run(w, args.hostile_per_format, r, t, smoke=args.smoke),
        "load": lambda w, r, t: load.run(
            w, args.load_jobs, 10 if args.smoke else args.storm_jobs, r, t
        ),
    }
    figures: dict[str, Any] = {}
    missed: list[str] = []
    try:
        for part in parts:
            started = time.monotonic()
            tag = f"{run_tag}-{part}"
            log.info("part %s: starting (work dir %s)", part, work / part)
            try:
                result = runners[part](work / part, random.Random(f"{args.seed}-{part}"), tag)
            finally:
                leftover = kill_tagged(tag)
            result["leftover_processes_killed"] = leftover
            result.setdefault("seconds", round(time.monotonic() - started, 1))
            figures[part] = result
            part_missed = bars.check(part, result)
            missed += [f"{part}: {m}" for m in part_missed]
            print(json.dumps({part: result}, indent=1, sort_keys=True), flush=True)
    finally:
        kill_tagged(run_tag)
        figures["processes_left"] = len(tagged_pids(run_tag))
        if args.json:
            args.json.write_text(json.dumps(figures, indent=1, sort_keys=True))
        if args.keep or missed:
            log.info("work dir kept: %s", work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    for m in missed:
        print(f"bar missed: {m}", file=sys.stderr)
    failed = len({m.split(":")[0] for m in missed})
    # The plain closing line CI reads: one word and a colon, then the counts.
    print(f"faults: {len(parts) - failed} passed, {failed} failed")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
