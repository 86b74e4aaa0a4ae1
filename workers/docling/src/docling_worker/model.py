"""What every input becomes before projection: a DoclingDocument and what its source says
about itself (metadata a DoclingDocument has no field for)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from docling_core.types.doc import DoclingDocument

__all__ = ["Converted", "SourceMeta"]


@dataclass(frozen=True, slots=True)
class SourceMeta:
    """Document-level facts from the source file (PDF Info, DOCX core properties, HTML meta)."""

    title: str | None = None
    authors: tuple[str, ...] = ()
    created: datetime | None = None
    modified: datetime | None = None
    language: str | None = None
    page_count: int | None = None
    encoding: str | None = None
    """How a text source that was not UTF-8 was decoded (workers_common.text), with
    `encoding_source` (`bom`, `escapes`, `detected`) and the bytes it had to replace."""
    encoding_source: str | None = None
    replaced_bytes: int = 0
    read_as: str | None = None
    """The format whose reader read a legacy document (.doc, .ppt, .rtf): `docx` or `pptx`."""
    url: str | None = None
    """Where a saved web page (MHTML) was saved from."""
    converted_by: str | None = None
    """The program that made it that format (`libreoffice`); None when the bytes already
    were (a DOCX saved under a .doc name)."""


@dataclass(slots=True)
class Converted:
    """One input, converted: the document, its metadata, per-format counters, and extra
    node properties by item (`self_ref` → properties: an OCR'd item's `ocr`, ...)."""

    document: DoclingDocument
    meta: SourceMeta
    stats: dict[str, int] = field(default_factory=dict)
    item_properties: dict[str, dict[str, Any]] = field(default_factory=dict)
