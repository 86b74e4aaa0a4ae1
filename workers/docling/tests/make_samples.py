"""Writes the docling samples under samples/ from the golden corpus's makers (byte-stable:
fixed dates, no clock). Run from the repo root: `.venv/bin/python
workers/docling/tests/make_samples.py`; `--check` fails when a committed sample differs."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import docling_corpus as corpus

SAMPLES: dict[str, Callable[[], bytes]] = {
    "memo.pdf": corpus.simple_pdf,
    "supply-agreement.docx": corpus.report_docx,
    "quarterly-review.pptx": corpus.deck_pptx,
    "supply-agreement.odt": corpus.report_odt,
    "field-guide.epub": corpus.book_epub,
    "field-notes.tex": lambda: corpus.PAPER_TEX.encode(),
    "service-terms.html": lambda: corpus.REPORT_HTML.encode(),
    "release-notes.md": lambda: corpus.REPORT_MD.encode(),
    # A photographed page: the `image` format, read by OCR (needs tesseract).
    "inspection-notes.png": corpus.text_image,
    # A scanner's multi-page TIFF: three pages, one per frame, each read by OCR.
    "site-reports.tif": corpus.multipage_tiff,
    # RTF as WordPad writes it: LibreOffice makes it a DOCX inside the job (the `rtf` format).
    "site-visit.rtf": lambda: corpus.LETTER_RTF,
    # A web page saved as one file (MHTML, as Chrome saves it).
    "cafe-hours.mht": corpus.saved_page_mhtml,
}


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parents[3] / "samples"
    stale = []
    for name, make in SAMPLES.items():
        path = root / name
        data = make()
        if "--check" in argv:
            if not path.is_file() or path.read_bytes() != data:
                stale.append(name)
        else:
            path.write_bytes(data)
    for name in stale:
        print(f"make_samples: samples/{name} differs from what the corpus makes", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
