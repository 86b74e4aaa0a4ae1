"""Hostile inputs made by code: each a typed permanent failure or a success, never a
crash, hang or retry. `HOSTILE` maps a name to (format, bytes maker, expected outcome),
where the outcome is a failure kind or "ok"."""

from __future__ import annotations

import io
import json
import shutil
import struct
import zipfile
import zlib
from collections.abc import Callable

import docling_corpus as corpus


def raw_pdf(objects: list[bytes], root: int = 1) -> bytes:
    """A PDF from numbered object bodies (1-based), with a correct xref table."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        root,
        xref,
    )
    return bytes(out)


_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _stream(data: bytes) -> bytes:
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def zero_pages() -> bytes:
    return raw_pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"])


def many_pages(count: int) -> bytes:
    # Every page shares one content stream and font: 10,000 pages in about 600 KB.
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(count))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % count,
        _stream(b"BT /F1 12 Tf 72 720 Td (Page text) Tj ET"),
        _FONT,
    ]
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R "
    page += b"/Resources << /Font << /F1 4 0 R >> >> >>"
    objects += [page] * count
    return raw_pdf(objects)


def cyclic_page_tree() -> bytes:
    # The page tree's only kid is the tree itself.
    return raw_pdf(
        [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [2 0 R] /Count 1 >>"]
    )


def _one_page(content: bytes, resources: bytes = b"/Font << /F1 4 0 R >>") -> list[bytes]:
    return [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R "
        b"/Resources << " + resources + b" >> >>",
        _FONT,
        _stream(content),
    ]


def huge_image() -> bytes:
    # An image that declares 60,000 x 60,000 pixels (10.8 GB decoded) and holds 50 bytes.
    objects = _one_page(b"q 500 0 0 500 50 50 cm /Im1 Do Q BT /F1 12 Tf 72 720 Td (Caption) Tj ET",
                        b"/Font << /F1 4 0 R >> /XObject << /Im1 6 0 R >>")  # fmt: skip
    pixels = zlib.compress(b"\x00" * 1000)
    objects.append(
        b"<< /Type /XObject /Subtype /Image /Width 60000 /Height 60000 /ColorSpace /DeviceRGB "
        b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n"
        % len(pixels)
        + pixels
        + b"\nendstream"
    )
    return raw_pdf(objects)


def invalid_text_strings() -> bytes:
    # Text operators with bytes that are no valid character, an unbalanced string, and a
    # hex string with odd digits: the parser must keep going.
    content = b"BT /F1 12 Tf 72 720 Td (\xff\xfe\x00\x01 bad \x80\x81) Tj 0 -20 Td <41424> Tj "
    content += b"0 -20 Td (Readable line) Tj ET"
    return raw_pdf(_one_page(content))


def truncated_pdf() -> bytes:
    data = corpus.report_pdf()
    return data[: len(data) // 3]


def broken_xref() -> bytes:
    data = corpus.simple_pdf()
    start = data.rindex(b"startxref")
    # Point startxref into the middle of a content stream and garble the table.
    return data[:start].replace(b"xref\n", b"xrex\n") + b"startxref\n123\n%%EOF\n"


def _zip_of(members: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return out.getvalue()


def _with_bomb(package: bytes, member: str) -> bytes:
    """`package` (a zip) with `member` replaced by 1 GiB of spaces (deflated to ~1 MB)."""
    source = zipfile.ZipFile(io.BytesIO(package))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            if info.filename == member:
                with archive.open(member, "w", force_zip64=True) as stream:
                    block = b" " * (1 << 20)
                    for _ in range(1024):
                        stream.write(block)
            else:
                archive.writestr(info, source.read(info))
    return out.getvalue()


_CONTENT_TYPES = '<?xml version="1.0"?><Types/>'


def docx_without_document() -> bytes:
    return _zip_of({"[Content_Types].xml": _CONTENT_TYPES, "word/styles.xml": "<styles/>"})


def pptx_zip_bomb() -> bytes:
    """A real deck whose first slide is 1 GiB of spaces."""
    return _with_bomb(corpus.deck_pptx(), "ppt/slides/slide1.xml")


def pptx_without_presentation() -> bytes:
    return _zip_of({"[Content_Types].xml": _CONTENT_TYPES, "ppt/slides/slide1.xml": "<sld/>"})


def pptx_dangling_slide() -> bytes:
    """A deck whose slide list names a relationship (rId7) the package does not have."""
    source = zipfile.ZipFile(io.BytesIO(corpus.deck_pptx()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "ppt/_rels/presentation.xml.rels":
                data = data.replace(b'Id="rId7"', b'Id="rId70"')
            archive.writestr(info, data)
    return out.getvalue()


def replaced(package: bytes, member: str, data: bytes) -> bytes:
    """`package` with one member's bytes replaced (the others as they were)."""
    return corpus.with_members(package, {member: data})


_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(
        b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
        for i in range(1, 10)
    )
    + b"]>"
)


def odt_laughs() -> bytes:
    """content.xml as a billion-laughs entity bomb (a GiB once expanded)."""
    body = (
        b'<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"'
        b' xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body>'
        b"<office:text><text:p>&lol9;</text:p></office:text></office:body>"
        b"</office:document-content>"
    )
    return replaced(corpus.report_odt(), "content.xml", _LAUGHS + body)


def epub_external_entity() -> bytes:
    """A package document that asks for /etc/passwd through an external entity."""
    opf = (
        b'<?xml version="1.0"?><!DOCTYPE package [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        + corpus.EPUB_PACKAGE.split("?>", 1)[1].replace("Field guide", "&x;").encode()
    )
    return replaced(corpus.book_epub(), "OEBPS/content.opf", opf)


def epub_traversal() -> bytes:
    """A spine item whose href climbs out of the package (`../../etc/passwd`)."""
    opf = corpus.EPUB_PACKAGE.replace('href="ch2.xhtml"', 'href="../../../etc/passwd"')
    return replaced(corpus.book_epub(), "OEBPS/content.opf", opf.encode())


def latex_recursive_macros() -> bytes:
    """A macro that expands to itself, and one that doubles 24 times (16 M copies)."""
    doubling = b"".join(
        b"\\def\\m%s{\\m%s\\m%s}" % (bytes([98 + i]), bytes([97 + i]), bytes([97 + i]))
        for i in range(24)
    )
    return (
        b"\\newcommand{\\loop}{\\loop}\\def\\ma{xx}"
        + doubling
        + b"\\begin{document}\\loop \\my\\end{document}"
    )


def docx_zip_bomb() -> bytes:
    """A real DOCX whose document.xml is 1 GiB of spaces."""
    return _with_bomb(corpus.report_docx(), "word/document.xml")


def html_one_line(size: int) -> bytes:
    return b"<html><body><p>" + b"word " * (size // 5) + b"</p></body></html>"


def html_deep(depth: int) -> bytes:
    return b"<div>" * depth + b"deep" + b"</div>" * depth


def md_list(items: int) -> bytes:
    return b"- item\n" * items


def json_deep(depth: int) -> bytes:
    head = b'{"schema_name": "DoclingDocument", "version": "1.10.0", "name": "x", "body": '
    return head + b'{"children": [' * depth + b"]}" * depth + b"}"


def json_other_tool() -> bytes:
    return json.dumps({"name": "report", "pages": [{"text": "hello"}]}).encode()


def json_wide_records() -> bytes:
    """30,000 records of 5 fields: 150,000 table cells, over the JSON budget."""
    return json.dumps([{f"c{i}": r for i in range(5)} for r in range(30_000)]).encode()


def json_wrong_schema_types() -> bytes:
    doc = json.loads(corpus.docling_json(corpus.docling_minimal()))
    doc["texts"][0]["label"] = "no-such-label"
    return json.dumps(doc).encode()


def json_dangling_ref() -> bytes:
    doc = json.loads(corpus.docling_json(corpus.docling_minimal()))
    doc["body"]["children"].append({"$ref": "#/texts/99"})
    return json.dumps(doc).encode()


def json_cycle() -> bytes:
    doc = json.loads(corpus.docling_json(corpus.docling_sections()))
    # The first group lists the body (its own ancestor) as a child.
    doc["groups"][0]["children"].append({"$ref": "#/body"})
    return json.dumps(doc).encode()


def png_bomb(width: int = 30_000, height: int = 30_000) -> bytes:
    """A PNG whose header declares 900 Mpx over a few bytes of compressed rows (the pixel
    cap must refuse it before a byte is inflated)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = zlib.compress(b"\x00" * (width + 1) * 4)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")
    )


def raw_tiff(sizes: list[tuple[int, int]], next_after_last: int = 0) -> bytes:
    """A little-endian TIFF of 8-bit grey frames of the given sizes, one directory each
    (102 bytes: a 100,000-page file is 10 MB), every frame's single strip the same 50
    bytes after the header: a frame larger than 50 pixels cannot be decoded, only walked.
    `next_after_last` is where the last directory says the next one is (0: none)."""
    strip = 50
    first = 8 + strip
    size = 2 + 8 * 12 + 4
    out = [b"II*\x00" + struct.pack("<I", first), b"\x00" * strip]
    for index, (width, height) in enumerate(sizes):
        following = first + (index + 1) * size if index + 1 < len(sizes) else next_after_last
        entries = [
            (256, 4, width),  # ImageWidth, LONG
            (257, 4, height),  # ImageLength
            (258, 3, 8),  # BitsPerSample, SHORT
            (259, 3, 1),  # Compression: none
            (262, 3, 1),  # PhotometricInterpretation: black is zero
            (273, 4, 8),  # StripOffsets
            (278, 4, height),  # RowsPerStrip
            (279, 4, strip),  # StripByteCounts
        ]
        out.append(struct.pack("<H", len(entries)))
        out += [struct.pack("<HHII", tag, kind, 1, value) for tag, kind, value in entries]
        out.append(struct.pack("<I", following))
    return b"".join(out)


SCANNED_OUTCOME = "ok" if shutil.which("tesseract") else "unsupported"
"""A blank scanned page: OCR reads nothing from it and the document succeeds, empty;
without tesseract it is unsupported (no text layer and no OCR)."""

HOSTILE: dict[str, tuple[str, Callable[[], bytes], str]] = {
    "pdf-truncated": ("pdf", truncated_pdf, "invalid_input|ok"),
    "pdf-broken-xref": ("pdf", broken_xref, "ok"),
    "pdf-encrypted": ("pdf", corpus.encrypted_pdf, "unsupported"),
    "pdf-zero-pages": ("pdf", zero_pages, "invalid_input"),
    "pdf-10000-pages": ("pdf", lambda: many_pages(10_000), "too_large"),
    "pdf-cyclic-page-tree": ("pdf", cyclic_page_tree, "invalid_input"),
    "pdf-huge-image": ("pdf", huge_image, "ok"),
    "pdf-invalid-text-strings": ("pdf", invalid_text_strings, "ok"),
    "pdf-scanned": ("pdf", corpus.scanned_pdf, SCANNED_OUTCOME),
    "image-truncated": ("image", lambda: corpus.text_image()[:600], "invalid_input"),
    "image-gif": ("image", lambda: b"GIF89a" + b"\x00" * 100, "invalid_input"),
    "image-pixel-bomb": ("image", png_bomb, "too_large"),
    # 100,000 pages: refused after reading 201 directories (Pillow's n_frames would walk
    # them all, 80 s here), before any is decoded.
    "image-tiff-100000-pages": ("image", lambda: raw_tiff([(10, 5)] * 100_000), "too_large"),
    "image-tiff-page-2-pixel-bomb": (
        "image",
        lambda: raw_tiff([(10, 5), (60_000, 60_000)]),
        "too_large",
    ),
    "image-tiff-page-3-broken-directory": (
        "image",
        lambda: raw_tiff([(10, 5)] * 3, next_after_last=10**9),
        "invalid_input",
    ),
    "image-tiff-page-2-truncated": (
        "image",
        lambda: raw_tiff([(10, 5), (100, 100)]),
        "invalid_input",
    ),
    "pdf-not-a-pdf": ("pdf", lambda: b"GIF89a" + b"\x00" * 100, "invalid_input"),
    "pdf-empty": ("pdf", lambda: b"", "invalid_input"),
    "docx-zip-bomb": ("docx", docx_zip_bomb, "invalid_input"),
    "docx-no-document-xml": ("docx", docx_without_document, "invalid_input"),
    "docx-not-a-zip": ("docx", lambda: b"plain text, not a zip", "invalid_input"),
    "doc-not-ole": ("doc", lambda: b"<html><body>saved as .doc</body></html>", "invalid_input"),
    "rtf-cut-short": ("rtf", lambda: b"{\\rtf1\\ansi {\\b cut", "invalid_input"),
    "pptx-zip-bomb": ("pptx", pptx_zip_bomb, "too_large"),
    "pptx-no-presentation-xml": ("pptx", pptx_without_presentation, "invalid_input"),
    "pptx-not-a-zip": ("pptx", lambda: b"plain text, not a zip", "invalid_input"),
    "pptx-dangling-slide": ("pptx", pptx_dangling_slide, "invalid_input"),
    "pptx-truncated": ("pptx", lambda: corpus.deck_pptx()[:5000], "invalid_input"),
    # Every LF byte made CR (a text-mode transfer): the content types' deflate stream is
    # damaged; zlib's error surfaced untyped (transient) before.
    "pptx-cr-only": ("pptx", lambda: corpus.deck_pptx().replace(b"\n", b"\r"), "invalid_input"),
    "docx-cr-only": ("docx", lambda: corpus.report_docx().replace(b"\n", b"\r"), "invalid_input"),
    "odt-zip-bomb": ("odt", lambda: _with_bomb(corpus.report_odt(), "content.xml"), "too_large"),
    "odt-not-a-zip": ("odt", lambda: b"plain text, not a zip", "invalid_input"),
    "odt-truncated": ("odt", lambda: corpus.report_odt()[:3000], "invalid_input"),
    "odt-is-a-presentation": ("odt", corpus.deck_odp, "invalid_input"),
    "odt-content-not-xml": (
        "odt",
        lambda: replaced(corpus.report_odt(), "content.xml", b"<office:document-content"),
        "invalid_input",
    ),
    "odt-entity-bomb": ("odt", odt_laughs, "invalid_input"),
    "odp-zip-bomb": ("odp", lambda: _with_bomb(corpus.deck_odp(), "content.xml"), "too_large"),
    "odp-truncated": ("odp", lambda: corpus.deck_odp()[:3000], "invalid_input"),
    "epub-zip-bomb": (
        "epub",
        lambda: _with_bomb(corpus.book_epub(), "OEBPS/ch1.xhtml"),
        "too_large",
    ),
    "epub-not-a-zip": ("epub", lambda: b"plain text, not a zip", "invalid_input"),
    "epub-no-container": (
        "epub",
        lambda: _zip_of({"mimetype": "application/epub+zip", "OEBPS/ch1.xhtml": "<p/>"}),
        "invalid_input",
    ),
    "epub-external-entity": ("epub", epub_external_entity, "invalid_input"),
    "epub-spine-traversal": ("epub", epub_traversal, "ok"),
    "latex-empty": ("latex", lambda: b"", "invalid_input"),
    "latex-braces-100000-deep": (
        "latex",
        lambda: b"\\begin{document}" + b"{" * 100_000 + b"x" + b"}" * 100_000 + b"\\end{document}",
        "ok",
    ),
    "latex-recursive-macros": ("latex", latex_recursive_macros, "ok"),
    # NULs: binary data, not text in any encoding (as in the text pool).
    "latex-binary-garbage": ("latex", lambda: bytes(range(256)) * 64, "invalid_input"),
    # 50 MB of text is over the 32 MiB of canonical text one submission may carry.
    "html-50mb-one-line": ("html", lambda: html_one_line(50 * 1024 * 1024), "too_large"),
    "html-nested-100000": ("html", lambda: html_deep(100_000), "unsupported"),
    "html-binary-garbage": ("html", lambda: bytes(range(256)) * 64, "ok"),
    "md-million-list-items": ("md", lambda: md_list(1_000_000), "too_large"),
    "md-invalid-utf8": ("md", lambda: b"# Title\n\n\xff\xfe bytes \xc3\x28\n", "ok"),
    "json-other-tool": ("docling", json_other_tool, "ok"),
    "json-generic-deep": (
        "docling",
        lambda: b'{"a": ' * 100_000 + b"1" + b"}" * 100_000,
        "invalid_input",
    ),
    "json-huge-number": ("docling", lambda: b'{"n": ' + b"9" * 1_000_000 + b"}", "ok"),
    "json-wide-records": ("docling", json_wide_records, "too_large"),
    "json-wrong-schema-types": ("docling", json_wrong_schema_types, "invalid_input"),
    "json-nested-million": ("docling", lambda: json_deep(1_000_000), "invalid_input"),
    "json-array-million": ("docling", lambda: b"[" * 1_000_000 + b"]" * 1_000_000, "invalid_input"),
    "json-not-json": ("docling", lambda: b"{not json", "invalid_input"),
    "json-dangling-ref": ("docling", json_dangling_ref, "invalid_input"),
    "json-cycle": ("docling", json_cycle, "invalid_input"),
}
