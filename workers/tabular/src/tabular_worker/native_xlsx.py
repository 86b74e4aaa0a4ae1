"""The native sheet scanner (`telha_xlsx`, workers/xlsx) in front of fastexcel for xlsx.

calamine's cell reader is most of an xlsx job's time (1.2-1.6 s for 200,000 x 10 cells,
while the csv of the same rows projects in less). The scanner reads the SpreadsheetML
writers emit with memchr on two threads and hands back each column typed the way fastexcel
types it, as an Arrow array that polars takes through the Arrow PyCapsule interface: no
Python object per cell. It declines (`telha_xlsx.Declined`, with the construct's name) anything
it does not handle exactly: an error cell, a column mixing kinds other than numbers and text
(those are read as text, each number rendered as calamine renders it), a header cell that is
not a distinct non-empty string, a namespace prefix, an entity other than the XML five, a
number format whose class is in doubt, ... The sheet is then read through fastexcel as
before (spreadsheet.py), so what a sheet becomes never depends on which reader ran:
`tests/test_native_xlsx.py` holds the two to the same tables.

Which parts: the sheets the workbook part lists (`xl/workbook.xml`, its relationships
beside it), `xl/sharedStrings.xml` and `xl/styles.xml`, exactly as calamine opens a
package laid out the usual way (opc.py makes that layout first). A cell style's class
(date-time, duration, other) comes from its number format as calamine decides it
(`telha_xlsx.number_format_class` / `builtin_format_class`).
"""

from __future__ import annotations

import logging
import posixpath
import zipfile
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import polars as pl
import telha_xlsx

from .opc import DAMAGED_ZIP

__all__ = ["NativeSheets", "Scanned", "frame", "native_sheets"]

log = logging.getLogger(__name__)

_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_WORKBOOK = "xl/workbook.xml"
_WORKBOOK_RELS = "xl/_rels/workbook.xml.rels"
_SHARED = "xl/sharedStrings.xml"
_STYLES = "xl/styles.xml"
_MAX_META_BYTES = 64 << 20
"""The most a workbook, relationships or styles part may inflate to for this reader."""
_THREADS = 2


@dataclass(frozen=True, slots=True)
class Scanned:
    """One sheet as the scanner read it."""

    header: list[str]
    typed: pl.DataFrame
    lost: dict[int, pl.Series]
    """Per text column holding numbers, those whose rendering loses precision (else null)."""


@dataclass(frozen=True, slots=True)
class NativeSheets:
    """Where a workbook's sheets are, for the scanner."""

    path: Path
    members: dict[str, str]
    """Sheet name -> its worksheet part."""
    shared: str | None
    styles: bytes
    """Per cell style (the `s` attribute), its class."""
    date1904: bool
    limits: tuple[int, int]
    """The bomb guard's max bytes and max ratio, which bound what the scanner inflates."""

    @property
    def names(self) -> list[str]:
        """The sheets in workbook order."""
        return list(self.members)

    def typed(self, name: str) -> Scanned | None:
        """The sheet's header, its data rows typed as fastexcel's
        `load_sheet(schema_sample_rows=None)` types them (columns t0, t1, ...; a column of
        numbers and text as text, each number as calamine renders it) and, by column, the
        numbers whose rendering reads back as another double; None when the scanner
        declines the sheet."""
        member = self.members.get(name)
        if member is None:
            return None
        try:
            max_bytes, max_ratio = self.limits
            header, columns, lost = telha_xlsx.read_package_sheet(
                self.path,
                member,
                self.shared,
                self.styles,
                self.date1904,
                _THREADS,
                max_bytes=max_bytes,
                max_ratio=max_ratio,
            )
        except telha_xlsx.Declined as why:
            log.debug("sheet %r read by fastexcel: the scanner declined %s", name, why)
            return None
        try:
            numbers = {i: pl.Series(c).alias(f"n{i}") for i, c in enumerate(lost) if c is not None}
            return Scanned(header, frame(columns), numbers)
        except Exception:  # polars refusing the columns would be the scanner's defect
            log.warning(
                "sheet %r read by fastexcel: its columns did not import", name, exc_info=True
            )
            return None


def native_sheets(
    path: Path, *, date1904: bool, limits: tuple[int, int] = (256 << 20, 200)
) -> NativeSheets | None:
    """The scanner's view of the workbook at `path` (an xlsx package in the usual layout);
    None when its parts are not where calamine would look. Its sheet list is the workbook
    part's: the caller checks it against fastexcel's."""
    try:
        with zipfile.ZipFile(path) as archive:
            parts = set(archive.namelist())
            members = _sheet_members(archive, parts)
            if members is None:
                return None
            styles = _style_classes(archive, parts)
            shared = _SHARED if _SHARED in parts else None
    except (
        *DAMAGED_ZIP,
        NotImplementedError,
        OSError,
        ElementTree.ParseError,
        KeyError,
        ValueError,
    ):
        # A damaged part (or one in a compression method zipfile lacks): the bomb guard,
        # which inflates every member, gives the typed verdict (`checked()`).
        return None
    if styles is None or (shared is None and _other_spelling(parts, _SHARED)):
        return None
    return NativeSheets(path, members, shared, styles, date1904, limits)


def _read(archive: zipfile.ZipFile, member: str) -> bytes:
    if archive.getinfo(member).file_size > _MAX_META_BYTES:
        raise ValueError(f"{member} is larger than the scanner reads")
    return archive.read(member)


def _other_spelling(parts: set[str], name: str) -> bool:
    """A part of this name in another case or with backslashes (calamine would not see it
    the same way: leave the workbook to it)."""
    return any(p != name and p.replace("\\", "/").lower() == name.lower() for p in parts)


def _sheet_members(archive: zipfile.ZipFile, parts: set[str]) -> dict[str, str] | None:
    if _WORKBOOK not in parts or _WORKBOOK_RELS not in parts:
        return None
    targets: dict[str, str] = {}
    rels = ElementTree.fromstring(_read(archive, _WORKBOOK_RELS))
    for rel in rels.iter(f"{_PKG_REL}Relationship"):
        kind, target = rel.get("Type", ""), rel.get("Target", "")
        if kind.endswith("/worksheet") and rel.get("TargetMode") != "External":
            part = target.lstrip("/") if target.startswith("/") else posixpath.join("xl", target)
            targets[rel.get("Id", "")] = posixpath.normpath(part)
    sheets = ElementTree.fromstring(_read(archive, _WORKBOOK)).find(f"{_MAIN}sheets")
    if sheets is None:
        return None
    members: dict[str, str] = {}
    for sheet in sheets.iter(f"{_MAIN}sheet"):
        name, member = sheet.get("name"), targets.get(sheet.get(f"{_REL}id", ""))
        if name is None or member is None or member not in parts or name in members:
            return None
        members[name] = member
    return members


def _style_classes(archive: zipfile.ZipFile, parts: set[str]) -> bytes | None:
    """Per cellXfs entry, what its number format makes of a number: calamine reads the
    custom formats (`numFmts`, a non-empty code) by id as written, else the built-in id."""
    if _STYLES not in parts:
        return None if _other_spelling(parts, _STYLES) else b""
    root = ElementTree.fromstring(_read(archive, _STYLES))
    custom = {
        fmt.get("numFmtId", ""): code
        for fmt in root.iter(f"{_MAIN}numFmt")
        if (code := fmt.get("formatCode"))
    }
    xfs = root.find(f"{_MAIN}cellXfs")
    classes = bytearray()
    for xf in [] if xfs is None else xfs.iter(f"{_MAIN}xf"):
        number_format = xf.get("numFmtId")
        if number_format is None:
            classes.append(0)
        elif number_format in custom:
            classes.append(telha_xlsx.number_format_class(custom[number_format]))
        else:
            classes.append(telha_xlsx.builtin_format_class(number_format))
    return bytes(classes)


def frame(columns: list[telha_xlsx.Column]) -> pl.DataFrame:
    """The scanner's columns (Arrow arrays, taken without a copy) as columns t0, t1, ...;
    polars reads a Utf8View array as String and Timestamp/Duration(ms) as their ms types."""
    return pl.DataFrame([pl.Series(column).alias(f"t{i}") for i, column in enumerate(columns)])
