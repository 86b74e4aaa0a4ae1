"""Which format a file is, for workers that hand files on as child jobs.

An email's attachments, a web response that is not HTML and the documents inside a
repository archive all become child jobs of another pool's format. One table here says
which format a name, a media type and the bytes stand for, so the three agree with each
other and with the CLI (`format_for_path` in src/config.rs, which maps the same document
extensions).

A name decides only where the bytes do not contradict it: a signature that settles the
question (`%PDF-`, `PAR1` at both ends) wins over the name; a binary format (xlsx, docx,
msg, ...) needs its container's signature; a text format (csv, md, ...) needs bytes without
a NUL and without a binary signature. Bytes that fail the check are not routed, with the
reason, never guessed.

Which of these formats a deployment serves is the operator's to say, through one
comma-separated variable in the pool's `env` (`routed_formats`): a child job of a format no
pool serves would wait forever.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "EXTENSIONS",
    "IMAGE_SIGNATURES",
    "MEDIA_TYPES",
    "OLE_SIGNATURE",
    "ROUTABLE_FORMATS",
    "RTF_SIGNATURE",
    "ZIP_SIGNATURE",
    "Route",
    "by_name",
    "detect_format",
    "is_flat_opendocument",
    "media_type",
    "routed_formats",
]

EXTENSIONS: Mapping[str, str] = {
    "csv": "csv", "tsv": "tsv", "tab": "tsv",
    "xlsx": "xlsx", "xlsm": "xlsx", "xlsb": "xlsb", "xls": "xls", "ods": "ods",
    "parquet": "parquet",
    "pdf": "pdf", "docx": "docx", "pptx": "pptx", "odt": "odt", "odp": "odp", "epub": "epub",
    "doc": "doc", "dot": "doc", "ppt": "ppt", "pps": "ppt", "rtf": "rtf",
    "docm": "docx", "dotx": "docx", "dotm": "docx",
    "pptm": "pptx", "ppsx": "pptx", "ppsm": "pptx", "potx": "pptx", "potm": "pptx",
    "ott": "odt", "otp": "odp", "ots": "ods", "xltx": "xlsx", "xltm": "xlsx",
    "fodt": "odt", "fodp": "odp",
    "html": "html", "htm": "html", "mht": "mhtml", "mhtml": "mhtml",
    "md": "md", "markdown": "md", "tex": "latex", "latex": "latex",
    "txt": "txt", "text": "txt", "rst": "txt", "adoc": "txt", "asciidoc": "txt",
    "eml": "eml", "msg": "msg", "mbox": "mbox", "mbx": "mbox",
    "png": "image", "jpg": "image", "jpeg": "image", "tif": "image", "tiff": "image",
    "bmp": "image", "webp": "image", "gif": "image", "pbm": "image", "pgm": "image",
    "ppm": "image", "pnm": "image",
}  # fmt: skip
"""File extension (lower case) → format."""

_PROSE_NAMES = frozenset(
    {
        "readme", "license", "licence", "copying", "notice", "authors", "contributors",
        "changelog", "changes", "history", "news", "todo", "install", "thanks",
    }
)  # fmt: skip
"""Files a project keeps without an extension whose text is prose (the CLI's list too)."""

MEDIA_TYPES: Mapping[str, str] = {
    "text/csv": "csv",
    "text/tab-separated-values": "tsv",
    "application/pdf": "pdf",
    "message/rfc822": "eml",
    "application/vnd.ms-outlook": "msg",
    "text/html": "html",
    "multipart/related": "mhtml",
    "application/x-mimearchive": "mhtml",
    "text/markdown": "md",
    "text/plain": "txt",
    "application/x-latex": "latex",
    "text/x-tex": "latex",
    "application/epub+zip": "epub",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.presentation": "odp",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.apache.parquet": "parquet",
    "application/x-parquet": "parquet",
    "image/png": "image",
    "image/jpeg": "image",
    "image/tiff": "image",
    "image/bmp": "image",
    "image/webp": "image",
    "image/gif": "image",
    "image/x-portable-anymap": "image",
    "image/x-portable-bitmap": "image",
    "image/x-portable-graymap": "image",
    "image/x-portable-pixmap": "image",
    "application/vnd.ms-excel": "xls",
    "application/vnd.ms-word.document.macroenabled.12": "docx",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template": "docx",
    "application/vnd.ms-word.template.macroenabled.12": "docx",
    "application/vnd.ms-powerpoint.presentation.macroenabled.12": "pptx",
    "application/vnd.openxmlformats-officedocument.presentationml.slideshow": "pptx",
    "application/vnd.openxmlformats-officedocument.presentationml.template": "pptx",
    "application/vnd.ms-powerpoint.slideshow.macroenabled.12": "pptx",
    "application/vnd.ms-powerpoint.template.macroenabled.12": "pptx",
    "application/vnd.oasis.opendocument.text-template": "odt",
    "application/vnd.oasis.opendocument.presentation-template": "odp",
    "application/vnd.oasis.opendocument.spreadsheet-template": "ods",
    "application/vnd.oasis.opendocument.text-flat-xml": "odt",
    "application/vnd.oasis.opendocument.presentation-flat-xml": "odp",
    "application/msword": "doc",
    "application/vnd.ms-powerpoint": "ppt",
    "application/rtf": "rtf",
    "text/rtf": "rtf",
    "application/vnd.ms-excel.sheet.binary.macroenabled.12": "xlsb",
    "application/vnd.ms-excel.sheet.macroenabled.12": "xlsx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.template": "xlsx",
    "application/vnd.ms-excel.template.macroenabled.12": "xlsx",
}
"""Media type (lower case, no parameters) → format."""

ROUTABLE_FORMATS = frozenset(EXTENSIONS.values()) | frozenset(MEDIA_TYPES.values())
"""Every format a file may be routed to here (all are formats the core knows)."""

# A csv/tsv compressed (report.csv.gz): routed as csv/tsv when the bytes carry the
# compression's magic number; the tabular worker inflates it.
_COMPRESSED = {"gz": b"\x1f\x8b", "zst": b"\x28\xb5\x2f\xfd", "zstd": b"\x28\xb5\x2f\xfd"}
_COMPRESSIBLE = frozenset({"csv", "tsv"})
_PDF, _PARQUET = b"%PDF-", b"PAR1"
ZIP_SIGNATURE = b"PK\x03\x04"
"""A zip archive's first local header: OOXML, OpenDocument and EPUB packages."""
RTF_SIGNATURE = b"{\\rtf"
OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
"""An OLE2 compound file's: .msg, .xls, .doc, .ppt."""
_ZIP, _RTF, _OLE = ZIP_SIGNATURE, RTF_SIGNATURE, OLE_SIGNATURE
_FLAT_ODF = (b"<?xml", b"\xef\xbb\xbf<?xml", b"<office:document")
"""How a flat OpenDocument (.fodt, .fodp: one XML file, root `office:document`) starts."""
_FLAT_ODF_ROOT = re.compile(rb"<office:document[ \t\r\n>]")
"""Its root element's start tag (not `office:document-content`, a package part's)."""


def is_flat_opendocument(data: bytes) -> bool:
    """Whether `data` is a flat OpenDocument: XML whose head names the root element
    `office:document` (a packaged one's parts are `office:document-content` and the like)."""
    return data.startswith(_FLAT_ODF) and _FLAT_ODF_ROOT.search(data, 0, 16384) is not None


IMAGE_SIGNATURES = (
    b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"II*\x00", b"MM\x00*", b"BM", b"GIF87a", b"GIF89a",
    b"P4", b"P5", b"P6",
)  # fmt: skip
"""Leading bytes of the images the docling worker reads by OCR: PNG, JPEG, TIFF (both byte
orders), BMP, GIF, binary Netpbm (PBM, PGM, PPM: what scanners and pdftoppm write). WebP
is RIFF with a WEBP tag at offset 8, checked apart."""
# An image by name must have one of those signatures, or RIFF's (the docling worker checks
# the WEBP tag and refuses other RIFF files as invalid_input).
_IMAGES = (*IMAGE_SIGNATURES, b"RIFF")
_TEXT_FORMATS = frozenset({"csv", "tsv", "html", "mhtml", "md", "txt", "eml", "mbox", "latex"})
_SIGNATURES = {
    "pdf": (_PDF,),
    "parquet": (_PARQUET,),
    "xlsx": (_ZIP,),
    "xlsb": (_ZIP,),
    "ods": (_ZIP,),
    "docx": (_ZIP,),
    "pptx": (_ZIP,),
    "odt": (_ZIP, *_FLAT_ODF),
    "odp": (_ZIP, *_FLAT_ODF),
    "epub": (_ZIP,),
    "xls": (_OLE,),
    "msg": (_OLE,),
    "doc": (_OLE, _RTF),  # Word can save RTF under a .doc name
    "ppt": (_OLE,),
    "rtf": (_RTF,),
    "image": _IMAGES,
}


@dataclass(frozen=True, slots=True)
class Route:
    """Where a file goes: a format, or None and the reason it goes nowhere."""

    format: str | None
    reason: str


def by_name(filename: str) -> str | None:
    """The format a file's name stands for (extension, or a prose file's bare name)."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1].lower()
    stem, dot, extension = base.rpartition(".")
    if dot and stem:
        return EXTENSIONS.get(extension)
    if base in _PROSE_NAMES or base.startswith(("license-", "licence-")):
        return "txt"
    return None


def media_type(content_type: str) -> str:
    """A Content-Type header's media type: lower case, without its parameters."""
    return content_type.split(";", 1)[0].strip().lower()


def _declared(filename: str, content_type: str) -> str | None:
    named = by_name(filename)
    if named is not None:
        return named
    return MEDIA_TYPES.get(media_type(content_type))


def _looks_binary(data: bytes) -> bool:
    head = data[:8192]
    return b"\x00" in head or head.startswith((_PDF, _PARQUET, _ZIP, _OLE))


def _compressed_text(filename: str, data: bytes) -> Route | None:
    stem, dot, extension = filename.lower().rpartition(".")
    magic = _COMPRESSED.get(extension) if dot else None
    inner = EXTENSIONS.get(stem.rpartition(".")[2]) if magic else None
    if magic is None or inner not in _COMPRESSIBLE:
        return None
    if not data.startswith(magic):
        return Route(None, f"named {extension}-compressed {inner} but the bytes lack its signature")
    return Route(inner, f"{extension}-compressed {inner}: signature and name agree")


def detect_format(filename: str, content_type: str, data: bytes) -> Route:
    """The file's format by its name (or media type) and its bytes."""
    compressed = _compressed_text(filename, data)
    if compressed is not None:
        return compressed
    if data.startswith(_PDF):
        return Route("pdf", "signature %PDF-")
    if data.startswith(_PARQUET) and data.endswith(_PARQUET):
        return Route("parquet", "signature PAR1")
    declared = _declared(filename, content_type)
    if declared is None:
        return Route(None, "no known extension or content type")
    if declared in _SIGNATURES:
        if data.startswith(_SIGNATURES[declared]):
            return Route(declared, f"extension and signature agree on {declared}")
        return Route(None, f"named {declared} but the bytes lack its signature")
    if declared in _TEXT_FORMATS and _looks_binary(data):
        return Route(None, f"named {declared} but the bytes are binary")
    return Route(declared, f"{declared} by name, bytes are text")


def routed_formats(
    variable: str, environ: Mapping[str, str], known: frozenset[str] = ROUTABLE_FORMATS
) -> frozenset[str]:
    """The formats files may be routed to: `environ[variable]` (comma-separated, case
    folded, unknown names dropped), or all of `known` when the variable is unset."""
    configured = environ.get(variable)
    if configured is None:
        return known
    chosen = {item.strip().lower() for item in configured.split(",") if item.strip()}
    return frozenset(chosen & known)
