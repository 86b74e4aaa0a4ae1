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

__all__ = [
    "DAMAGED_ZIP",
    "WorkbookPart",
    "canonical_copy",
    "locate_workbook",
    "uses_1904_dates",
    "xlsb_chart_sheets",
]

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
_BRT_BUNDLE_SH = 0x009C
"""One sheet of the list: its state, tab id, relationship id and name."""
_BRT_END_BUNDLE_SHS = 0x0090
_CHART_SHEET = "/chartsheet"


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


def xlsb_chart_sheets(path: Path) -> frozenset[str]:
    """The names of an xlsb package's chart sheets: the sheets of its workbook part whose
    relationship is of type `chartsheet`. calamine reads a chart sheet's part as a
    worksheet and fails on it; a chart has no cells. Empty when the package has none, or
    when its sheet list or relationships cannot be read (the sheets are then read as
    before). Read only after the bomb guard passed the package."""
    try:
        with zipfile.ZipFile(path) as archive:
            workbook = locate_workbook(archive)
            if workbook is None or not workbook.path.endswith(".bin"):
                return frozenset()
            with archive.open(workbook.member) as member:
                sheets = _xlsb_sheets(member.read(_MAX_RELS_BYTES))
            kinds = _relationship_types(archive, workbook) if sheets else {}
    except (*DAMAGED_ZIP, OSError, KeyError):
        return frozenset()
    return frozenset(name for rel, name in sheets if kinds.get(rel, "").endswith(_CHART_SHEET))


def _xlsb_sheets(data: bytes) -> list[tuple[str, str]]:
    """(relationship id, name) of each BrtBundleSh in an xlsb workbook part's records
    ([MS-XLSB] 2.4.304: state and tab id, 4 bytes each, then two counted UTF-16 strings);
    what cannot be read ends the list."""
    sheets: list[tuple[str, str]] = []
    at = 0
    while at < len(data):
        kind, at = _varint(data, at, 2)
        size, at = _varint(data, at, 4)
        if kind < 0 or size < 0 or kind == _BRT_END_BUNDLE_SHS:
            break
        if kind == _BRT_BUNDLE_SH:
            record = data[at : at + size]
            rel, after = _wide_string(record, 8)
            name, _ = _wide_string(record, after)
            if rel is None or name is None:
                break
            sheets.append((rel, name))
        at += size
    return sheets


def _wide_string(record: bytes, at: int) -> tuple[str | None, int]:
    """A character count (4 bytes) and that many UTF-16LE units at `at`: (text, next
    position); None when the record ends first or the count is the null string's."""
    if at + 4 > len(record):
        return None, at
    count = int.from_bytes(record[at : at + 4], "little")
    end = at + 4 + 2 * count
    if count == 0xFFFFFFFF or end > len(record):
        return None, at
    return record[at + 4 : end].decode("utf-16-le", "replace"), end


def _relationship_types(archive: zipfile.ZipFile, workbook: WorkbookPart) -> dict[str, str]:
    """Id → relationship type (lower case) of the workbook part's relationships."""
    folder, base = posixpath.split(workbook.path)
    wanted = posixpath.join(folder, "_rels", f"{base}.rels")
    member = next((i for i in archive.infolist() if _part_name(i.filename) == wanted), None)
    if member is None or member.file_size > _MAX_RELS_BYTES:
        return {}
    try:
        root = ElementTree.fromstring(archive.read(member))
    except ElementTree.ParseError:
        return {}
    return {e.get("Id", ""): e.get("Type", "").lower() for e in root}


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
