"""End to end through the real binary: `telha run` with a docling pool of real worker
processes over good documents and a representative set of hostile ones. Each hostile
file's job dies at its first attempt with its typed permanent failure (no retry, no
crash), and every good job succeeds, before and after them, on the same pool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import docling_corpus as corpus
from hostile import HOSTILE

REPO_ROOT = Path(__file__).resolve().parents[3]
TELHA_BIN = Path(os.environ.get("TELHA_BIN") or REPO_ROOT / "target" / "debug" / "telha")
MISSING = not (TELHA_BIN.is_file() and os.access(TELHA_BIN, os.X_OK))
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        MISSING and os.environ.get("TELHA_E2E_REQUIRED") != "1", reason=f"no {TELHA_BIN}"
    ),
]

REPRESENTATIVE = [
    "pdf-encrypted", "pdf-scanned", "pdf-zero-pages", "pdf-10000-pages", "pdf-cyclic-page-tree",
    "docx-zip-bomb", "docx-no-document-xml", "doc-not-ole", "rtf-cut-short",
    "pptx-zip-bomb", "pptx-truncated",
    "odt-zip-bomb", "odt-is-a-presentation", "epub-zip-bomb", "epub-external-entity",
    "html-nested-100000", "md-million-list-items",
    "json-other-tool", "json-nested-million", "json-cycle",
    "image-truncated", "image-pixel-bomb", "image-tiff-100000-pages",
    "image-tiff-page-3-broken-directory",
]  # fmt: skip


def run(tmp_path: Path, inputs: Path) -> dict[str, Any]:
    config = tmp_path / "supervisor.toml"
    config.write_text(
        f'[server]\nlisten = "127.0.0.1:0"\ndata_dir = "{tmp_path / "data"}"\n'
        "[jobs]\nmax_attempts = 3\nlease_secs = 60\nbackoff_base_ms = 50\nbackoff_max_ms = 200\n"
        '[pools.docling]\nformats = ["pdf", "image", "docx", "pptx", "odt", "odp", "epub", "html",'
        ' "md", "latex", "docling", "doc", "ppt", "rtf", "mhtml"]\nworkers = 1\n'
        f'command = ["{sys.executable}", "-m", "docling_worker"]\njob_timeout_secs = 120\n'
        "max_jobs_per_worker = 200\n"
        "[pools.docling.limits]\nmemory_mb = 3072\ncpu_secs = 300\nopen_files = 256\n"
    )
    done = subprocess.run(
        [str(TELHA_BIN), "--config", str(config), "run", "--json", str(inputs)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.stdout, done.stderr[-3000:]
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


@pytest.mark.timeout(660)
def test_hostile_inputs_die_once_typed_and_good_jobs_succeed(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a-first.pdf").write_bytes(corpus.report_pdf())
    expected: dict[str, str] = {}
    for name in REPRESENTATIVE:
        fmt, make, kind = HOSTILE[name]
        suffix = {"docling": "json", "image": "png"}.get(fmt, fmt)
        suffix = "tif" if name.startswith("image-tiff") else suffix
        (inputs / f"h-{name}.{suffix}").write_bytes(make())
        expected[f"h-{name}.{suffix}"] = kind
    (inputs / "z-last.docx").write_bytes(corpus.report_docx())
    (inputs / "z-last.pptx").write_bytes(corpus.deck_pptx())
    (inputs / "z-last.odt").write_bytes(corpus.report_odt())
    (inputs / "z-last.odp").write_bytes(corpus.deck_odp())
    (inputs / "z-last.epub").write_bytes(corpus.book_epub())
    (inputs / "z-last.tex").write_text(corpus.PAPER_TEX)
    (inputs / "z-last.html").write_text(corpus.REPORT_HTML)
    (inputs / "z-last.md").write_text(corpus.REPORT_MD)
    (inputs / "z-last.json").write_bytes(corpus.docling_json(corpus.docling_tables()))
    # Word and PowerPoint 97-2003 and RTF: LibreOffice, run by the worker, inside its job.
    (inputs / "z-last.doc").write_bytes(
        corpus.saved_by_libreoffice(corpus.report_docx(), "docx", "doc")
    )
    (inputs / "z-last.ppt").write_bytes(
        corpus.saved_by_libreoffice(corpus.deck_pptx(), "pptx", "ppt")
    )
    (inputs / "z-last.rtf").write_bytes(corpus.LETTER_RTF)
    (inputs / "z-last.mht").write_bytes(corpus.saved_page_mhtml())
    # Figures with CAPTION_OF edges and a table with wrapped cells, through the core.
    (inputs / "z-last-figures.pdf").write_bytes(corpus.figure_pdf())
    (inputs / "z-last-wrapped.pdf").write_bytes(corpus.wrapped_table_pdf())
    # A scanned page and a photo of text, through OCR (tesseract from the worker's PATH).
    (inputs / "z-last-scan.pdf").write_bytes(corpus.scanned_text_pdf(corpus.simple_pdf()))
    (inputs / "z-last.png").write_bytes(corpus.text_image())
    (inputs / "z-last-pages.tif").write_bytes(corpus.multipage_tiff())
    jobs = {Path(job["name"]).name: job for job in run(tmp_path, inputs)["jobs"]}
    for name, job in jobs.items():
        if name in expected and expected[name] == "ok":
            # A hostile input the worker must survive and project (another tool's JSON).
            assert job["state"] == "succeeded", job
        elif name in expected:
            assert job["state"] == "dead", job
            assert job["attempts"] == 1, job
            (failure,) = job["failures"]
            assert failure["permanent"], failure
            assert failure["kind"] == expected[name], (name, failure["reason"])
        else:
            assert job["state"] == "succeeded", job
    assert len(jobs) == len(expected) + 19
    assert jobs["z-last.pptx"]["node_count"] >= 8  # DOCUMENT, SECTIONs, LIST, TABLE, ...
    assert jobs["z-last.odt"]["node_count"] >= 11  # DOCUMENT, 3 SECTIONs, LIST, TABLE, ...
    assert jobs["z-last.doc"]["node_count"] >= 11
    assert jobs["z-last.ppt"]["node_count"] >= 8
    assert jobs["z-last.rtf"]["node_count"] >= 6  # DOCUMENT, PARAGRAPHs, TABLE, LIST, ITEM
    assert jobs["z-last.mht"]["node_count"] >= 5  # DOCUMENT, PARAGRAPH, LIST, 2 ITEMs
    assert jobs["z-last.odp"]["node_count"] >= 7
    assert jobs["z-last.epub"]["node_count"] >= 9
    assert jobs["z-last.tex"]["node_count"] >= 12
    assert jobs["z-last-figures.pdf"]["node_count"] >= 10  # DOCUMENT, 3 FIGUREs, 2 CAPTIONs, ...
    assert jobs["z-last-scan.pdf"]["node_count"] >= 3  # DOCUMENT, PARAGRAPHs from OCR
    assert jobs["z-last.png"]["node_count"] >= 2
    assert jobs["z-last-pages.tif"]["node_count"] >= 7  # DOCUMENT, a SECTION and PARAGRAPH a page
