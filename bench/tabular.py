"""bench/tabular: a generated N-row x 10-column csv (or xlsx) through `telha run`, end to end.

    .venv/bin/python bench/tabular.py [--rows N ...] [--chunk-rows N] [--keep DIR]
    .venv/bin/python bench/tabular.py --xlsx [--rows N ...]    # default N: 200,000

With --xlsx, each N is run twice in the same run: as an xlsx workbook (the same ten
columns, typed cells: numbers, a date-formatted date, booleans, text) beside fastexcel's
bare read of it (`read_excel(...).load_sheet(0).to_polars()`, in a fresh interpreter) and
the worker's native scanner's read of the same sheet, then as the csv, so the two paths'
rows/s are measured on the same machine state.

For each N (default 1,000,000) it writes the csv (ints, floats, strings, a day-first date
column, booleans), then times, in the same run:
- `telha run` over it with one tabular worker until the job is succeeded (its final
  partial committed: the graph is visible), and rows/s;
- peak resident size of the core (the `telha run` process) and of the worker process,
  sampled from /proc every 50 ms, with the worker's RSS at each quarter of the run to
  show it flat;
- polars' bare `read_csv` of the same file (in a fresh interpreter), and the ratio.
The worker runs under the shipped pool's memory_mb (RLIMIT_AS) unless --memory-mb says
otherwise. Prints plain figures; the binary is target/debug/telha (or TELHA_BIN).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workers" / "common" / "tests"))

from serve_core import children  # noqa: E402  (the tests' /proc helper)

PYTHON = ROOT / ".venv" / "bin" / "python"
TELHA = Path(os.environ.get("TELHA_BIN") or ROOT / "target" / "debug" / "telha")
CITIES = ("Lisboa", "Porto", "Braga", "Faro", "Évora")


def write_csv(path: Path, rows: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.write("id,name,amount,qty,effective date,city,active,ratio,code,note\n")
        for i in range(rows):
            day, month = i % 28 + 1, i % 12 + 1
            out.write(
                f"{i},name {i},{i * 1.25:.2f},{i % 1000},{day:02d}/{month:02d}/2026,"
                f"{CITIES[i % 5]},{'true' if i % 2 else 'false'},{(i % 97) / 97:.4f},"
                f"C{i % 10000:05d},note for row {i}\n"
            )


def write_xlsx(path: Path, rows: int) -> None:
    """The csv's rows as a workbook of typed cells (xlsxwriter, streaming)."""
    import datetime as dt

    import xlsxwriter

    book = xlsxwriter.Workbook(str(path), {"constant_memory": True})
    book.set_properties({"created": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)})
    date = book.add_format({"num_format": "dd/mm/yyyy"})
    sheet = book.add_worksheet("Data")
    header = [
        "id",
        "name",
        "amount",
        "qty",
        "effective date",
        "city",
        "active",
        "ratio",
        "code",
        "note",
    ]
    sheet.write_row(0, 0, header)
    for i in range(rows):
        row = i + 1
        sheet.write_number(row, 0, i)
        sheet.write_string(row, 1, f"name {i}")
        sheet.write_number(row, 2, i * 1.25)
        sheet.write_number(row, 3, i % 1000)
        sheet.write_datetime(row, 4, dt.datetime(2026, i % 12 + 1, i % 28 + 1), date)
        sheet.write_string(row, 5, CITIES[i % 5])
        sheet.write_boolean(row, 6, bool(i % 2))
        sheet.write_number(row, 7, round((i % 97) / 97, 4))  # the csv's value, not 17 digits
        sheet.write_string(row, 8, f"C{i % 10000:05d}")
        sheet.write_string(row, 9, f"note for row {i}")
    book.close()


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass
class Sampler:
    """Samples the core's and its workers' resident sizes until stopped."""

    core: int
    core_peak: int = 0
    worker_peak: int = 0
    worker_anon_peak: int = 0
    """Anonymous memory only: polars maps the csv file, and the pages it has read count
    in VmRSS as file-backed (clean, reclaimable) memory that grows with the file."""
    worker_vm_peak: int = 0
    """Address space (VmPeak): what RLIMIT_AS, the pool's memory_mb, has to cover."""
    worker_series: list[tuple[float, int, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        start = time.monotonic()
        while not self._stop.is_set():
            self.core_peak = max(self.core_peak, rss_kib(self.core))
            pids = children(self.core)
            workers = sum(rss_kib(pid) for pid in pids)
            anon = sum(rss_kib(pid, "RssAnon") for pid in pids)
            self.worker_peak = max(self.worker_peak, workers)
            self.worker_anon_peak = max(self.worker_anon_peak, anon)
            vm = max((rss_kib(pid, "VmPeak") for pid in pids), default=0)
            self.worker_vm_peak = max(self.worker_vm_peak, vm)
            self.worker_series.append((time.monotonic() - start, workers, anon))
            self._stop.wait(0.05)

    def stop(self) -> None:
        self._stop.set()


def shipped_memory_mb() -> int:
    """The `[pools.tabular.limits]` memory_mb of the repo's supervisor.toml."""
    with (ROOT / "supervisor.toml").open("rb") as handle:
        return int(tomllib.load(handle)["pools"]["tabular"]["limits"]["memory_mb"])


def config(root: Path, chunk_rows: int, memory_mb: int) -> Path:
    path = root / "supervisor.toml"
    path.write_text(
        "[server]\n"
        'listen = "127.0.0.1:0"\n'
        f'data_dir = "{root / "data"}"\n'
        "[pools.tabular]\n"
        'formats = ["csv", "xlsx"]\n'
        "workers = 1\n"
        f'command = ["{PYTHON}", "-m", "tabular_worker"]\n'
        "job_timeout_secs = 3600\n"
        "[pools.tabular.limits]\n"
        f"memory_mb = {memory_mb}\n"
        "cpu_secs = 3600\n"
        "open_files = 256\n"
    )
    return path


_BARE = {
    "csv": "import polars as pl\nread = lambda path: pl.read_csv(path)\n",
    "xlsx": "import fastexcel\n"
    "read = lambda path: fastexcel.read_excel(path).load_sheet(0).to_polars()\n",
    # The worker's own reader of the same sheet: the native scanner's typed columns.
    "xlsx-native": "from pathlib import Path\n"
    "from tabular_worker.native_xlsx import native_sheets\n"
    "def read(path):\n"
    "    native = native_sheets(Path(path), date1904=False)\n"
    "    assert native is not None and native.typed(native.names[0]) is not None\n",
}


def bare_read(path: Path, kind: str) -> float:
    """Seconds polars' read_csv (csv) or fastexcel (xlsx) takes over `path`, alone."""
    code = (
        "import sys, time\n" + _BARE[kind] + "t = time.perf_counter(); read(sys.argv[1]); "
        "print(time.perf_counter() - t)\n"
    )
    done = subprocess.run(
        [str(PYTHON), "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    return float(done.stdout)


def one(rows: int, chunk_rows: int, memory_mb: int, keep: Path | None, kind: str = "csv") -> None:
    with tempfile.TemporaryDirectory(prefix="bench-tabular-") as tmp:
        root = keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        csv = root / f"bench-{rows}.{kind}"
        t0 = time.perf_counter()
        (write_xlsx if kind == "xlsx" else write_csv)(csv, rows)
        print(
            f"{kind} rows={rows:,}  file={csv.stat().st_size / 1e6:.1f} MB  "
            f"(written in {time.perf_counter() - t0:.1f} s)"
        )
        args = [
            str(TELHA),
            "--config",
            str(config(root, chunk_rows, memory_mb)),
            "run",
            "--json",
            "--option",
            f"chunk_rows={chunk_rows}",
            str(csv),
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith("TELHA_")}
        start = time.perf_counter()
        process = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
        )
        sampler = Sampler(process.pid)
        thread = threading.Thread(target=sampler.run, daemon=True)
        thread.start()
        out, err = process.communicate()
        elapsed = time.perf_counter() - start
        sampler.stop()
        thread.join()
        [job] = json.loads(out)["jobs"] if out.strip() else [{}]
        if job.get("state") != "succeeded":
            print(f"  job did not succeed: {json.dumps(job)[:2000]}\n{err[-3000:]}")
            return
        bare = bare_read(csv, kind)
        reader = "fastexcel load_sheet" if kind == "xlsx" else "polars read_csv"
        native = bare_read(csv, "xlsx-native") if kind == "xlsx" else None
        print(
            f"  telha run, end to end to a visible graph: {elapsed:.1f} s  "
            f"({rows / elapsed:,.0f} rows/s, {job['node_count']:,} nodes)"
        )
        print(
            f"  {reader} of the same file:     {bare:.2f} s  "
            f"(end to end is {elapsed / bare:.0f}x that)"
        )
        if native is not None:
            print(f"  the worker's native scanner, same sheet: {native:.2f} s (typed columns)")
        print(
            f"  peak RSS: core {sampler.core_peak / 1024:.0f} MB, "
            f"worker {sampler.worker_peak / 1024:.0f} MB "
            f"(of which anonymous {sampler.worker_anon_peak / 1024:.0f} MB); "
            f"worker address space peak {sampler.worker_vm_peak / 1024:.0f} MB"
        )
        series = sampler.worker_series
        if series:
            quarters = [
                series[min(len(series) - 1, int(len(series) * q))] for q in (0.25, 0.5, 0.75, 0.95)
            ]
            print(
                "  worker RSS (anonymous) at 25/50/75/95 % of the run: "
                + ", ".join(f"{kib / 1024:.0f} ({anon / 1024:.0f}) MB" for _, kib, anon in quarters)
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=None)
    parser.add_argument(
        "--xlsx",
        action="store_true",
        help="an xlsx workbook of the same rows, then the csv, each N (default 200,000)",
    )
    parser.add_argument("--chunk-rows", type=int, default=10_000)
    parser.add_argument(
        "--memory-mb",
        type=int,
        default=None,
        help="the worker's RLIMIT_AS (default: supervisor.toml's [pools.tabular.limits])",
    )
    parser.add_argument("--keep", type=Path, help="write the files here and keep them")
    args = parser.parse_args()
    if not TELHA.exists():
        print(f"no {TELHA}: run cargo build first", file=sys.stderr)
        return 1
    memory_mb = args.memory_mb or shipped_memory_mb()
    print(f"worker memory_mb (RLIMIT_AS) = {memory_mb}")
    for rows in args.rows or ([200_000] if args.xlsx else [1_000_000]):
        if args.xlsx:
            one(rows, args.chunk_rows, memory_mb, args.keep, "xlsx")
        one(rows, args.chunk_rows, memory_mb, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
