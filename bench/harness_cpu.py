"""bench/harness_cpu: the Python CPU one job costs a worker (issues 12 item 5, 15).

    .venv/bin/python bench/harness_cpu.py [--jobs 3000] [--warm 300]
                                          [--max-in-flight 1,8] [--runs 3]

N tiny .txt jobs are enqueued into a real `telha serve` with no pools (the release build;
TELHA_BIN overrides); then this process runs a WorkerConsumer with the example worker's
handler against it, and stops it once the N-th job started (the jobs received before are
all finished first). Measured: this process's CPU time (user + system, getrusage) from the
start of job `warm` to the consumer's return, divided by the jobs run in that window; and
the same handler alone, in process, on the same files. So the figures are CPU time, not
wall time: they hold on a machine shared with other work (the core runs in its own
process and is not counted). The worker's log goes to a file, as a pool's does.
Not in CI (a figure, not a test).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import statistics
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/python_dispatch: the core it starts (TELHA_BIN, or the release build), the files.
sys.path.insert(0, str(ROOT / "bench"))
dispatch = importlib.import_module("python_dispatch")


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def one_run(n: int, warm: int, depth: int, files_dir: Path) -> float:
    """CPU µs per job of this process serving the jobs (warm-up excluded)."""
    from example_worker.handler import handle
    from workers_common import Job, WorkerConsumer
    from workers_common.config import WorkerConfig

    with tempfile.TemporaryDirectory(prefix="bench-harness-cpu-") as tmp:
        root = Path(tmp)
        # A core with no pools holding one job per file.
        serve = dispatch.Serve(root, dispatch.config(root, "enqueue", ""), root / "serve.log")
        try:
            serve.cli("ingest", str(files_dir), "--format", "txt")
            config = WorkerConfig(
                core_addr=serve.address,
                worker_id="bench-1",
                token=serve.token,
                formats=("txt",),
                max_in_flight=depth,
                running_file=str(root / "running"),
            )
            marks: dict[str, float] = {}
            count = 0
            consumer: WorkerConsumer

            def counted(job: Job) -> bytes:
                nonlocal count
                count += 1
                if count == warm:
                    marks["cpu"] = cpu()
                if count == n:
                    consumer.stop()
                return handle(job)

            consumer = WorkerConsumer({"txt": counted}, config=config)
            # The worker's log lines go to a file, as a pool's go to its pipe.
            saved = os.dup(2)
            with (root / "worker.log").open("wb") as log:
                os.dup2(log.fileno(), 2)
                try:
                    # run() installs signal handlers from the main thread only: as a pool's
                    # worker does.
                    code = consumer.run()
                finally:
                    os.dup2(saved, 2)
                    os.close(saved)
            spent = cpu() - marks["cpu"]
            if code != 0 or count != n:
                raise SystemExit(f"bench/harness_cpu: exit {code}, {count} of {n} jobs run")
            return spent / (n - warm) * 1e6
        finally:
            serve.stop()


def handler_alone(files: list[Path]) -> float:
    """CPU µs per job of the example handler alone, in process (warm)."""
    from example_worker.handler import handle
    from workers_common.conformance import run_handler

    for path in files[:200]:
        run_handler(handle, path, format="txt")
    started = cpu()
    for path in files:
        run_handler(handle, path, format="txt")
    return (cpu() - started) / len(files) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--warm", type=int, default=300)
    parser.add_argument("--max-in-flight", default="1,8", help="comma-separated, each measured")
    parser.add_argument("--runs", type=int, default=3, help="alternations of the settings")
    parser.add_argument("--json", action="store_true", help="one JSON line of the medians")
    args = parser.parse_args()
    depths = [int(d) for d in args.max_in_flight.split(",")]
    threading.current_thread().name = "MainThread"
    with tempfile.TemporaryDirectory(prefix="bench-harness-cpu-files-") as files_tmp:
        files_dir = Path(files_tmp)
        files = dispatch.write_files(files_dir, args.jobs)
        alone = handler_alone(files)
        results: dict[int, list[float]] = {d: [] for d in depths}
        for _ in range(args.runs):
            for depth in depths:
                results[depth].append(one_run(args.jobs, args.warm, depth, files_dir))
        medians = {d: statistics.median(v) for d, v in results.items()}
        if args.json:
            print(
                json.dumps({"handler_alone_us": alone, **{str(d): m for d, m in medians.items()}})
            )
            return 0
        print(f"handler alone, in process (conformance run_handler): {alone:.0f} µs CPU per job")
        for depth in depths:
            runs = ", ".join(f"{v:.0f}" for v in results[depth])
            print(
                f"max_in_flight {depth}: median {medians[depth]:.0f} µs CPU per job "
                f"(runs: {runs}), {medians[depth] - alone:.0f} µs of it outside the handler"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
