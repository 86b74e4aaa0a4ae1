"""docling_worker: PDF, images (OCR), DOCX, HTML, Markdown and DoclingDocument JSON into a
document graph.

Modules, one role each:

- handler       formats -> handle(job); options; every input to a DoclingDocument, then projection
- convert       DOCX, HTML, Markdown through docling's own backends (no torch, no models)
- doclingjson   DoclingDocument JSON, validated by docling-core; what is wrong when it is not one
- pdf_reader    pypdfium2 checks (encrypted, pages, metadata) and docling-parse text lines
- pdf_page      one decoded page (lines, rules, images) as plain data, and its JSON form
- pdf_helper    a second process decoding the second half of a long PDF's pages
- pdf_rows      running headers/footers, columns, reading order, rows
- pdf_blocks    rows into headings, paragraphs, lists, footnotes, aligned tables
- pdf_tables    ruled table regions and cell grids (wrapped cells joined)
- pdf_figures   images as figures, their captions, their place in reading order
- pdf_document  the PDF heuristics' result as a DoclingDocument with provenance
- ocr           tesseract run on one page image; its hOCR as text lines in PDF points
- pdf_ocr       which PDF pages are OCR'd (ocr=auto|force|off), rendered by pdfium
- image_document  an image (png, jpg, tif, bmp, webp) as one OCR'd page, a TIFF as one per frame
- projection    DoclingDocument -> DOCUMENT, SECTION, PARAGRAPH, LIST, TABLE, FIGURE, ...
- temporal      effective dates, relative dates, missing dates (shared rules in workers_common)
"""

from __future__ import annotations

from typing import Any

__all__ = ["FORMATS", "HANDLERS", "handle"]


def __getattr__(name: str) -> Any:
    # The handler (docling-core, half a second of imports) loads on first use, so that
    # `python -m docling_worker` can start its pdf_helper before importing it.
    if name in __all__:
        from . import handler

        return getattr(handler, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
