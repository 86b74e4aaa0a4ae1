"""Spreadsheets and compressed text for the real-world classes of issue 16, built by code:
exact numbers, durations and the 1904 date system, packaging variants, legacy and other
workbook formats, encryption, compressed csv/tsv. tabular_corpus.py puts them in the
golden corpus; test_tabular_real_world.py asserts what each must become."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import struct
import tempfile
import zipfile
from pathlib import Path

import xlsxwriter
import xlwt
import zstandard
from extract_msg.ole_writer import OleWriter

__all__ = [
    "EXACT_FLOATS",
    "backslash_names",
    "durations_xlsx",
    "encrypted_package",
    "exact_numbers_xlsx",
    "gzip_bytes",
    "legacy_xls",
    "moved_workbook",
    "ods_bytes",
    "xlsb_bytes",
    "zstd_bytes",
]

EXACT_FLOATS = (0.3010299956639812, 1e-20, 2.220446049250313e-16, 123456789.1234568, 5.0, -2.5e-7)
"""Doubles calamine's text rounds to 9 decimals (1e-20 to 0); 5.0 is shown as 5. Each has
at most 16 significant digits, which is what xlsxwriter writes into the file."""


def _book(buffer: io.BytesIO, **options: object) -> xlsxwriter.Workbook:
    book = xlsxwriter.Workbook(buffer, {"in_memory": True, **options})
    # Fixed document properties: xlsxwriter would stamp the current time otherwise.
    book.set_properties({"created": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)})
    return book


def exact_numbers_xlsx() -> bytes:
    """A number column of EXACT_FLOATS, and a mixed column: a number, the text `0.3`
    typed as text (kept as written) and `n/a`."""
    buffer = io.BytesIO()
    book = _book(buffer)
    sheet = book.add_worksheet("Numbers")
    sheet.write_row(0, 0, ["value", "mixed"])
    for row, value in enumerate(EXACT_FLOATS, start=1):
        sheet.write_number(row, 0, value)
    sheet.write_number(1, 1, 0.3010299956639812)
    sheet.write_string(2, 1, "0.3")
    sheet.write_string(3, 1, "n/a")
    book.close()
    return buffer.getvalue()


def durations_xlsx(*, date1904: bool = False) -> bytes:
    """Durations as spreadsheets store them: `[h]:mm:ss` cells, a time of day through
    `hh:mm:ss`, a day count with a time through a date-time format; beside a real date
    (which the 1904 date system must not move)."""
    buffer = io.BytesIO()
    book = _book(buffer, date_1904=date1904)
    hours = book.add_format({"num_format": "[h]:mm:ss"})
    clock = book.add_format({"num_format": "hh:mm:ss"})
    stamp = book.add_format({"num_format": "yyyy-mm-dd hh:mm:ss"})
    day = book.add_format({"num_format": "yyyy-mm-dd"})
    sheet = book.add_worksheet("Times")
    sheet.write_row(0, 0, ["task", "elapsed", "start time", "day count", "due"])
    rows = [
        ("build", 10 + (15 * 3600 + 10 * 60 + 10) / 86400, 0.5, 2.25),
        ("test", 1.5 / 24, 0.75, 0.0),
    ]
    for at, (task, elapsed, start, days) in enumerate(rows, start=1):
        sheet.write_string(at, 0, task)
        sheet.write_number(at, 1, elapsed, hours)
        sheet.write_number(at, 2, start, clock)
        sheet.write_number(at, 3, days, stamp)
        sheet.write_datetime(at, 4, dt.datetime(2026, 3, at + 3), day)
    book.close()
    return buffer.getvalue()


def rewrite(data: bytes, rename: dict[str, str], replace: dict[bytes, bytes]) -> bytes:
    """The zip `data` with members renamed and byte strings replaced in every member."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            body = source.read(info.filename)
            for old, new in replace.items():
                body = body.replace(old, new)
            stamp = zipfile.ZipInfo(rename.get(info.filename, info.filename), (2026, 1, 1, 0, 0, 0))
            stamp.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(stamp, body)
    return out.getvalue()


def backslash_names(data: bytes) -> bytes:
    """The xlsx `data` with every part name written with backslashes (xl\\workbook.xml)."""
    with zipfile.ZipFile(io.BytesIO(data)) as source:
        names = source.namelist()
    return rewrite(data, {name: name.replace("/", "\\") for name in names}, {})


def moved_workbook(data: bytes) -> bytes:
    """The xlsx `data` with its workbook part at xl/book.xml, found only through the
    package relationships (_rels/.rels) and the content types."""
    return rewrite(
        data,
        {"xl/workbook.xml": "xl/book.xml", "xl/_rels/workbook.xml.rels": "xl/_rels/book.xml.rels"},
        {b"xl/workbook.xml": b"xl/book.xml"},
    )


def legacy_xls() -> bytes:
    """A BIFF8 .xls: text, an integer, an exact float, a date."""
    book = xlwt.Workbook()
    sheet = book.add_sheet("Legacy")
    date = xlwt.easyxf(num_format_str="yyyy-mm-dd")
    for col, name in enumerate(["name", "qty", "ratio", "effective date"]):
        sheet.write(0, col, name)
    for row, (name, qty, ratio, day) in enumerate(
        [("Ana", 3, 0.3010299956639812, dt.date(2026, 3, 4)), ("Bo", 4, 0.5, dt.date(2026, 3, 5))],
        start=1,
    ):
        sheet.write(row, 0, name)
        sheet.write(row, 1, qty)
        sheet.write(row, 2, ratio)
        sheet.write(row, 3, day, date)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


_ODS_CONTENT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-content
  xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
  xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"
  xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">
<office:body><office:spreadsheet><table:table table:name="Plan">
<table:table-row>
<table:table-cell office:value-type="string"><text:p>item</text:p></table:table-cell>
<table:table-cell office:value-type="string"><text:p>amount</text:p></table:table-cell>
<table:table-cell office:value-type="string"><text:p>due</text:p></table:table-cell>
</table:table-row>
<table:table-row>
<table:table-cell office:value-type="string"><text:p>rent</text:p></table:table-cell>
<table:table-cell office:value-type="float" office:value="0.3010299956639812">
<text:p>0.30</text:p></table:table-cell>
<table:table-cell office:value-type="date" office:date-value="2026-03-04">
<text:p>04/03/26</text:p></table:table-cell>
</table:table-row>
</table:table></office:spreadsheet></office:body></office:document-content>
"""


def ods_bytes() -> bytes:
    """The smallest OpenDocument spreadsheet: mimetype first and stored, content.xml with
    one sheet (text, a float whose shown text is rounded, a date)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        stamp = (2026, 1, 1, 0, 0, 0)
        archive.writestr(
            zipfile.ZipInfo("mimetype", stamp), "application/vnd.oasis.opendocument.spreadsheet"
        )
        content = zipfile.ZipInfo("content.xml", stamp)
        content.compress_type = zipfile.ZIP_DEFLATED
        # calamine's ODS reader wants no text between cells: no line breaks.
        archive.writestr(content, "".join(_ODS_CONTENT.splitlines()))
        manifest = zipfile.ZipInfo("META-INF/manifest.xml", stamp)
        archive.writestr(
            manifest,
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:'
            'manifest:1.0"><manifest:file-entry manifest:full-path="/" manifest:media-type='
            '"application/vnd.oasis.opendocument.spreadsheet"/><manifest:file-entry '
            'manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
            "</manifest:manifest>",
        )
    return out.getvalue()


def encrypted_package() -> bytes:
    """What Office writes for a password-protected xlsx: an OLE2 file holding the
    EncryptionInfo and EncryptedPackage streams (their contents do not matter here)."""
    writer = OleWriter()
    writer.addEntry("EncryptionInfo", b"\x04\x00\x04\x00\x40\x00\x00\x00" + b"\x00" * 56)
    writer.addEntry("EncryptedPackage", b"\x00" * 512)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "locked.xlsx"
        writer.write(path)
        return path.read_bytes()


def gzip_bytes(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def zstd_bytes(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=3).compress(data)


# -- xlsb (BIFF12 records in an OPC package, [MS-XLSB]) -----------------------------------
# No tool here writes .xlsb, so the records are written by hand: each is its type (7 bits a
# byte, low byte first, high bit set when a byte follows), its size (the same way, up to four
# bytes), then its data. A cell's data starts with its column (u32) and its style (u24 + a
# flags byte); strings are a u32 count of UTF-16LE code units, then the units.

_XLSB_TYPES = {
    "workbook": "application/vnd.ms-excel.sheet.binary.macroEnabled.main",
    "worksheet": "application/vnd.ms-excel.worksheet",
    "styles": "application/vnd.ms-excel.styles",
    "strings": "application/vnd.ms-excel.sharedStrings",
    "chartsheet": "application/vnd.ms-excel.chartsheet",
}
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _record(kind: int, data: bytes = b"") -> bytes:
    return _varint(kind) + _varint(len(data)) + data


def _wide(text: str) -> bytes:
    units = text.encode("utf-16-le")
    return struct.pack("<I", len(units) // 2) + units


def _cell(col: int, style: int) -> bytes:
    return struct.pack("<II", col, style)


XLSB_SERIAL = 46082.0
"""2026-03-01 as a 1900-system serial (the 1904 system counts 1462 days fewer)."""


def xlsb_bytes(*, date1904: bool = False, chart: bool = False) -> bytes:
    """A one-sheet .xlsb: a header row, then rows of a shared and an inline string, a
    double calamine's text would round, a date (style 1: built-in format 14), a duration
    (style 2: built-in format 46, `[h]:mm:ss`) and a boolean. `chart`: a chart sheet
    "Trend" after it (a chart sheet's records: views and no cells, as Excel writes one)."""
    serial = XLSB_SERIAL - (1462 if date1904 else 0)
    rows: list[list[tuple[int, bytes]]] = [
        [(0x06, _wide(name)) for name in ("name", "ratio", "when", "took", "ok")],
        [
            (0x07, struct.pack("<I", 0)),  # BrtCellIsst: shared string 0
            (0x05, struct.pack("<d", 0.3010299956639812)),  # BrtCellReal
            (0x05, struct.pack("<d", serial)),
            (0x05, struct.pack("<d", 1.5)),
            (0x04, b"\x01"),  # BrtCellBool
        ],
        [
            (0x06, _wide("Bruno")),  # BrtCellSt: an inline string
            (0x05, struct.pack("<d", 5.0)),
            (0x05, struct.pack("<d", serial + 1)),
            (0x05, struct.pack("<d", 0.25)),
            (0x04, b"\x00"),
        ],
    ]
    styles = {2: 1, 3: 2}  # column -> style: when is a date, took a duration
    sheet = _record(0x81)  # BrtBeginSheet
    sheet += _record(0x94, struct.pack("<IIII", 0, len(rows) - 1, 0, 4))  # BrtWsDim
    sheet += _record(0x91)  # BrtBeginSheetData
    for index, cells in enumerate(rows):
        sheet += _record(0x00, struct.pack("<I", index) + b"\0" * 13)  # BrtRowHdr
        for col, (kind, value) in enumerate(cells):
            style = styles.get(col, 0) if index else 0
            sheet += _record(kind, _cell(col, style) + value)
    sheet += _record(0x92) + _record(0x82)  # BrtEndSheetData, BrtEndSheet
    xf = struct.Struct("<HH12s")  # BrtXF: parent, number format, the rest zero
    styles_bin = _record(0x0269, struct.pack("<I", 3))  # BrtBeginCellXFs
    for number_format in (0, 14, 46):
        styles_bin += _record(0x2F, xf.pack(0xFFFF, number_format, b""))
    styles_bin += _record(0x026A)  # BrtEndCellXFs
    strings = _record(0x9F, struct.pack("<II", 1, 1))  # BrtBeginSst: total, unique
    strings += _record(0x13, b"\0" + _wide("Ana")) + _record(0xA0)  # BrtSSTItem, BrtEndSst
    book = _record(0x83)  # BrtBeginBook
    book += _record(0x99, struct.pack("<I", 1 if date1904 else 0) + b"\0" * 8)  # BrtWbProp
    book += _record(0x8F)  # BrtBeginBundleShs
    book += _record(0x9C, struct.pack("<II", 0, 1) + _wide("rId1") + _wide("Data"))
    if chart:  # BrtBundleSh of the chart sheet
        book += _record(0x9C, struct.pack("<II", 0, 2) + _wide("rId4") + _wide("Trend"))
    book += _record(0x90) + _record(0x84)  # BrtEndBundleShs, BrtEndBook
    # BrtBeginSheet, BrtBeginCsViews, BrtBeginCsView (zoom 88), BrtEndCsView, BrtEndCsViews,
    # BrtEndSheet.
    chart_sheet = _record(0x81) + _record(0x8B) + _record(0x8D, struct.pack("<HI4x", 0, 88))
    chart_sheet += _record(0x8E) + _record(0x8C) + _record(0x82)
    overrides = {
        "/xl/workbook.bin": "workbook",
        "/xl/worksheets/sheet1.bin": "worksheet",
        "/xl/styles.bin": "styles",
        "/xl/sharedStrings.bin": "strings",
    }
    if chart:
        overrides["/xl/chartsheets/sheet1.bin"] = "chartsheet"
    content_types = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Types xmlns='
        '"http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType='
        '"application/vnd.openxmlformats-package.relationships+xml"/>'
        + "".join(
            f'<Override PartName="{part}" ContentType="{_XLSB_TYPES[kind]}"/>'
            for part, kind in overrides.items()
        )
        + "</Types>"
    )
    package_rels = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns='
        '"http://schemas.openxmlformats.org/package/2006/relationships">'
        f'<Relationship Id="rId1" Type="{_REL}/officeDocument" Target="xl/workbook.bin"/>'
        "</Relationships>"
    )
    workbook_rels = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns='
        '"http://schemas.openxmlformats.org/package/2006/relationships">'
        f'<Relationship Id="rId1" Type="{_REL}/worksheet" Target="worksheets/sheet1.bin"/>'
        f'<Relationship Id="rId2" Type="{_REL}/styles" Target="styles.bin"/>'
        f'<Relationship Id="rId3" Type="{_REL}/sharedStrings" Target="sharedStrings.bin"/>'
        + (
            f'<Relationship Id="rId4" Type="{_REL}/chartsheet" Target="chartsheets/sheet1.bin"/>'
            if chart
            else ""
        )
        + "</Relationships>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in (
            ("[Content_Types].xml", content_types.encode()),
            ("_rels/.rels", package_rels.encode()),
            ("xl/workbook.bin", book),
            ("xl/_rels/workbook.bin.rels", workbook_rels.encode()),
            ("xl/worksheets/sheet1.bin", sheet),
            ("xl/styles.bin", styles_bin),
            ("xl/sharedStrings.bin", strings),
            *([("xl/chartsheets/sheet1.bin", chart_sheet)] if chart else []),
        ):
            archive.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)
    return out.getvalue()
