"""OCR of scanned PDF pages and of images (ocr.py, pdf_ocr.py, image_document.py): the
drawn words come back with page, bbox and `ocr` properties, the options do what the
README says, and bad images fail typed.

Tests that run tesseract skip when it is not installed, unless TELHA_E2E_REQUIRED=1,
which makes its absence a failure (scripts/system-deps.sh installs it)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from docling_worker import handle
from docling_worker.ocr import parse_hocr
from workers_common import WorkerFailure
from workers_common.conformance import check_submissions, run_handler

import docling_corpus as corpus

_MISSING = shutil.which("tesseract") is None
if _MISSING and os.environ.get("TELHA_E2E_REQUIRED") == "1":
    raise RuntimeError("TELHA_E2E_REQUIRED=1 but tesseract is not installed (system-deps.sh)")
needs_tesseract = pytest.mark.skipif(
    _MISSING, reason="tesseract is not installed (scripts/system-deps.sh installs it)"
)
_WORD = re.compile(r"[A-Za-z]{3,}")


def project(tmp_path: Path, fmt: str, data: bytes, **options: Any) -> dict[str, Any]:
    path = tmp_path / f"input.{fmt}"
    path.write_bytes(data)
    subs = run_handler(handle, path, format=fmt, name=path.name, options=options)
    check_submissions(subs)
    (sub,) = subs
    result: dict[str, Any] = json.loads(sub)
    return result


def failure(tmp_path: Path, fmt: str, data: bytes, **options: Any) -> WorkerFailure:
    with pytest.raises(WorkerFailure) as caught:
        project(tmp_path, fmt, data, **options)
    return caught.value


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def found_share(expected: str, got: str) -> float:
    """The share of `expected`'s words (3+ letters, with repeats) found in `got`."""
    want = words(expected)
    have: dict[str, int] = {}
    for word in words(got):
        have[word] = have.get(word, 0) + 1
    hits = 0
    for word in want:
        if have.get(word, 0) > 0:
            have[word] -= 1
            hits += 1
    return hits / max(1, len(want))


def text_nodes(sub: dict[str, Any]) -> list[dict[str, Any]]:
    kinds = {"PARAGRAPH", "SECTION", "LIST_ITEM", "FOOTNOTE", "CAPTION", "TABLE"}
    return [n for n in sub["nodes"] if kinds & set(n["labels"])]


def test_hocr_lines_become_points_with_the_y_axis_flipped() -> None:
    """A line 100 px high at 300 dpi on a 792 pt page: its box from baseline and size."""
    hocr = (
        b'<html xmlns="http://www.w3.org/1999/xhtml"><body>'
        b"<span class='ocr_line' title='bbox 300 600 900 700; baseline 0 -20; x_size 100;"
        b" x_descenders 20'><span class='ocrx_word' title='bbox 300 600 500 700; x_wconf 90'>"
        b"Hello</span> <span class='ocrx_word' title='bbox 550 600 900 700; x_wconf 70'>"
        b"&amp;c</span></span></body></html>"
    )
    text = parse_hocr(hocr, page=2, scale=(72 / 300, 72 / 300), height=792.0)
    (line,) = text.lines
    assert (line.page, line.text, line.font) == (2, "Hello &c", "ocr")
    assert (line.x0, line.x1) == (72.0, 216.0)
    # baseline at 700 - 20 = 680 px; box from 700 px (descenders) up to 600 px.
    assert (line.y0, line.y1) == (792.0 - 168.0, 792.0 - 144.0)
    assert text.confidence == {0: (160, 2)}


def test_without_tesseract_a_scan_is_unsupported_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    scan = corpus.scanned_text_pdf(dpi=72)
    caught = failure(tmp_path, "pdf", scan)
    assert caught.kind == "unsupported"
    assert "tesseract" in str(caught)
    caught = failure(tmp_path, "pdf", corpus.simple_pdf(), ocr="force")
    assert caught.kind == "unsupported"
    assert "tesseract" in str(caught)
    assert "pages_ocr" not in project(tmp_path, "pdf", corpus.simple_pdf())["stats"]
    caught = failure(tmp_path, "image", corpus.text_image())
    assert (caught.kind, "tesseract" in str(caught)) == ("unsupported", True)


def test_ocr_off_keeps_a_scan_unsupported(tmp_path: Path) -> None:
    caught = failure(tmp_path, "pdf", corpus.scanned_text_pdf(dpi=72), ocr="off")
    assert caught.kind == "unsupported"
    assert "no text layer" in str(caught)
    assert "ocr=off" in str(caught)


def test_bad_ocr_options_are_invalid_input(tmp_path: Path) -> None:
    pdf = corpus.simple_pdf()
    assert failure(tmp_path, "pdf", pdf, ocr="sometimes").kind == "invalid_input"
    assert failure(tmp_path, "pdf", pdf, ocr_lang="../etc").kind == "invalid_input"
    assert failure(tmp_path, "pdf", pdf, ocr_dpi=5).kind == "invalid_input"
    for endless in ("inf", "nan", "1e400"):
        assert failure(tmp_path, "pdf", pdf, max_ocr_pages=endless).kind == "invalid_input"


@needs_tesseract
@pytest.mark.timeout(120)
def test_scanned_pdf_reads_like_its_text_layer(tmp_path: Path) -> None:
    """report_pdf printed and scanned at 150 dpi: at least 90% of its words come back,
    laid out in the same kinds of nodes, each with page, bbox and OCR confidence."""
    original = project(tmp_path, "pdf", corpus.report_pdf())
    scanned = project(tmp_path, "pdf", corpus.scanned_text_pdf())
    assert found_share(original["canonicalText"], scanned["canonicalText"]) >= 0.9
    stats = scanned["stats"]
    assert (stats["pages_ocr"], stats.get("pages_ocr_skipped", 0)) == (3, 0)
    assert stats["nodes_section"] == original["stats"]["nodes_section"]
    nodes = text_nodes(scanned)
    assert len(nodes) >= 10
    for node in nodes:
        props = node["properties"]
        assert props["ocr"] is True, node
        assert isinstance(props["ocr_confidence"], int)
        assert 50 <= props["ocr_confidence"] <= 100
        assert props["page"] in (1, 2, 3)
        left, bottom, right, top = props["bbox"]
        assert 0 <= left < right <= 612, props
        assert 0 <= bottom < top <= 792, props
    assert "ocr" not in json.dumps([n["properties"] for n in text_nodes(original)])
    assert "pages_ocr" not in original["stats"]


@needs_tesseract
@pytest.mark.timeout(120)
def test_same_scan_gives_the_same_bytes(tmp_path: Path) -> None:
    scan = corpus.scanned_text_pdf()
    first = project(tmp_path, "pdf", scan)
    assert project(tmp_path, "pdf", scan) == first


@needs_tesseract
@pytest.mark.timeout(120)
def test_force_ocrs_a_born_digital_pdf(tmp_path: Path) -> None:
    sub = project(tmp_path, "pdf", corpus.simple_pdf(), ocr="force", ocr_dpi=200)
    assert sub["stats"]["pages_ocr"] == 1
    assert "Sample memo" in sub["canonicalText"]
    assert all(n["properties"].get("ocr") is True for n in text_nodes(sub))


@needs_tesseract
@pytest.mark.timeout(60)
@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "TIFF", "BMP", "WEBP"])
def test_an_image_is_one_ocr_page(fmt: str, tmp_path: Path) -> None:
    sub = project(tmp_path, "image", corpus.text_image(fmt=fmt))
    expected = "\n".join(corpus.SCAN_LINES)
    assert found_share(expected, sub["canonicalText"]) >= 0.9, sub["canonicalText"]
    document = sub["nodes"][0]["properties"]
    assert (document["source_format"], document["page_count"]) == ("image", 1)
    assert sub["stats"]["pages_ocr"] == 1
    # Points from the image's stated 300 dpi; WebP states none: one pixel, one point.
    width = 1800 if fmt == "WEBP" else 1800 * 72 / 300
    for node in text_nodes(sub):
        props = node["properties"]
        assert props["page"] == 1
        assert props["ocr"] is True
        assert len(props["bbox"]) == 4
        left, bottom, right, top = props["bbox"]
        assert 0 <= left < right <= width, props
        assert bottom < top, props


@needs_tesseract
@pytest.mark.timeout(60)
def test_a_tiny_page_timeout_skips_and_counts_the_pages(tmp_path: Path) -> None:
    sub = project(tmp_path, "pdf", corpus.scanned_text_pdf(), ocr_page_timeout=0.001)
    assert (sub["stats"]["pages_ocr"], sub["stats"]["pages_ocr_skipped"]) == (0, 3)
    sub = project(tmp_path, "image", corpus.text_image(), ocr_page_timeout=0.001)
    assert sub["stats"]["pages_ocr_skipped"] == 1


@needs_tesseract
def test_ocr_limits_and_languages_fail_typed(tmp_path: Path) -> None:
    scan = corpus.scanned_text_pdf(dpi=72)
    caught = failure(tmp_path, "pdf", scan, max_ocr_pages=2)
    assert caught.kind == "too_large"
    assert "max_ocr_pages=2" in str(caught)
    caught = failure(tmp_path, "image", corpus.text_image(), ocr_lang="xyz")
    assert caught.kind == "unsupported"
    assert "xyz" in str(caught)
    caught = failure(tmp_path, "image", corpus.text_image(), max_image_pixels=1000)
    assert caught.kind == "too_large"
    assert "max_image_pixels=1000" in str(caught)
    assert failure(tmp_path, "image", corpus.text_image(), ocr="off").kind == "unsupported"


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (corpus.text_image()[:600], "invalid_input"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "invalid_input"),
        (b"%PDF-1.7 not an image", "invalid_input"),
    ],
)
def test_broken_images_are_invalid_input(data: bytes, kind: str, tmp_path: Path) -> None:
    if _MISSING and data.startswith(b"\x89PNG") and len(data) > 100:
        pytest.skip("a truncated image needs tesseract's absence checked after decoding")
    assert failure(tmp_path, "image", data).kind == kind
