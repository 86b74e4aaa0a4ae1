"""Attachments become child jobs: which format, under which name, and when not at all.

Format: from the file name's extension (or the declared content type when there is no
usable extension), checked against the bytes. A signature that settles the question
(`%PDF-`, `PAR1`) wins over the name; a binary format (xlsx, docx, msg, …) needs its
signature; a text format (csv, eml, …) needs bytes without NULs and without a binary
signature. A part that fails the check is not routed: its ATTACHMENT node says why.

Name: `attachment:<blake3 hex of the bytes>`, so identical bytes attached to any number
of messages are one child job and one source document (the core dedups names per
tenant; PR-067).

Too large: an attachment over `max_attachment_bytes` (a job option, default 25 MiB), or
one that would push the message's inline attachment bytes past 40 MiB (child content
travels base64-encoded inside the parent's submission, whose limit is 64 MiB), still
becomes a child job of its format and name, but without content and with the option
`oversize` set. The harness fails such a job at once as permanent `too_large` (see
workers_common.driver), so the child is dead with a clear reason in `telha job`, the
parent succeeds, and the ATTACHMENT node records `too_large: true`. The alternative,
recording only a marker on the node, would leave nothing an operator can list, retry
with a larger limit, or count among the dead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import blake3

__all__ = [
    "DEFAULT_MAX_ATTACHMENT_BYTES",
    "FORMATS_ENV",
    "INLINE_BUDGET_BYTES",
    "ROUTABLE_FORMATS",
    "Route",
    "attachment_name",
    "detect_format",
    "routed_formats",
]

DEFAULT_MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024
INLINE_BUDGET_BYTES = 40 * 1024 * 1024
"""Most attachment bytes one submission carries inline (base64 grows them by a third)."""

FORMATS_ENV = "EMAIL_ATTACHMENT_FORMATS"
"""Comma-separated formats to route attachments to (the pool's `env` in supervisor.toml);
unset means every format below. A format outside it gets an ATTACHMENT node only."""

_EXTENSIONS = {
    "csv": "csv", "tsv": "tsv", "tab": "tsv", "xlsx": "xlsx", "xlsm": "xlsx", "xlsb": "xlsb",
    "xls": "xls", "ods": "ods", "parquet": "parquet",
    "pdf": "pdf", "docx": "docx", "html": "html", "htm": "html", "md": "md",
    "markdown": "md", "txt": "txt", "text": "txt", "eml": "eml", "msg": "msg",
}  # fmt: skip
_CONTENT_TYPES = {
    "text/csv": "csv",
    "text/tab-separated-values": "tsv",
    "application/pdf": "pdf",
    "message/rfc822": "eml",
    "application/vnd.ms-outlook": "msg",
    "text/html": "html",
    "text/markdown": "md",
    "text/plain": "txt",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.apache.parquet": "parquet",
    "application/vnd.ms-excel": "xls",
    "application/vnd.ms-excel.sheet.binary.macroenabled.12": "xlsb",
    "application/vnd.ms-excel.sheet.macroenabled.12": "xlsx",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
}
# A csv/tsv compressed (report.csv.gz): routed as csv/tsv when the bytes carry the
# compression's magic number; the tabular worker inflates it.
_COMPRESSED = {"gz": b"\x1f\x8b", "zst": b"\x28\xb5\x2f\xfd", "zstd": b"\x28\xb5\x2f\xfd"}
_COMPRESSIBLE = frozenset({"csv", "tsv"})
ROUTABLE_FORMATS = frozenset(_EXTENSIONS.values())
"""Every format this worker can name for an attachment (all are formats the core knows)."""

_PDF, _PARQUET = b"%PDF-", b"PAR1"
_ZIP = b"PK\x03\x04"
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_TEXT_FORMATS = frozenset({"csv", "tsv", "html", "md", "txt", "eml"})
_SIGNATURES = {
    "pdf": (_PDF,),
    "parquet": (_PARQUET,),
    "xlsx": (_ZIP,),
    "xlsb": (_ZIP,),
    "ods": (_ZIP,),
    "xls": (_OLE,),
    "docx": (_ZIP,),
    "msg": (_OLE,),
}


@dataclass(frozen=True, slots=True)
class Route:
    """Where an attachment goes: a format, or None and the reason it goes nowhere."""

    format: str | None
    reason: str


def attachment_name(data: bytes) -> str:
    """The child job's name: derived from the content alone (PR-067)."""
    return f"attachment:{blake3.blake3(data).hexdigest()}"


def _declared(filename: str, content_type: str) -> str | None:
    _, dot, extension = filename.rpartition(".")
    if dot and extension.lower() in _EXTENSIONS:
        return _EXTENSIONS[extension.lower()]
    return _CONTENT_TYPES.get(content_type)


def _looks_binary(data: bytes) -> bool:
    head = data[:8192]
    return b"\x00" in head or head.startswith((_PDF, _PARQUET, _ZIP, _OLE))


def _compressed_text(filename: str, data: bytes) -> Route | None:
    stem, dot, extension = filename.lower().rpartition(".")
    magic = _COMPRESSED.get(extension) if dot else None
    inner = _EXTENSIONS.get(stem.rpartition(".")[2]) if magic else None
    if magic is None or inner not in _COMPRESSIBLE:
        return None
    if not data.startswith(magic):
        return Route(None, f"named {extension}-compressed {inner} but the bytes lack its signature")
    return Route(inner, f"{extension}-compressed {inner}: signature and name agree")


def detect_format(filename: str, content_type: str, data: bytes) -> Route:
    """The attachment's format by extension (or content type) and magic bytes."""
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


def routed_formats(environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """The formats attachments may be routed to, from EMAIL_ATTACHMENT_FORMATS."""
    configured = environ.get(FORMATS_ENV)
    if configured is None:
        return ROUTABLE_FORMATS
    chosen = {item.strip().lower() for item in configured.split(",") if item.strip()}
    return frozenset(chosen & ROUTABLE_FORMATS)
