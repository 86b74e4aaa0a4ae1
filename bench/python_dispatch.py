"""bench/python_dispatch: per-job cost with real Python workers (issue 12, item 5).

    .venv/bin/python bench/python_dispatch.py [--jobs 5000] [--workers 2]
                                              [--max-in-flight 1,2,8] [--runs 1]

N tiny .txt files are enqueued first (`telha ingest DIR` against a core with no pools),
then a second `telha serve` on the same data dir runs the shipped example worker pool
(`[pools.text]`, --workers processes, each max_in_flight as given) and drains them. The
release build (TELHA_BIN overrides) runs the core; nothing else runs in its process.
Prints, per max_in_flight:
- jobs/s drained, on the core's clock: (N - 1) / (last job's end - first job's end);
- per job, lease → accepted as the worker sees it (its log line "job N (txt): finished
  in S", from the job's start to the core's answer to its result) p50 / p99;
- the handler alone on the same files, in process (no core, no gRPC): p50 per job;
- hence the p50 cost outside the handler (harness, gRPC, core) per job, and the share of
  a worker's wall time that is not handler time. With prefetch the delivery overlaps the
  next job, so a job's lease → accepted is longer than the time it costs the worker.
Not in CI (a figure, not a test).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv" / "bin" / "python"
TELHA = Path(os.environ.get("TELHA_BIN") or ROOT / "target" / "release" / "telha")
FINISHED = {"succeeded", "dead", "cancelled"}
LOGGED = re.compile(rb"job (\d+) \(txt\): finished in ([0-9.]+)s")


ENV = {k: v for k, v in os.environ.items() if not k.startswith("TELHA_")}
"""The environment of the telha processes: no TELHA_ADDR, TELHA_CONFIG or TELHA_TOKEN of
the caller's may point them at another server."""


def text(i: int) -> bytes:
    return f"Note {i}.\n\nAlpha owes Beta {i * 7} euros.\n".encode()


def write_files(folder: Path, n: int) -> list[Path]:
    """N one-paragraph .txt files in `folder`."""
    files = []
    for i in range(n):
        path = folder / f"n{i:06d}.txt"
        path.write_bytes(text(i))
        files.append(path)
    return files


def config(root: Path, name: str, pools: str) -> Path:
    path = root / f"supervisor-{name}.toml"
    path.write_text(
        f'[server]\nlisten = "127.0.0.1:0"\ndata_dir = "{root / "data"}"\nhttp_listen = ""\n'
        f"[jobs]\nlease_secs = 60\n{pools}"
    )
    return path


class Serve:
    def __init__(self, root: Path, cfg: Path, log: Path) -> None:
        self.root = root
        self.cfg = cfg
        self.log = log.open("wb")
        addr = root / "data" / "serve.addr"
        addr.unlink(missing_ok=True)
        self.process = subprocess.Popen(
            [str(TELHA), "serve", "--config", str(cfg)], stdout=self.log, stderr=self.log, env=ENV
        )
        deadline = time.monotonic() + 30
        while not (addr.exists() and addr.read_text().strip().rpartition(":")[2]):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit(f"bench/python_dispatch: telha serve did not start ({log})")
            time.sleep(0.05)
        self.address = addr.read_text().strip()
        self.token = (root / "data" / "token").read_text().strip()

    def cli(self, *args: str) -> Any:
        done = subprocess.run(
            [str(TELHA), "--config", str(self.cfg), "--json", *args],
            capture_output=True,
            check=True,
            timeout=600,
            env=ENV,
        )
        return json.loads(done.stdout) if done.stdout.strip() else None

    def finished(self) -> int:
        queue = self.cli("status")["queue"].get("txt", {})
        return sum(int(queue.get(state, 0)) for state in FINISHED)

    def jobs(self, n: int) -> list[dict[str, Any]]:
        listed = self.cli("jobs", "--limit", str(n))
        return list(listed if isinstance(listed, list) else listed.get("jobs", []))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)
        self.log.close()


def handler_alone(files: list[Path]) -> list[float]:
    """The example worker's handler per file, in process, warm."""
    from example_worker.handler import handle
    from workers_common.conformance import run_handler

    for path in files[:200]:
        run_handler(handle, path, format="txt")
    times = []
    for path in files:
        started = time.perf_counter()
        run_handler(handle, path, format="txt")
        times.append(time.perf_counter() - started)
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def one_run(n: int, workers: int, in_flight: int, files_dir: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-pydispatch-") as tmp:
        root = Path(tmp)
        empty = config(root, "enqueue", "")
        serve = Serve(root, empty, root / "enqueue.log")
        try:
            started = time.monotonic()
            serve.cli("ingest", str(files_dir), "--format", "txt")
            enqueue_s = time.monotonic() - started
        finally:
            serve.stop()
        pool = (
            f'[pools.text]\nformats = ["txt"]\nworkers = {workers}\n'
            f'command = [{json.dumps(str(PYTHON))}, "-m", "example_worker"]\n'
            f"max_in_flight = {in_flight}\n"
        )
        log = root / "drain.log"
        serve = Serve(root, config(root, "drain", pool), log)
        try:
            deadline = time.monotonic() + 1800
            while serve.finished() < n:
                if time.monotonic() > deadline:
                    raise SystemExit("bench/python_dispatch: the drain did not finish")
                time.sleep(0.5)
            jobs = serve.jobs(n)
        finally:
            serve.stop()
        ok = [j for j in jobs if j["state"] == "succeeded"]
        if len(ok) != n:
            raise SystemExit(f"bench/python_dispatch: {n - len(ok)} jobs did not succeed")
        ends = sorted(int(j["updated_at"]) for j in ok)
        drain_s = (ends[-1] - ends[0]) / 1e6
        logged = [float(m.group(2)) for m in LOGGED.finditer(log.read_bytes())]
        return {
            "enqueue_files_per_s": n / enqueue_s,
            "jobs_per_s": (n - 1) / drain_s,
            "lease_to_accepted_p50_ms": pct(logged, 0.5) * 1e3,
            "lease_to_accepted_p99_ms": pct(logged, 0.99) * 1e3,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-in-flight", default="1,2,8", help="comma-separated, each measured")
    parser.add_argument("--runs", type=int, default=1, help="alternations of the settings")
    args = parser.parse_args()
    depths = [int(d) for d in args.max_in_flight.split(",")]
    print(
        f"telha {TELHA}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, "
        f"{args.jobs} jobs, {args.workers} example workers"
    )
    with tempfile.TemporaryDirectory(prefix="bench-pydispatch-files-") as files_tmp:
        files_dir = Path(files_tmp)
        files = write_files(files_dir, args.jobs)
        alone = handler_alone(files)
        handler_p50 = statistics.median(alone) * 1e3
        print(f"handler alone, in process: p50 {handler_p50:.3f} ms per job")
        results: dict[int, list[dict[str, float]]] = {d: [] for d in depths}
        for run in range(args.runs):
            for depth in depths:
                figures = one_run(args.jobs, args.workers, depth, files_dir)
                results[depth].append(figures)
                per_worker_ms = args.workers * 1e3 / figures["jobs_per_s"]
                print(
                    f"run {run + 1} max_in_flight {depth}: "
                    f"{figures['jobs_per_s']:,.0f} jobs/s drained; lease→accepted p50 "
                    f"{figures['lease_to_accepted_p50_ms']:.2f} ms, p99 "
                    f"{figures['lease_to_accepted_p99_ms']:.2f} ms; a worker spends "
                    f"{per_worker_ms:.2f} ms per job, {per_worker_ms - handler_p50:.2f} ms of "
                    f"it outside the handler (p50); enqueue "
                    f"{figures['enqueue_files_per_s']:,.0f} files/s (telha ingest DIR)"
                )
        for depth in depths:
            rates = [r["jobs_per_s"] for r in results[depth]]
            print(f"max_in_flight {depth}: median {statistics.median(rates):,.0f} jobs/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
