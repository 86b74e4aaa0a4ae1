"""OCR of a PDF's pages that have no text layer (or of every page, `ocr=force`).

Which pages: under `ocr=auto`, a page with no text line that shows an image (a scan; a
blank or vector-only page is left alone, it has nothing tesseract would read); under
`force`, every page (its OCR'd lines replace its text layer); under `off`, none. Each page
is rendered by pdfium at `ocr_dpi` in grey (lowered for a page so large that it would
pass `max_image_pixels`) and read by tesseract (ocr.py). A page where OCR read text loses
its own image boxes: on a scan, the image is the text just read, not a figure; a page
where it read nothing keeps them (a photo, a blank scan).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import MutableMapping, Sequence

import pypdfium2 as pdfium

from workers_common import TooLarge, Unsupported

from .ocr import OcrOptions, check_language, read_page, tesseract
from .pdf_page import PageContent

__all__ = ["Confidences", "ocr_pdf_pages", "pgm"]

Confidences = dict[tuple[int, int], tuple[int, int]]
"""(page, line order) → (sum of the line's word confidences, word count)."""

NO_TESSERACT = (
    "OCR needs tesseract (Debian packages tesseract-ocr and tesseract-ocr-eng, "
    "scripts/system-deps.sh), which is not installed"
)


def pgm(width: int, height: int, stride: int, pixels: bytes | memoryview) -> bytes:
    """An 8-bit grey image as binary PGM (what tesseract reads from stdin fastest)."""
    rows = (
        bytes(pixels)
        if stride == width
        else b"".join(bytes(pixels[y * stride : y * stride + width]) for y in range(height))
    )
    return b"P5\n%d %d\n255\n" % (width, height) + rows


def _render(
    document: pdfium.PdfDocument, number: int, dpi: int, max_pixels: int
) -> tuple[bytes, int, int]:
    page = document[number - 1]
    try:
        points_w, points_h = page.get_size()
        scale = dpi / 72
        if points_w * points_h * scale * scale > max_pixels:
            scale = math.sqrt(max_pixels / max(1.0, points_w * points_h))
        bitmap = page.render(scale=scale, grayscale=True)
        try:
            width, height = bitmap.width, bitmap.height
            return pgm(width, height, bitmap.stride, bitmap.buffer), width, height
        finally:
            bitmap.close()
    finally:
        page.close()


def _wanted(pages: Sequence[PageContent], mode: str) -> list[PageContent]:
    if mode == "force":
        return list(pages)
    if mode == "auto":
        return [p for p in pages if not p.lines and p.image_area > 0]
    return []


def ocr_pdf_pages(
    pages: list[PageContent], data: bytes, options: OcrOptions, stats: MutableMapping[str, int]
) -> Confidences:
    """OCRs the pages `options` asks for, in place in `pages`; the OCR'd lines' confidences."""
    wanted = _wanted(pages, options.mode)
    if not wanted:
        return {}
    binary = tesseract()
    if binary is None:
        if options.mode == "force":
            raise Unsupported(f"ocr=force: {NO_TESSERACT}")
        if not any(p.lines for p in pages):
            raise Unsupported(f"the PDF has no text layer (scanned pages): {NO_TESSERACT}")
        return {}  # the pages with text are projected; the scanned ones count as without text
    if len(wanted) > options.max_pages:
        raise TooLarge(f"{len(wanted)} PDF pages need OCR, over max_ocr_pages={options.max_pages}")
    check_language(binary, options.lang)
    stats["pages_ocr"] = 0
    confidences: Confidences = {}
    document = pdfium.PdfDocument(data)
    try:
        for page in wanted:
            image, width, height = _render(
                document, page.number, options.dpi, options.max_image_pixels
            )
            text = read_page(
                binary,
                image,
                options,
                dpi=max(1, round(width * 72 / max(1.0, page.width))),
                page=page.number,
                scale=(page.width / width, page.height / height),
                height=page.height,
                stats=stats,
            )
            if text is None or not text.lines:
                # Over the page timeout, or nothing read: the page keeps what it had (its
                # images as figures).
                continue
            pages[page.number - 1] = dataclasses.replace(
                page, lines=text.lines, images=(), image_area=0.0
            )
            for order, conf in text.confidence.items():
                confidences[(page.number, order)] = conf
    finally:
        document.close()
    return confidences
