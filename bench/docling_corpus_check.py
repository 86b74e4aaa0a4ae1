"""The docling worker's handler over real documents: every PDF under /usr/share/doc
(gzipped ones decompressed first), every HTML file there, and a sample of the Rust
toolchain's HTML docs (plus their largest pages), each as one job.

    .venv/bin/python bench/docling_corpus_check.py [--rust-sample 400] [--timeout 300]

One long-lived child process runs the handler job after job, as a worker does, under the
shipped pool's address-space limit (memory_mb = 3072); a job that runs past --timeout is
killed with its child (a fresh one takes the next file). Each file ends as succeeded,
a typed failure (invalid_input, unsupported, too_large: the worker's permanent
failures), crashed (any other exception, or the child dying) or hung (killed at the
timeout). Progress goes to stderr. Prints the counts by outcome and format, every file
that did not succeed, and for PDFs the structure found (pages, sections, tables,
figures).
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import gzip
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv" / "bin" / "python"
MEMORY_MB = 3072
RUST_DOCS = "~/.rustup/toolchains/stable-*/share/doc/rust/html"

CHILD = """
import json, resource, sys, traceback
resource.setrlimit(resource.RLIMIT_AS, (MEMORY << 20, MEMORY << 20))
from docling_worker import handle
from workers_common import InvalidInput, TooLarge, Unsupported
from workers_common.conformance import run_handler
TYPED = {InvalidInput: "invalid_input", Unsupported: "unsupported", TooLarge: "too_large"}
for line in sys.stdin:
    path, fmt = json.loads(line)
    try:
        [raw] = run_handler(handle, path, format=fmt, name=path)
        sub = json.loads(raw)
        out = {"outcome": "succeeded", "stats": sub.get("stats", {}),
               "pages": sub["nodes"][0]["properties"].get("page_count")}
    except tuple(TYPED) as err:
        kind = next(v for k, v in TYPED.items() if isinstance(err, k))
        out = {"outcome": kind, "detail": str(err)[:200]}
    except BaseException as err:
        out = {"outcome": "crashed", "detail": f"{type(err).__name__}: {str(err)[:200]}",
               "trace": traceback.format_exc()[-1500:]}
    print(json.dumps(out), flush=True)
""".replace("MEMORY", str(MEMORY_MB))


class Child:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [str(PYTHON), "-c", CHILD],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip

    def run(self, path: Path, fmt: str, timeout: float) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps([str(path), fmt]) + "\n")
        self.process.stdin.flush()
        with selectors.DefaultSelector() as sel:
            sel.register(self.process.stdout, selectors.EVENT_READ)
            if not sel.select(timeout):
                self.kill()
                return {"outcome": "hung", "detail": f"no result in {timeout:.0f} s"}
        line = self.process.stdout.readline()
        if not line:
            code = self.process.wait()
            return {"outcome": "crashed", "detail": f"the child died (exit {code})"}
        result: dict[str, Any] = json.loads(line)
        return result

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, 9)
        self.process.wait()


def inputs(rust_sample: int, tmp: Path) -> list[tuple[Path, str, str]]:
    """(path to read, format, name shown) for every file checked."""
    out: list[tuple[Path, str, str]] = []
    for path in sorted(Path("/usr/share/doc").rglob("*")):
        name = path.name.lower()
        if not path.is_file():
            continue
        if name.endswith(".pdf"):
            out.append((path, "pdf", str(path)))
        elif name.endswith(".pdf.gz"):
            plain = tmp / f"{len(out)}-{path.name[:-3]}"
            plain.write_bytes(gzip.decompress(path.read_bytes()))
            out.append((plain, "pdf", str(path)))
        elif name.endswith((".html", ".htm")):
            out.append((path, "html", str(path)))
        elif name.endswith((".html.gz", ".htm.gz")):
            plain = tmp / f"{len(out)}-{path.name[:-3]}"
            plain.write_bytes(gzip.decompress(path.read_bytes()))
            out.append((plain, "html", str(path)))
    docs = sorted(glob.glob(os.path.expanduser(RUST_DOCS)))
    if docs and rust_sample > 0:
        pages = sorted(Path(docs[0]).rglob("*.html"))
        step = max(1, len(pages) // rust_sample)
        chosen = set(pages[::step][:rust_sample])
        chosen.update(sorted(pages, key=lambda p: -p.stat().st_size)[:20])  # the largest
        out += [(p, "html", str(p)) for p in sorted(chosen)]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rust-sample", type=int, default=400)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    outcomes: Counter[tuple[str, str]] = Counter()
    notes: list[str] = []
    structure: list[str] = []
    with tempfile.TemporaryDirectory(prefix="docling-corpus-") as tmp:
        files = inputs(args.rust_sample, Path(tmp))
        child = Child()
        started = time.perf_counter()
        for path, fmt, name in files:
            began = time.perf_counter()
            result = child.run(path, fmt, args.timeout)
            took = time.perf_counter() - began
            outcomes[(fmt, result["outcome"])] += 1
            if result["outcome"] in ("hung", "crashed"):
                child.kill()
                child = Child()
            done = sum(outcomes.values())
            if result["outcome"] != "succeeded" or done % 50 == 0:
                print(f"[{done}/{len(files)}] {result['outcome']} {name}", file=sys.stderr)
            if result["outcome"] != "succeeded":
                notes.append(f"  {result['outcome']:<13} {name}: {result.get('detail', '')}")
                if "trace" in result:
                    notes.append(result["trace"])
            elif fmt == "pdf":
                s = result["stats"]
                structure.append(
                    f"  {name}: {result['pages']} pages in {took:.1f} s, "
                    f"{s.get('nodes_section', 0)} sections, {s.get('nodes_paragraph', 0)} "
                    f"paragraphs, {s.get('nodes_table', 0)} tables, {s.get('nodes_figure', 0)} "
                    f"figures, {s.get('page_headers', 0)}+{s.get('page_footers', 0)} "
                    "headers+footers removed"
                )
        child.kill()
        elapsed = time.perf_counter() - started
    print(f"{len(files)} files in {elapsed:.0f} s")
    for (fmt, outcome), n in sorted(outcomes.items()):
        print(f"  {fmt:<5} {outcome:<13} {n}")
    print("PDFs:")
    print("\n".join(structure))
    if notes:
        print("not succeeded:")
        print("\n".join(notes))
    bad = sum(n for (_, outcome), n in outcomes.items() if outcome in ("hung", "crashed"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
