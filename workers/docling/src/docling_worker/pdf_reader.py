"""A PDF's text layer: pages, text lines with geometry and fonts, rules, image boxes.

pypdfium2 opens the file first (it says cheaply whether the file is a PDF at all, whether
it needs a password, how many pages it has and what its Info dictionary says), so a
broken, encrypted or oversized file fails before any text is decoded. docling-parse then
decodes each page's text into line cells (text, bounding box, font) in the parser's
order, plus the page's stroked lines (table rules) and bitmap boxes (figures; a scanned
page is one image and no text). Coordinates are PDF points with the origin at the bottom left.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Generator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from io import BytesIO
from itertools import pairwise

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from docling_core.types.doc.page import SegmentedPdfPage, TextCellUnit
from docling_parse.pdf_parser import ContentConfig, ContentLevel, DoclingPdfParser, PdfDocument

from workers_common import InvalidInput, TooLarge, Unsupported

from .model import SourceMeta
from .pdf_page import Box, Line, PageContent, Rule

__all__ = [
    "Box",
    "Line",
    "PageContent",
    "PdfSource",
    "Rule",
    "decode_page",
    "load_pdf",
    "open_pdf",
]

_PASSWORD_ERRORS = {pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY}
_CONTENT = ContentConfig(
    char_cells_content_level=ContentLevel.SKIP,
    word_cells_content_level=ContentLevel.SKIP,
    line_cells_content_level=ContentLevel.COMPUTE_AND_MATERIALIZE,
    shapes_content_level=ContentLevel.COMPUTE_AND_MATERIALIZE,
    bitmaps_content_level=ContentLevel.COMPUTE_AND_MATERIALIZE,
    include_bitmap_bytes=False,
)


@dataclass(slots=True)
class PdfSource:
    """An opened PDF: its metadata, page count, and a page iterator (decoded lazily)."""

    meta: SourceMeta
    page_count: int
    _parsed: PdfDocument
    _data: bytes = b""

    @property
    def data(self) -> bytes:
        """The file's bytes (pdf_ocr renders pages from them)."""
        return self._data

    def pages(self) -> Generator[PageContent, None, None]:
        """Every page in order. A long PDF's pages are shared with the pdf_helper process
        (on another core): it decodes from the end while this one decodes from the start;
        the pages come out the same whichever process decoded each."""
        from .pdf_helper import HELPER

        share = HELPER.share(self._data, self.page_count) if self._data else None
        try:
            for number in range(1, self.page_count + 1):
                page = share.take(number) if share is not None else None
                yield page if page is not None else decode_page(self._parsed, number)
        finally:
            if share is not None:
                share.close()

    def close(self) -> None:
        self._parsed.unload()


def decode_page(parsed: PdfDocument, number: int) -> PageContent:
    """Page `number` (1-based) of a loaded PDF; InvalidInput when it cannot be decoded."""
    try:
        page = parsed.get_page(number, content_config=_CONTENT)
    except (ValueError, RuntimeError) as err:
        raise InvalidInput(f"PDF page {number} cannot be decoded: {err}") from err
    content = _page_content(number, page)
    parsed.unload_pages((number, number + 1))
    return content


def load_pdf(data: bytes) -> PdfDocument:
    """docling-parse's lazy document over the bytes (InvalidInput when it refuses them)."""
    parser = DoclingPdfParser(loglevel="fatal")
    try:
        return parser.load(path_or_stream=BytesIO(data), lazy=True)
    except (RuntimeError, ValueError) as err:
        raise InvalidInput(f"not a readable PDF: {err}") from err


def _font(cell: object) -> str:
    name = getattr(cell, "font_name", "")
    return name if isinstance(name, str) else ""


def _page_content(number: int, page: SegmentedPdfPage) -> PageContent:
    lines = []
    for order, cell in enumerate(page.iterate_cells(unit_type=TextCellUnit.LINE)):
        text = cell.text.strip()
        if not text:
            continue
        rect = cell.rect.to_bottom_left_origin(page_height=page.dimension.height)
        xs = (rect.r_x0, rect.r_x1, rect.r_x2, rect.r_x3)
        ys = (rect.r_y0, rect.r_y1, rect.r_y2, rect.r_y3)
        lines.append(Line(number, min(xs), min(ys), max(xs), max(ys), text, _font(cell), order))
    rules = []
    for shape in page.shapes:
        points = shape.points
        for a, b in pairwise(points):
            rule = Rule(min(a.x, b.x), min(a.y, b.y), max(a.x, b.x), max(a.y, b.y))
            if rule.horizontal or rule.vertical:
                rules.append(rule)
    image_area = 0.0
    images = []
    width, height = page.dimension.width, page.dimension.height
    for bitmap in page.bitmap_resources:
        box = bitmap.rect.to_bottom_left_origin(page_height=height).to_bounding_box()
        image_area += abs(box.width * box.height)
        x0, x1 = max(0.0, min(box.l, box.r)), min(width, max(box.l, box.r))
        y0, y1 = max(0.0, min(box.b, box.t)), min(height, max(box.b, box.t))
        if x1 > x0 and y1 > y0:
            images.append(Box(x0, y0, x1, y1))
    return PageContent(number, width, height, tuple(lines), tuple(rules), image_area, tuple(images))


_PDF_DATE = re.compile(
    r"^D?:?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?([Zz+\-])?(\d{2})?'?(\d{2})?"
)


def pdf_date(raw: str) -> datetime | None:
    """A PDF date string (`D:YYYYMMDDHHmmSSOHH'mm'`); no zone is read as UTC."""
    match = _PDF_DATE.match(raw.strip())
    if not match:
        return None
    year, month, day, hour, minute, second, sign, oh, om = match.groups()
    zone: timezone = UTC
    if sign in ("+", "-"):
        offset = timedelta(hours=int(oh or 0), minutes=int(om or 0))
        zone = timezone(offset if sign == "+" else -offset)
    try:
        return datetime(
            int(year),
            int(month or 1),
            int(day or 1),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            tzinfo=zone,
        )
    except ValueError:
        return None


def _language(document: pdfium.PdfDocument) -> str | None:
    size = pdfium_c.FPDFCatalog_GetLanguage(document.raw, None, 0)
    if size <= 2 or size > 256:
        return None
    # The buffer is FPDF_WCHAR (UTF-16LE code units), `size` bytes with the terminator.
    buffer = (ctypes.c_ushort * ((size + 1) // 2))()
    pdfium_c.FPDFCatalog_GetLanguage(document.raw, buffer, size)
    text = bytes(buffer)[: size - 2].decode("utf-16-le", errors="replace").strip()
    return text or None


def _meta(document: pdfium.PdfDocument, pages: int) -> SourceMeta:
    info = document.get_metadata_dict(skip_empty=True)
    title = " ".join(info.get("Title", "").split()) or None
    author = " ".join(info.get("Author", "").split())
    return SourceMeta(
        title=title,
        authors=(author,) if author else (),
        created=pdf_date(info.get("CreationDate", "")),
        modified=pdf_date(info.get("ModDate", "")),
        language=_language(document),
        page_count=pages,
    )


def open_pdf(data: bytes, *, max_pages: int) -> PdfSource:
    """Opens a PDF for its text layer; typed failures for what cannot be read."""
    if b"%PDF-" not in data[:1024]:
        raise InvalidInput("not a PDF: no %PDF- header in the first 1024 bytes")
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as err:
        # PDFium's last-error code is per thread and not reset by a later failure (a
        # broken file after an encrypted one reported "password"): look for /Encrypt.
        if err.err_code in _PASSWORD_ERRORS and b"/Encrypt" in data:
            raise Unsupported("the PDF is encrypted: it needs a password to open") from err
        raise InvalidInput(f"not a readable PDF: {err}") from err
    try:
        pages = len(document)
        if pages == 0:
            raise InvalidInput("the PDF has no pages")
        if pages > max_pages:
            raise TooLarge(f"the PDF has {pages} pages, over max_pages={max_pages}")
        meta = _meta(document, pages)
    finally:
        document.close()
    parsed = load_pdf(data)
    if parsed.number_of_pages() != pages:
        raise InvalidInput(
            f"the PDF's page tree is inconsistent ({pages} pages by one reader, "
            f"{parsed.number_of_pages()} by another)"
        )
    return PdfSource(meta, pages, parsed, data)
