"""The docling worker's entry: formats pdf, image, docx, pptx, odt, odp, epub, html, md,
latex, docling, doc, ppt and rtf (LibreOffice makes them DOCX/PPTX first) and mhtml (its
root page read as HTML), and how a job becomes a submission.

Every input becomes a DoclingDocument first (pdf_document for PDFs, OCR'ing pages without
a text layer; image_document for images, OCR'd; convert for DOCX, PPTX,
ODT, ODP, EPUB, HTML, Markdown and LaTeX, doclingjson for JSON: a DoclingDocument
validated, any other JSON through jsondoc), then `projection` turns that one shape into
the graph and `temporal` adds the date rules.

Job options (all optional):

- `clarify`    record temporal ambiguities (`--option clarify=true`)
- `max_pages`  refuse a PDF or a multi-page TIFF with more pages as too_large (default 2,000)
- `max_bytes`  refuse a file larger than this as too_large (default 200 MiB for PDF and
               images, 64 MiB for the others: a 50 MB HTML file peaks at 1.35 GB of address space)
- `ocr`, `ocr_lang`, `ocr_dpi`, `ocr_page_timeout`, `max_ocr_pages`, `max_image_pixels`
               OCR of scanned PDF pages and images (ocr.py; README)
- `max_elements`  refuse HTML/Markdown with more elements as too_large (default 200,000),
                  JSON with more headings, items and cells (default 90,000)
- `max_depth`  refuse HTML nested deeper as unsupported (default 250)
- `max_convert_secs`  wall time LibreOffice may take to turn a .doc, .ppt or .rtf into
               DOCX/PPTX (default 120; past it too_large)
"""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from workers_common import Handler, IngestionResultBuilder, Job, TooLarge
from workers_common.text import (
    DecodedText,
    codec_name,
    decode_text,
    encoding_from_bom,
    meta_charset,
)

from .guards import DEFAULT_MAX_DEPTH, DEFAULT_MAX_ELEMENTS, check_html, check_markdown
from .model import Converted
from .projection import project_document
from .temporal import project_temporal

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_PAGES",
    "DEFAULT_MAX_PDF_BYTES",
    "FORMATS",
    "HANDLERS",
    "convert",
    "handle",
]

FORMATS = (
    "pdf",
    "image",
    "docx",
    "pptx",
    "odt",
    "odp",
    "epub",
    "html",
    "md",
    "latex",
    "docling",
    "doc",
    "ppt",
    "rtf",
    "mhtml",
)
DEFAULT_MAX_PAGES = 2000
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_PDF_BYTES = 200 * 1024 * 1024


def _int_option(options: Mapping[str, Any], key: str, default: int) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return default
    return value


def convert(data: bytes, fmt: str, options: Mapping[str, Any], name: str = "") -> Converted:
    """Any supported input as a DoclingDocument and its metadata.

    Each format's readers are imported at its first job, not at start-up: a PDF job never
    loads docling's DOCX/HTML/Markdown backends (half a second of imports: bs4,
    python-docx, docling's datamodel), and the others never load docling-parse."""
    if fmt == "pdf":
        from .ocr import ocr_options
        from .pdf_document import convert_pdf
        from .pdf_reader import open_pdf

        ocr = ocr_options(options)
        source = open_pdf(data, max_pages=_int_option(options, "max_pages", DEFAULT_MAX_PAGES))
        try:
            return convert_pdf(source, ocr)
        finally:
            source.close()
    if fmt == "image":
        from .image_document import convert_image

        pages = _int_option(options, "max_pages", DEFAULT_MAX_PAGES)
        return convert_image(data, options, max_pages=pages)
    if fmt == "docling":
        from .doclingjson import load_docling_json
        from .jsondoc import DEFAULT_MAX_ELEMENTS as JSON_ELEMENTS

        json_elements = _int_option(options, "max_elements", JSON_ELEMENTS)
        return load_docling_json(data, name=name, max_elements=json_elements)
    if fmt in ("doc", "ppt", "rtf"):
        return _legacy(data, fmt, options)
    return _declarative(data, fmt, options)


def _declarative(data: bytes, fmt: str, options: Mapping[str, Any]) -> Converted:
    """DOCX, PPTX, ODT, ODP, EPUB, HTML (a saved page's too), Markdown and LaTeX through
    docling's own readers, after the guards and the decoding they need."""
    url = None
    if fmt == "mhtml":
        data, url, fmt = _saved_page(data)
    decoded = None
    if fmt in TEXT_FORMATS:
        data, decoded = _as_utf8(data)
    elif fmt == "html" and (overruled := _utf8_despite_declaration(data)) is not None:
        data = codecs.BOM_UTF8 + data
        decoded = DecodedText("", "utf-8", f"utf-8 (not the declared {overruled})", 0)
    elements = _int_option(options, "max_elements", DEFAULT_MAX_ELEMENTS)
    if fmt == "html":
        depth = _int_option(options, "max_depth", DEFAULT_MAX_DEPTH)
        data = check_html(data, max_depth=depth, max_elements=elements)
    elif fmt == "md":
        check_markdown(data, max_elements=elements)

    from .convert import convert_declarative

    converted = convert_declarative(data, fmt)
    if url is not None:
        converted.meta = replace(converted.meta, url=url)
    if decoded is not None:
        converted.meta = replace(
            converted.meta,
            encoding=decoded.encoding,
            encoding_source=decoded.source,
            replaced_bytes=decoded.replaced,
        )
    return converted


def _legacy(data: bytes, fmt: str, options: Mapping[str, Any]) -> Converted:
    """A .doc, .ppt or .rtf: made DOCX/PPTX by LibreOffice, then read as one."""
    from .convert import convert_declarative
    from .legacy import DEFAULT_MAX_CONVERT_SECS, modern_bytes

    seconds = _int_option(options, "max_convert_secs", DEFAULT_MAX_CONVERT_SECS)
    modern, modern_format, converted_by = modern_bytes(data, fmt, seconds)
    converted = convert_declarative(modern, modern_format)
    converted.meta = replace(converted.meta, read_as=modern_format, converted_by=converted_by)
    return converted


def _saved_page(data: bytes) -> tuple[bytes, str | None, str]:
    """An MHTML archive's root page, the address it was saved from, and `html`."""
    from .mhtml import mhtml_page

    page = mhtml_page(data)
    return page.html, page.url, "html"


TEXT_FORMATS = ("md", "latex")
"""Plain-text sources docling reads as UTF-8, else Windows-1252 (Markdown), which turned a
Windows-1251 file into mojibake and refused a Shift_JIS one: decoded here first."""


def _as_utf8(data: bytes) -> tuple[bytes, DecodedText | None]:
    """`data` as UTF-8: as it is when it is UTF-8 already, else decoded as the text pool
    decodes undeclared text (byte-order mark, ISO-2022 escapes, detection; binary data is
    invalid_input) and encoded again, with how it was decoded."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        decoded = decode_text(data)
        return decoded.text.encode("utf-8"), decoded
    return data, None


_ASCII = bytes(range(128))
_NOT_LEGACY = frozenset({None, "utf-8", "utf-16", "utf-16-le", "utf-16-be", "ascii"})
"""What `codec_name` makes of a declaration that is no legacy encoding (None: unknown)."""
_MULTIBYTE_EVIDENCE = 4
"""Non-ASCII bytes that must all decode as UTF-8 before a declaration is overruled: a
lone pair could be a legacy text's accident (`É` and a curly quote in cp1252 make one
valid UTF-8 sequence); two sequences, or one of three bytes, are not."""


def _utf8_despite_declaration(data: bytes) -> str | None:
    """The legacy encoding a page's `<meta charset>` names while its bytes are UTF-8, if
    so (a template's stale `iso-8859-1` over a CMS's UTF-8 content; a page saved from a
    server that said UTF-8 in its header). Read as declared it would be mojibake;
    the caller marks it UTF-8 with a byte-order mark, which outranks a
    declaration in HTML's rules and in docling's reader. Text in a legacy encoding is
    almost never valid UTF-8 once it has a few non-ASCII bytes, so the bytes decide."""
    if encoding_from_bom(data) is not None:
        return None
    name = meta_charset(data)
    if name is None or codec_name(name) in _NOT_LEGACY:
        return None
    if len(data.translate(None, _ASCII)) < _MULTIBYTE_EVIDENCE:
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return name


def handle(job: Job) -> bytes:
    """Projects one document job (typed failures: invalid_input, unsupported, too_large)."""
    default = DEFAULT_MAX_PDF_BYTES if job.format in ("pdf", "image") else DEFAULT_MAX_BYTES
    limit = _int_option(job.options, "max_bytes", default)
    if job.content is not None and job.content.size > limit:
        raise TooLarge(f"document of {job.content.size} bytes is over max_bytes={limit}")
    converted = convert(job.read_bytes(), job.format, job.options, job.name)
    builder = IngestionResultBuilder(options=job.options)
    state = project_document(builder, converted, name=job.name, source_format=job.format)
    temporal = project_temporal(builder, state, converted.meta)
    stats: dict[str, int] = {
        f"nodes_{label.lower()}": n for label, n in sorted(state.counts.items())
    }
    stats.update(converted.stats)
    stats["date_references"] = temporal
    builder.set_stats(dict(sorted(stats.items())))
    return builder.to_json()


HANDLERS: Mapping[str, Handler] = dict.fromkeys(FORMATS, handle)
