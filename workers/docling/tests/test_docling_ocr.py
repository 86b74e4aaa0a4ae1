"""OCR of scanned PDF pages and of images (ocr.py, pdf_ocr.py, image_document.py): the
drawn words come back with page, bbox and `ocr` properties, the options do what the
README says, and bad images fail typed.

Tests that run tesseract skip when it is not installed, unless TELHA_E2E_REQUIRED=1,
which makes its absence a failure (scripts/system-deps.sh installs it)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from docling_worker import handle
from docling_worker.ocr import parse_hocr
from workers_common import WorkerFailure
from workers_common.conformance import check_submissions, run_handler

import docling_corpus as corpus
from hostile import raw_tiff

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
@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "TIFF", "BMP", "WEBP", "GIF", "PPM"])
def test_an_image_is_one_ocr_page(fmt: str, tmp_path: Path) -> None:
    sub = project(tmp_path, "image", corpus.text_image(fmt=fmt))
    expected = "\n".join(corpus.SCAN_LINES)
    assert found_share(expected, sub["canonicalText"]) >= 0.9, sub["canonicalText"]
    document = sub["nodes"][0]["properties"]
    assert (document["source_format"], document["page_count"]) == ("image", 1)
    assert sub["stats"]["pages_ocr"] == 1
    # Points from the image's stated 300 dpi; WebP, GIF and Netpbm state none: one pixel,
    # one point.
    width = 1800 if fmt in ("WEBP", "GIF", "PPM") else 1800 * 72 / 300
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


def tiff(pages: list[Any], **encoder: Any) -> bytes:
    """Pillow images (with their `encoderinfo`: dpi, tiffinfo) as one multi-page TIFF;
    what the first frame's says is every later frame's default."""
    from PIL import Image

    frames: list[Image.Image] = list(pages)
    for frame in frames:
        frame.encoderinfo = {**encoder, **getattr(frame, "encoderinfo", {})}
    out = io.BytesIO()
    frames[0].save(out, "TIFF", save_all=True, append_images=frames[1:], **frames[0].encoderinfo)
    return out.getvalue()


def page_words(sub: dict[str, Any]) -> dict[int, list[str]]:
    """Each page's words, from its text nodes in document order."""
    out: dict[int, list[str]] = {}
    for node in text_nodes(sub):
        for ref in node["spanRefs"]:
            span = sub["spans"][ref]
            text = sub["canonicalText"][span["start"] : span["end"]]
            out.setdefault(node["properties"]["page"], []).extend(words(text))
    return out


@needs_tesseract
@pytest.mark.timeout(120)
def test_a_multipage_tiff_is_one_ocr_page_per_frame_in_order(tmp_path: Path) -> None:
    """Three frames with distinct words at 300, 200 and 150 dpi: three pages, numbered in
    frame order, each with its own words and its own size in points."""
    dpis = ((300, 300), (200, 200), (150, 150))
    sub = project(tmp_path, "image", corpus.multipage_tiff(dpis=dpis))
    document = sub["nodes"][0]["properties"]
    assert document["page_count"] == 3
    stats = sub["stats"]
    assert (stats["pages_ocr"], stats["pages_without_text"]) == (3, 0)
    assert "pages_ocr_skipped" not in stats
    found = page_words(sub)
    assert sorted(found) == [1, 2, 3]
    for number, lines in enumerate(corpus.TIFF_PAGES, start=1):
        # Every page's words on that page, in the order drawn.
        assert found[number] == words(" ".join(lines)), (number, found[number])
    for node in text_nodes(sub):
        props = node["properties"]
        assert props["ocr"] is True
        dpi = dpis[props["page"] - 1][0]
        left, bottom, right, top = props["bbox"]
        # Text drawn from x = 80 px, on a page 1800 px wide: in that page's points.
        assert abs(left - 80 * 72 / dpi) < 3, props
        assert right <= 1800 * 72 / dpi
        assert 0 <= bottom < top <= 260 * 72 / dpi


@needs_tesseract
@pytest.mark.timeout(120)
def test_the_same_tiff_gives_the_same_bytes(tmp_path: Path) -> None:
    data = corpus.multipage_tiff()
    path = tmp_path / "pages.tif"
    path.write_bytes(data)
    first = run_handler(handle, path, format="image", name=path.name, options={})
    assert run_handler(handle, path, format="image", name=path.name, options={}) == first


@needs_tesseract
@pytest.mark.timeout(60)
def test_a_single_page_tiff_reads_as_the_same_pixels_in_a_png(tmp_path: Path) -> None:
    """One frame: one page, exactly the submission the same image gives as a PNG."""
    from PIL import Image

    png = corpus.text_image()
    single = tiff([Image.open(io.BytesIO(png))], dpi=(300, 300))
    assert project(tmp_path, "image", single) == project(tmp_path, "image", png)


def test_tiff_pages_over_the_page_cap_are_too_large(tmp_path: Path) -> None:
    """The cap is the smaller of max_ocr_pages and max_pages, checked before any page is
    decoded or OCR'd (so without tesseract too)."""
    data = corpus.multipage_tiff()
    caught = failure(tmp_path, "image", data, max_ocr_pages=2)
    assert caught.kind == "too_large"
    assert "more than 2 pages, over max_ocr_pages=2" in str(caught)
    caught = failure(tmp_path, "image", data, max_pages=2)
    assert (caught.kind, "max_pages=2" in str(caught)) == ("too_large", True)


@pytest.mark.timeout(60)
def test_a_100000_page_tiff_is_refused_after_reading_the_cap(tmp_path: Path) -> None:
    """Pillow's n_frames would walk all 100,000 directories (80 s here); the cap stops
    the walk at 201."""
    data = raw_tiff([(10, 5)] * 100_000)
    started = time.monotonic()
    caught = failure(tmp_path, "image", data)
    assert caught.kind == "too_large"
    assert "more than 200 pages, over max_ocr_pages=200" in str(caught)
    assert time.monotonic() - started < 10


def test_a_tiff_page_over_max_image_pixels_is_too_large(tmp_path: Path) -> None:
    """Page 2 is 1800 x 540 pixels; pages 1 and 3 are 1800 x 260: page 2 is named."""
    pages = (corpus.TIFF_PAGES[0], corpus.TIFF_PAGES[1] * 3, corpus.TIFF_PAGES[2])
    caught = failure(tmp_path, "image", corpus.multipage_tiff(pages), max_image_pixels=500_000)
    assert caught.kind == "too_large"
    assert "page 2 of the image of 1800x540 pixels" in str(caught)
    # Declared 60,000 x 60,000 over 50 bytes: refused from its directory, never decoded.
    caught = failure(tmp_path, "image", raw_tiff([(10, 5), (60_000, 60_000)]))
    assert (caught.kind, "page 2" in str(caught)) == ("too_large", True)


def test_a_broken_tiff_page_fails_the_job_naming_it(tmp_path: Path) -> None:
    """A page that cannot be read or decoded is invalid_input before any OCR, as a PDF
    page that cannot be decoded: never a document with a page silently missing."""
    caught = failure(tmp_path, "image", raw_tiff([(10, 5)] * 3, next_after_last=10**9))
    assert (caught.kind, "page 4 of the TIFF cannot be read" in str(caught)) == (
        "invalid_input",
        True,
    )
    caught = failure(tmp_path, "image", raw_tiff([(10, 5), (100, 100)]))
    assert caught.kind == "invalid_input"
    assert "page 2 of the image cannot be decoded" in str(caught)
    data = corpus.multipage_tiff(compression="raw")
    caught = failure(tmp_path, "image", data[: len(data) * 2 // 3])
    assert caught.kind == "invalid_input"


@needs_tesseract
@pytest.mark.timeout(120)
def test_each_tiff_page_is_turned_upright_and_squared_on_its_own(tmp_path: Path) -> None:
    """Page 1 stored sideways with EXIF orientation 6; page 2 a fax in normal mode (204 x
    98 dpi, its text squashed to half height): both read, each page its true size."""
    from PIL import Image

    first, second = (Image.open(io.BytesIO(corpus.text_image(p))) for p in corpus.TIFF_PAGES[:2])
    sideways = first.rotate(90, expand=True)  # counter-clockwise; orientation 6 turns it back
    sideways.encoderinfo = {"dpi": (300, 300), "tiffinfo": {274: 6}}
    fax = second.resize((second.width, round(second.height * 98 / 204)))
    fax.encoderinfo = {"dpi": (204, 98), "tiffinfo": {274: 1}}  # not the first's 6
    sub = project(tmp_path, "image", tiff([sideways, fax]))
    found = page_words(sub)
    for number, lines in enumerate(corpus.TIFF_PAGES[:2], start=1):
        assert found[number] == words(" ".join(lines)), (number, found[number])
    for node in text_nodes(sub):
        props = node["properties"]
        left, bottom, right, top = props["bbox"]
        if props["page"] == 1:
            assert (right <= 1800 * 72 / 300, top <= 260 * 72 / 300) == (True, True), props
        else:
            # 1800 px at 204 dpi wide, 125 px at 98 dpi high: 635 x 92 points.
            assert abs(left - 80 * 72 / 204) < 3, props
            assert (right <= 1800 * 72 / 204, top <= fax.height * 72 / 98) == (True, True), props
            assert top - bottom > 6, props  # a line's height as drawn, not squashed
