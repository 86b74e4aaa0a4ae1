"""bench/docling: documents through `telha run` end to end, beside docling-parse's bare
text extraction of the same PDF in the same run.

    .venv/bin/python bench/docling.py [--pages 200] [--docs 50] [--jobs 200]

- A generated PDF of --pages text pages (docling_corpus.pages_pdf) through `telha run`
  with one docling worker, until the job is succeeded (graph visible): pages/s. Beside
  it, docling-parse alone decoding every page's text lines of the same file (in a fresh
  interpreter, line cells only, no layout, no projection; interpreter start and imports
  not counted, while the end-to-end figure counts the core's and worker's start-up):
  pages/s and the ratio.
- --docs DOCX files and --docs HTML files (the golden corpus's, one per job) through
  `telha run`: docs/s, worker start-up included.
- The worker's resident size after 10 and after --jobs jobs of a PDF/DOCX/HTML/Markdown
  mix, in one long-lived process running the handler back to back (what a worker does
  between polls, without recycling).
The binary is target/release/telha (or TELHA_BIN). Prints plain figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv" / "bin" / "python"
TELHA = Path(os.environ.get("TELHA_BIN") or ROOT / "target" / "release" / "telha")
TESTS = ROOT / "workers" / "docling" / "tests"
sys.path.insert(0, str(TESTS))

import docling_corpus as corpus  # noqa: E402


def config(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "supervisor.toml"
    path.write_text(
        f'[server]\nlisten = "127.0.0.1:0"\ndata_dir = "{root / "data"}"\n'
        '[pools.docling]\nformats = ["pdf", "docx", "html", "md", "docling"]\nworkers = 1\n'
        f'command = ["{PYTHON}", "-m", "docling_worker"]\njob_timeout_secs = 600\n'
        "[pools.docling.limits]\nmemory_mb = 3072\ncpu_secs = 600\nopen_files = 256\n"
    )
    return path


def telha_run(root: Path, inputs: Path) -> tuple[float, list[dict[str, object]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TELHA_")}
    start = time.perf_counter()
    done = subprocess.run(
        [str(TELHA), "--config", str(config(root)), "run", "--json", str(inputs)],
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


def bare_extraction(pdf: Path) -> float:
    done = subprocess.run(
        [str(PYTHON), "-c", _BARE, str(pdf)], capture_output=True, text=True, check=True
    )
    return float(done.stdout.split()[0])


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
    parser.add_argument("--docs", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=200)
    args = parser.parse_args()
    print(f"binary {TELHA}")
    with tempfile.TemporaryDirectory(prefix="bench-docling-") as tmp:
        root = Path(tmp)
        pdf_dir = root / "pdf"
        pdf_dir.mkdir()
        pdf = pdf_dir / "pages.pdf"
        pdf.write_bytes(corpus.pages_pdf(args.pages))
        elapsed, _ = telha_run(root / "run-pdf", pdf_dir)
        bare = bare_extraction(pdf)
        print(f"PDF, {args.pages} text pages ({pdf.stat().st_size / 1e3:.0f} kB):")
        print(
            f"  telha run, end to end:          {elapsed:.2f} s  {args.pages / elapsed:.1f} pages/s"
        )
        print(f"  docling-parse text lines alone: {bare:.2f} s  {args.pages / bare:.1f} pages/s")
        print(f"  ratio (end to end / bare):      {bare / elapsed:.2f}x of the bare pages/s")
        for fmt, data in (("docx", corpus.report_docx()), ("html", corpus.REPORT_HTML.encode())):
            docs = root / fmt
            docs.mkdir()
            for i in range(args.docs):
                (docs / f"doc-{i:03d}.{fmt}").write_bytes(data)
            elapsed, jobs = telha_run(root / f"run-{fmt}", docs)
            print(
                f"{fmt.upper()}: {len(jobs)} docs in {elapsed:.2f} s  {len(jobs) / elapsed:.1f} docs/s"
            )
        rss = rss_over(args.jobs, root)
        after10, after_n = rss["10"], rss[str(args.jobs)]
        growth = 100 * (after_n - after10) / after10
        print(
            f"worker RSS after 10 jobs {after10 / 1024:.0f} MB, after {args.jobs} jobs "
            f"{after_n / 1024:.0f} MB ({growth:+.1f} %)"
        )


if __name__ == "__main__":
    main()
