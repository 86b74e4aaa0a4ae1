"""OCR of scanned pages, measured on real PDFs: every PDF under /usr/share/doc (gzipped
ones decompressed), its first --pages pages printed to grey pixels at --scan-dpi with
pypdfium2 and wrapped back into an image-only PDF with Pillow (what a scanner would make
of the printout), then run through the docling worker's handler twice: the born-digital
file (its text layer) and the scan (OCR, default options: ocr=auto, 300 dpi, eng).

    .venv/bin/python bench/ocr_check.py [--pages 4] [--scan-dpi 150] [--ocr-dpi 300]

Prints, per file and overall: seconds per OCR'd page, the share of the text layer's words
(3+ letters, repeats counted) found in the OCR'd canonical text, the mean `ocr_confidence`,
the peak resident size of this process (the worker's handler, ru_maxrss) and of tesseract
on each file's first page (its VmHWM, polled from /proc: a child's ru_maxrss would count
the parent's pages it was forked with). Each file is
projected twice more to check the projection's bytes do not change between runs.
Needs tesseract (scripts/system-deps.sh) and the repo's .venv; no release binary.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_WORD = re.compile(r"[A-Za-z]{3,}")


def pdfs() -> list[Path]:
    found = sorted(Path("/usr/share/doc").rglob("*.pdf")) + sorted(
        Path("/usr/share/doc").rglob("*.pdf.gz")
    )
    return [p for p in found if p.is_file()]


def read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def first_pages(data: bytes, pages: int) -> bytes:
    """The file cut to its first `pages` pages (pypdfium2's page import)."""
    import pypdfium2 as pdfium

    source = pdfium.PdfDocument(data)
    out = pdfium.PdfDocument.new()
    try:
        out.import_pages(source, list(range(min(pages, len(source)))))
        buffer = io.BytesIO()
        out.save(buffer)
        return buffer.getvalue()
    finally:
        out.close()
        source.close()


def project(data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    from docling_worker import handle
    from workers_common.conformance import run_handler

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input.pdf"
        path.write_bytes(data)
        (sub,) = run_handler(handle, path, format="pdf", name="input.pdf", options=options)
    result: dict[str, Any] = json.loads(sub)
    return result


def found_share(expected: str, got: str) -> tuple[int, int]:
    """(words of `expected` found in `got`, words of `expected`), repeats counted."""
    want = [w.lower() for w in _WORD.findall(expected)]
    have = Counter(w.lower() for w in _WORD.findall(got))
    hits = 0
    for word in want:
        if have[word] > 0:
            have[word] -= 1
            hits += 1
    return hits, len(want)


def tesseract_peak(data: bytes, dpi: int) -> float:
    """tesseract's peak resident MiB on the first page of `data` rendered at `dpi`."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(data)
    try:
        page = document[0]
        image = page.render(scale=dpi / 72, grayscale=True).to_pil()
        page.close()
    finally:
        document.close()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "page.png"
        image.save(path)
        env = {**os.environ, "OMP_THREAD_LIMIT": "1", "LC_ALL": "C"}
        args = ["tesseract", str(path), "stdout", "-l", "eng", "--dpi", str(dpi), "hocr"]
        child = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )
        peak = 0
        status = Path(f"/proc/{child.pid}/status")
        while child.poll() is None:
            try:
                for line in status.read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
    return peak / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=4, help="first pages of each PDF")
    parser.add_argument("--scan-dpi", type=int, default=150, help="the simulated scan's dpi")
    parser.add_argument("--ocr-dpi", type=int, default=300, help="the worker's ocr_dpi")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "workers" / "docling" / "src"))
    # The test corpus's scan: the same printout-and-scanner the OCR tests read.
    sys.path.insert(0, str(ROOT / "workers" / "docling" / "tests"))
    import docling_corpus as corpus

    files = pdfs()
    if not files:
        print("no PDF under /usr/share/doc", file=sys.stderr)
        return 1
    total_hits = total_words = total_pages = 0
    total_secs = 0.0
    stable = True
    tesseract_mib = 0.0
    print(f"{'file':<34} {'pages':>5} {'s/page':>7} {'words':>6} {'found':>6} {'conf':>5}")
    for path in files:
        born = first_pages(read(path), args.pages)
        scanned = corpus.scanned_text_pdf(born, args.scan_dpi)
        text = project(born, {})["canonicalText"]
        options = {"ocr_dpi": args.ocr_dpi}
        start = time.perf_counter()
        sub = project(scanned, options)
        secs = time.perf_counter() - start
        stable &= json.dumps(project(scanned, options)) == json.dumps(sub)
        tesseract_mib = max(tesseract_mib, tesseract_peak(born, args.ocr_dpi))
        pages = sub["stats"].get("pages_ocr", 0)
        hits, words = found_share(text, sub["canonicalText"])
        props = [n["properties"] for n in sub["nodes"]]
        confs = [p["ocr_confidence"] for p in props if "ocr_confidence" in p]
        conf = sum(confs) / len(confs) if confs else 0.0
        total_hits, total_words = total_hits + hits, total_words + words
        total_pages, total_secs = total_pages + pages, total_secs + secs
        share = hits / words if words else 1.0
        print(
            f"{path.name[:34]:<34} {pages:>5} {secs / max(1, pages):>7.2f} {words:>6} "
            f"{share:>6.1%} {conf:>5.0f}"
        )
    self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"overall: {total_pages} pages OCR'd, {total_secs / max(1, total_pages):.2f} s/page, "
        f"{total_hits}/{total_words} words found ({total_hits / max(1, total_words):.1%}); "
        f"peak RSS: worker {self_rss:.0f} MiB, tesseract {tesseract_mib:.0f} MiB; "
        f"same bytes on a second run: {'yes' if stable else 'NO'}"
    )
    return 0 if stable else 1


if __name__ == "__main__":
    sys.exit(main())
