"""Finding the workbook in an xlsx/xlsb package the way Open Packaging Conventions say,
and handing calamine a package laid out the way it expects.

OPC part names are case-insensitive and some writers store them with backslashes
(`xl\\workbook.xml`); the main part is whatever the package relationship of type
`officeDocument` in `_rels/.rels` names, not necessarily `xl/workbook.xml`. calamine opens
only `xl/workbook.xml` (or `.bin`) with its relationships beside it. So: the workbook part
is located through `_rels/.rels` (else the usual names, any case or slash), and when the
package does not already use the usual names a copy is written with every part under
the workbook's folder moved under `xl/` and the workbook renamed to `xl/workbook.<ext>`
(its relationships part with it), slashes forward. The archive was inflated and bounded by
the bomb guard first, so the copy is bounded too.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

__all__ = ["DAMAGED_ZIP", "WorkbookPart", "canonical_copy", "locate_workbook", "uses_1904_dates"]

DAMAGED_ZIP = (zipfile.BadZipFile, zlib.error, EOFError, UnicodeDecodeError)
"""What zipfile raises reading a damaged archive: a local header that is not one (bad
magic, a name differing from the directory's), a bad CRC-32, a deflate stream zlib
refuses, a stream ending early, a member name flagged UTF-8 that is not. The file's
fault, not the reader's."""

_OFFICE_DOCUMENT = "/officedocument"
_MAX_RELS_BYTES = 1 << 20
_USUAL = ("xl/workbook.xml", "xl/workbook.bin")
_DATE1904 = re.compile(rb"""date1904\s*=\s*["'](1|true|on)["']""", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class WorkbookPart:
    """Where the workbook is in a package."""

    member: str
    """The zip member's name as stored."""
    path: str
    """Its part name: forward slashes, no leading slash, lower-case."""
    canonical: bool
    """Whether calamine finds it as the package stands."""


def _part_name(member: str) -> str:
    return member.replace("\\", "/").lstrip("/").lower()


def _relationship_target(archive: zipfile.ZipFile, parts: dict[str, str]) -> str | None:
    rels = parts.get("_rels/.rels")
    if rels is None or archive.getinfo(rels).file_size > _MAX_RELS_BYTES:
        return None
    try:
        root = ElementTree.fromstring(archive.read(rels))
    except (ElementTree.ParseError, zipfile.BadZipFile, OSError):
        return None
    for element in root:
        kind = element.get("Type", "").lower()
        target = element.get("Target")
        if kind.endswith(_OFFICE_DOCUMENT) and target and element.get("TargetMode") != "External":
            return posixpath.normpath(_part_name(target))
    return None


def locate_workbook(archive: zipfile.ZipFile) -> WorkbookPart | None:
    """The workbook part of an xlsx/xlsb package, or None when it has none."""
    parts = {_part_name(info.filename): info.filename for info in archive.infolist()}
    target = _relationship_target(archive, parts)
    found = target if target in parts else next((p for p in _USUAL if p in parts), None)
    if found is None:
        return None
    member = parts[found]
    canonical = member in _USUAL and all("\\" not in name for name in parts.values())
    return WorkbookPart(member=member, path=found, canonical=canonical)


def uses_1904_dates(archive: zipfile.ZipFile, workbook: WorkbookPart) -> bool:
    """Whether the workbook counts dates from 1904: an xlsx workbook part's
    `<workbookPr date1904="1"/>` (any spelling), an xlsb one's BrtWbProp record."""
    with archive.open(workbook.member) as member:
        head = member.read(_MAX_RELS_BYTES)
    if workbook.path.endswith(".bin"):
        return _xlsb_1904(head)
    return _DATE1904.search(head) is not None


_BRT_WB_PROP = 0x0099
_BRT_BEGIN_BUNDLE_SHS = 0x008F
"""The sheet list, which follows the workbook's properties ([MS-XLSB] 2.1.7.61)."""


def _xlsb_1904(data: bytes) -> bool:
    """The f1904DateSystem bit of the first BrtWbProp in an xlsb workbook part's records
    (each: a type and a size in 7-bit groups, then the data); False without one."""
    at = 0
    while at < len(data):
        kind, at = _varint(data, at, 2)
        size, at = _varint(data, at, 4)
        if kind == _BRT_WB_PROP:
            return at < len(data) and size > 0 and bool(data[at] & 1)
        if kind == _BRT_BEGIN_BUNDLE_SHS or kind < 0 or size < 0:
            return False
        at += size
    return False


def _varint(data: bytes, at: int, most: int) -> tuple[int, int]:
    """A record header field of up to `most` bytes from `at`: (value, next position);
    (-1, end) when the data ends inside it."""
    value = 0
    for shift in range(most):
        if at >= len(data):
            return -1, len(data)
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << (7 * shift)
        if not byte & 0x80:
            break
    return value, at


def _renamed(member: str, workbook: WorkbookPart) -> str:
    """A member's name in the copy: slashes forward, case kept (only matching ignores it)."""
    name = member.replace("\\", "/").lstrip("/")
    part = name.lower()
    folder, base = posixpath.split(workbook.path)
    extension = posixpath.splitext(base)[1]
    if part == workbook.path:
        return f"xl/workbook{extension}"
    if part == posixpath.join(folder, "_rels", f"{base}.rels"):
        return f"xl/_rels/workbook{extension}.rels"
    if folder and folder != "xl" and part.startswith(f"{folder}/"):
        return "xl/" + name[len(folder) + 1 :]
    return name


def canonical_copy(archive: zipfile.ZipFile, workbook: WorkbookPart, target: Path) -> Path:
    """Writes the package to `target` with the usual part names; returns `target`."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as out:
        for info in archive.infolist():
            if info.is_dir():
                continue
            name = _renamed(info.filename, workbook)
            with archive.open(info) as source, out.open(name, "w") as sink:
                while block := source.read(1 << 20):
                    sink.write(block)
    return target
