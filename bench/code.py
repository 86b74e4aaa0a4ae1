"""bench/code: repository archives through `telha run` beside a bare tree-sitter parse.

    .venv/bin/python bench/code.py [--corpus stdlib|cargo|both] [--limit N] [--workers 2]
                                   [--max-in-flight N]  # default: the shipped [pools.code]

For each corpus (the CPython stdlib's .py files; the .rs files of the crates under
~/.cargo/registry/src when present) it writes one tar.gz, runs it through the release
`telha run` with a code pool, and in the same run parses the same files with tree-sitter
alone (one process) and projects them with the worker's handler in-process (one
process, no core). It prints files/s and MB/s for each and where the time goes: the
end-to-end time against the worker's own time shows the per-job overhead of the core
and the wire.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TELHA = Path(os.environ.get("TELHA_BIN") or REPO / "target" / "release" / "telha")


def corpus_files(name: str, limit: int) -> tuple[Path, list[Path]]:
    if name == "stdlib":
        # The whole install's lib/python3.X (the stdlib and its site-packages: ~11,600
        # .py files on these machines), as NOTES.md counts it.
        base = Path(sysconfig.get_paths()["stdlib"])
        files = list(base.rglob("*.py"))
    else:
        base = Path.home() / ".cargo" / "registry" / "src"
        files = list(base.rglob("*.rs"))
    files = sorted(p for p in files if p.is_file() and not p.is_symlink())
    return base, files[:limit]


def build_archive(base: Path, files: list[Path], out: Path) -> None:
    with tarfile.open(out, "w:gz", compresslevel=1) as archive:
        for path in files:
            data = path.read_bytes()
            info = tarfile.TarInfo("corpus/" + str(path.relative_to(base)))
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def bare_parse(files: list[Path]) -> float:
    from code_worker.languages import language_for
    from code_worker.symbols import parser_for

    started = time.perf_counter()
    for path in files:
        _name, spec = language_for(path.name)
        assert spec is not None
        parser_for(spec).parse(path.read_bytes())
    return time.perf_counter() - started


def in_process(files: list[Path], base: Path) -> float:
    from code_worker import handle
    from workers_common.conformance import run_handler

    started = time.perf_counter()
    for path in files:
        options = {"root": "corpus", "path": str(path.relative_to(base))}
        # A binary or oversize file fails typed: that is work done too.
        with contextlib.suppress(Exception):
            run_handler(handle, path, format="code", options=options)
    return time.perf_counter() - started


def shipped_in_flight() -> int:
    """`max_in_flight` of the repo's supervisor.toml `[pools.code]`."""
    import tomllib

    with (REPO / "supervisor.toml").open("rb") as handle:
        return int(tomllib.load(handle)["pools"]["code"].get("max_in_flight", 1))


def telha_run(
    archive: Path, workers: int, in_flight: int, tmp: Path
) -> tuple[float, dict[str, object]]:
    config = tmp / "supervisor.toml"
    config.write_text(
        f'[server]\nlisten = "127.0.0.1:0"\ndata_dir = "{tmp / "data"}"\n'
        '[pools.code]\nformats = ["code", "code-archive"]\n'
        f'workers = {workers}\ncommand = ["{sys.executable}", "-m", "code_worker"]\n'
        f"max_in_flight = {in_flight}\n"
        "job_timeout_secs = 1800\n[pools.code.limits]\nmemory_mb = 3072\ncpu_secs = 1800\n"
        "open_files = 256\n"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with subprocess.Popen(
        [str(TELHA), "--config", str(config), "run", "--json", str(archive)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        core = ThreadClock(proc.pid)
        core.start()
        stdout, stderr = proc.communicate()
        core.stop()
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = json.loads(stdout) if stdout.strip() else {"error": stderr[-2000:]}
    summary["disk_written_bytes"] = (after.ru_oublock - before.ru_oublock) * 512
    # telha waits for its workers, so the children's CPU is the core's and the workers'.
    total = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    summary["cpu_seconds"] = {"total": total, "core_threads": core.seconds()}
    return elapsed, summary


class ThreadClock(threading.Thread):
    """The CPU time of the core's own threads (not its workers), by thread name, read
    from /proc/<pid>/task every 0.2 s while `telha run` lives (the last reading counts)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.ticks: dict[str, tuple[str, int]] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            self.read()

    def read(self) -> None:
        # A thread (or the whole process) may end between the listing and the read.
        with contextlib.suppress(OSError):
            for task in os.scandir(f"/proc/{self.pid}/task"):
                with contextlib.suppress(OSError), open(f"{task.path}/stat") as handle:
                    stat = handle.read()
                    name = stat[stat.index("(") + 1 : stat.rindex(")")]
                    fields = stat[stat.rindex(")") + 2 :].split()
                    self.ticks[task.name] = (name, int(fields[11]) + int(fields[12]))

    def stop(self) -> None:
        self.done.set()
        self.join()

    def seconds(self) -> dict[str, float]:
        """CPU seconds by thread name (the kernel's 15 characters of it)."""
        hz = os.sysconf("SC_CLK_TCK")
        by_name: dict[str, float] = {}
        for name, ticks in self.ticks.values():
            by_name[name] = by_name.get(name, 0.0) + ticks / hz
        return by_name


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default="both", choices=["stdlib", "cargo", "both"])
    parser.add_argument("--limit", type=int, default=10**9)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-in-flight", type=int, default=shipped_in_flight())
    args = parser.parse_args()
    names = ["stdlib", "cargo"] if args.corpus == "both" else [args.corpus]
    print(
        f"machine: {os.cpu_count()} cores; binary {TELHA}; pool of {args.workers} workers, "
        f"max_in_flight {args.max_in_flight}"
    )
    for name in names:
        base, files = corpus_files(name, args.limit)
        if not files:
            print(f"{name}: no files, skipped")
            continue
        megabytes = sum(p.stat().st_size for p in files) / 1e6
        with tempfile.TemporaryDirectory(prefix="bench-code-") as tmpdir:
            tmp = Path(tmpdir)
            archive = tmp / f"{name}.tar.gz"
            build_archive(base, files, archive)
            bare = bare_parse(files)
            worker = in_process(files, base)
            e2e, summary = telha_run(archive, args.workers, args.max_in_flight, tmp)
        formats = summary.get("formats", {})
        code = formats.get("code", {}) if isinstance(formats, dict) else {}
        n = len(files)
        print(f"\n{name}: {n} files, {megabytes:.1f} MB, archive {archive.name}")
        for what, seconds in (
            ("bare tree-sitter parse (1 process)", bare),
            ("worker handler in-process (1 proc)", worker),
            (f"telha run end to end ({args.workers} workers)", e2e),
        ):
            print(
                f"  {what:<36} {n / seconds:8.0f} files/s {megabytes / seconds:7.2f} MB/s"
                f"  ({seconds:.1f} s)"
            )
        print(f"  ratio end to end / bare parse: {bare / e2e:.2f}x  (target >= 0.5x)")
        print(f"  jobs: code {code}")
        written = summary.get("disk_written_bytes", 0)
        assert isinstance(written, int)
        print(
            f"  written to disk by telha run (core and workers): {written / 1e6:.0f} MB, "
            f"{written / n / 1e6:.2f} MB per file for {megabytes / n * 1000:.1f} KB of source"
        )
        cpu = summary.get("cpu_seconds")
        if isinstance(cpu, dict):
            per_thread = cpu["core_threads"]
            core_cpu = sum(per_thread.values())
            threads = ", ".join(
                f"{name} {seconds / n * 1000:.2f}"
                for name, seconds in sorted(per_thread.items(), key=lambda kv: -kv[1])
                if seconds / n * 1000 >= 0.01
            )
            print(
                f"  CPU per file (telha run): workers {(cpu['total'] - core_cpu) / n * 1000:.2f} "
                f"ms (the archive job's included), core {core_cpu / n * 1000:.2f} ms "
                f"({threads}); the machine's {os.cpu_count()} cores busy "
                f"{cpu['total'] / ((os.cpu_count() or 1) * e2e) * 100:.0f} % of the run"
            )
        per_job = (e2e * args.workers - worker) / n * 1000
        print(
            f"  where the time goes, per file: parse {bare / n * 1000:.2f} ms, projection "
            f"{(worker - bare) / n * 1000:.2f} ms, core + wire + job overhead ~{per_job:.2f} ms "
            f"(worker-seconds e2e minus in-process)"
        )


if __name__ == "__main__":
    main()
