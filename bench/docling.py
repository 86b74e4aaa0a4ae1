"""bench/docling: documents through the core end to end, beside docling-parse's bare
text extraction of the same PDF in the same run.

    .venv/bin/python bench/docling.py [--pages 200] [--repeat 3] [--docs 50] [--jobs 200]

- A generated PDF of --pages text pages (docling_corpus.pages_pdf), measured two ways:
  - warm pool (what an operator sees): `telha serve` with one docling worker that has
    already done one small PDF job (its start-up, reported apart: serve launched until
    that job is done); then the PDF is ingested --repeat times (each under its own
    tenant) and each job is timed on the core's clock, from its creation (the file is
    in the store) to its end (the submission committed, the graph visible): pages/s;
  - cold (`telha run` one-shot): the whole command, core and worker start-up included;
  both with the worker's pdf_helper (a second process decoding the second half of the
  pages, as shipped) and with it off (DOCLING_PDF_HELPER=0), cold runs alternating.
  Beside them, docling-parse alone decoding every page's text lines of the same file
  (--repeat times, each in a fresh interpreter, timed after its imports as the warm
  pool is: line cells only, no layout, no projection): pages/s. The ratios use medians.
- --docs DOCX files and --docs HTML files (the golden corpus's, one per job) through
  `telha run`: docs/s, worker start-up included.
- The worker's resident size after 10 and after --jobs jobs of a PDF/DOCX/HTML/Markdown
  mix, in one long-lived process running the handler back to back (what a worker does
  between polls, without recycling).
The binary is target/release/telha (or TELHA_BIN). Prints plain figures; the machine's
load average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
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
TESTS = ROOT / "workers" / "docling" / "tests"
sys.path.insert(0, str(TESTS))

import docling_corpus as corpus  # noqa: E402


def config(root: Path, *, helper: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "supervisor.toml"
    path.write_text(
        f'[server]\nlisten = "127.0.0.1:0"\ndata_dir = "{root / "data"}"\n'
        '[pools.docling]\nformats = ["pdf", "docx", "pptx", "odt", "odp", "epub", "html", "md",'
        ' "latex", "docling"]\nworkers = 1\n'
        f'command = ["{PYTHON}", "-m", "docling_worker"]\njob_timeout_secs = 600\n'
        "[pools.docling.limits]\nmemory_mb = 3072\ncpu_secs = 600\nopen_files = 256\n"
        + ("" if helper else '[pools.docling.env]\nDOCLING_PDF_HELPER = "0"\n')
    )
    return path


def telha_run(
    root: Path, inputs: Path, *, helper: bool = True
) -> tuple[float, list[dict[str, object]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TELHA_")}
    start = time.perf_counter()
    done = subprocess.run(
        [str(TELHA), "--config", str(config(root, helper=helper)), "run", "--json", str(inputs)],
        capture_output=True, text=True, env=env, check=False, timeout=1800,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    jobs = json.loads(done.stdout)["jobs"] if done.stdout.strip() else []
    bad = [j for j in jobs if j.get("state") != "succeeded"]
    if bad or not jobs:
        raise SystemExit(f"jobs did not succeed: {json.dumps(bad)[:2000]}\n{done.stderr[-2000:]}")
    return elapsed, jobs


_BARE = """
import sys, time
from docling_parse.pdf_parser import ContentConfig, ContentLevel, DoclingPdfParser
from docling_core.types.doc.page import TextCellUnit
skip, keep = ContentLevel.SKIP, ContentLevel.COMPUTE_AND_MATERIALIZE
lines_only = ContentConfig(char_cells_content_level=skip, word_cells_content_level=skip,
    line_cells_content_level=keep, shapes_content_level=skip, bitmaps_content_level=skip)
t = time.perf_counter()
doc = DoclingPdfParser(loglevel="fatal").load(sys.argv[1], lazy=True, content_config=lines_only)
lines = 0
for number in range(1, doc.number_of_pages() + 1):
    page = doc.get_page(number)
    lines += sum(1 for _ in page.iterate_cells(unit_type=TextCellUnit.LINE))
    doc.unload_pages((number, number + 1))
print(time.perf_counter() - t, lines)
"""


def bare_extraction(pdf: Path) -> tuple[float, float]:
    """(seconds after its imports, seconds of the whole process: interpreter, imports)."""
    started = time.perf_counter()
    done = subprocess.run(
        [str(PYTHON), "-c", _BARE, str(pdf)], capture_output=True, text=True, check=True
    )
    return float(done.stdout.split()[0]), time.perf_counter() - started


class Core:
    """`telha serve` with the docling pool, driven through the CLI."""

    def __init__(self, root: Path, *, helper: bool = True) -> None:
        self.config = config(root, helper=helper)
        self.log = (root / "serve.log").open("wb")
        env = {k: v for k, v in os.environ.items() if not k.startswith("TELHA_")}
        self.process = subprocess.Popen(
            [str(TELHA), "serve", "--config", str(self.config)],
            stdout=self.log, stderr=self.log, env=env,
        )  # fmt: skip
        addr = root / "data" / "serve.addr"
        deadline = time.monotonic() + 60
        while not (addr.exists() and addr.read_text().strip().rpartition(":")[2]):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit("bench/docling: telha serve did not start")
            time.sleep(0.02)
        self.addr = addr.read_text().strip()

    def cli(self, *args: str) -> Any:
        done = subprocess.run(
            [str(TELHA), *args, "--config", str(self.config), "--addr", self.addr, "--json"],
            capture_output=True, text=True, timeout=600, check=True,
        )  # fmt: skip
        return json.loads(done.stdout)

    def job(self, tenant: str, path: Path) -> dict[str, Any]:
        """Ingests one file and waits for its job to end."""
        self.cli("ingest", "--tenant", tenant, str(path))
        while True:
            listed = self.cli("jobs", "--tenant", tenant)
            jobs: list[dict[str, Any]] = listed["jobs"] if isinstance(listed, dict) else listed
            if jobs and jobs[0]["state"] in ("succeeded", "dead", "cancelled"):
                if jobs[0]["state"] != "succeeded" or jobs[0].get("unchanged"):
                    raise SystemExit(f"bench/docling: {json.dumps(jobs[0])[:2000]}")
                return jobs[0]
            time.sleep(0.02)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)
        self.log.close()


def warm_pool(
    root: Path, pdf: Path, repeat: int, *, helper: bool = True
) -> tuple[float, list[float]]:
    """(start-up seconds, each job's seconds on the core's clock)."""
    root.mkdir(parents=True, exist_ok=True)
    small = root / "small.pdf"
    small.write_bytes(corpus.simple_pdf())
    started = time.perf_counter()
    core = Core(root, helper=helper)
    try:
        core.job("warm-up", small)
        startup = time.perf_counter() - started
        runs = []
        for n in range(repeat):
            job = core.job(f"run-{n}", pdf)
            runs.append((int(job["updated_at"]) - int(job["created_at"])) / 1e6)
    finally:
        core.stop()
    return startup, runs


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


_RSS = """
import sys, json
sys.path.insert(0, sys.argv[2])
import docling_corpus as corpus
from workers_common.conformance import run_handler
from docling_worker import handle
from pathlib import Path
root = Path(sys.argv[3])
inputs = []
for fmt, data in (("pdf", corpus.report_pdf()), ("docx", corpus.report_docx()),
                  ("html", corpus.REPORT_HTML.encode()), ("md", corpus.REPORT_MD.encode())):
    path = root / f"mix.{fmt}"
    path.write_bytes(data)
    inputs.append((fmt, path))
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
out = {}
for n in range(1, int(sys.argv[1]) + 1):
    fmt, path = inputs[n % len(inputs)]
    run_handler(handle, path, format=fmt, name=f"job-{n}", options={"clarify": True})
    if n in (10, int(sys.argv[1])):
        out[n] = rss()
print(json.dumps(out))
"""


def rss_over(jobs: int, root: Path) -> dict[str, int]:
    done = subprocess.run(
        [str(PYTHON), "-c", _RSS, str(jobs), str(TESTS), str(root)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    result: dict[str, int] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--docs", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=200)
    args = parser.parse_args()
    print(f"binary {TELHA}; load average {load()}")
    with tempfile.TemporaryDirectory(prefix="bench-docling-") as tmp:
        root = Path(tmp)
        pdf_dir = root / "pdf"
        pdf_dir.mkdir()
        pdf = pdf_dir / "pages.pdf"
        pdf.write_bytes(corpus.pages_pdf(args.pages))
        startup, warm = warm_pool(root / "serve", pdf, args.repeat)
        _, warm_alone = warm_pool(root / "serve-alone", pdf, args.repeat, helper=False)
        cold: dict[bool, list[float]] = {True: [], False: []}
        for n in range(args.repeat):  # alternating, so both see the same machine
            for helper in (True, False):
                run_dir = root / f"run-pdf-{n}-{'helper' if helper else 'alone'}"
                cold[helper].append(telha_run(run_dir, pdf_dir, helper=helper)[0])
        both = [bare_extraction(pdf) for _ in range(args.repeat)]
        bare, bare_process = [b[0] for b in both], [b[1] for b in both]
        bare_s, pages = statistics.median(bare), args.pages
        process_s = statistics.median(bare_process)
        print(f"PDF, {pages} text pages ({pdf.stat().st_size / 1e3:.0f} kB):")
        print(f"  docling-parse text lines alone:  {bare_s:.2f} s  {pages / bare_s:.1f} pages/s"
              f"  (runs {', '.join(f'{t:.2f}' for t in bare)} s; after its imports)")  # fmt: skip
        rate = pages / process_s
        print(f"  the same as a whole process:     {process_s:.2f} s  {rate:.1f} pages/s"
              f"  (runs {', '.join(f'{t:.2f}' for t in bare_process)} s; interpreter and "
              "imports included, as a cold run's are)")  # fmt: skip
        print(f"  warm pool start-up (apart):      {startup:.2f} s  (serve launched to a "
              "first one-page PDF job done)")  # fmt: skip
        rows = (
            ("warm pool, per job (core clock)", warm, "warm"),
            ("  the same, pdf_helper off", warm_alone, "warm, helper off"),
            ("telha run, cold, end to end", cold[True], "cold"),
            ("  the same, pdf_helper off", cold[False], "cold, helper off"),
        )
        for label, runs, _ in rows:
            median = statistics.median(runs)
            print(f"  {label + ':':<33}{median:.2f} s  {pages / median:.1f} pages/s"
                  f"  (runs {', '.join(f'{t:.2f}' for t in runs)} s)")  # fmt: skip
        for _, runs, name in rows:
            ratio = bare_s / statistics.median(runs)
            print(f"  ratio {name + ' / bare:':<26}{ratio:.2f}x of the bare pages/s")
        for _, runs, name in rows[2:]:
            ratio = process_s / statistics.median(runs)
            print(f"  ratio {name + ' / bare process:':<34}{ratio:.2f}x (cold against cold)")
        for fmt, data in (("docx", corpus.report_docx()), ("html", corpus.REPORT_HTML.encode())):
            docs = root / fmt
            docs.mkdir()
            for i in range(args.docs):
                (docs / f"doc-{i:03d}.{fmt}").write_bytes(data)
            elapsed, jobs = telha_run(root / f"run-{fmt}", docs)
            rate = len(jobs) / elapsed
            print(f"{fmt.upper()}: {len(jobs)} docs in {elapsed:.2f} s  {rate:.1f} docs/s")
        rss = rss_over(args.jobs, root)
        after10, after_n = rss["10"], rss[str(args.jobs)]
        growth = 100 * (after_n - after10) / after10
        print(
            f"worker RSS after 10 jobs {after10 / 1024:.0f} MB, after {args.jobs} jobs "
            f"{after_n / 1024:.0f} MB ({growth:+.1f} %)"
        )
    print(f"load average at the end {load()}")


if __name__ == "__main__":
    main()
