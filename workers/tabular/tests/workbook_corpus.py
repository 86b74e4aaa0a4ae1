"""Spreadsheets and compressed text for the real-world classes of issue 16, built by code:
exact numbers, durations and the 1904 date system, packaging variants, legacy and other
workbook formats, encryption, compressed csv/tsv. tabular_corpus.py puts them in the
golden corpus; test_tabular_real_world.py asserts what each must become."""

from __future__ import annotations

import datetime as dt
import gzip
import io
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


def _rewrite(data: bytes, rename: dict[str, str], replace: dict[bytes, bytes]) -> bytes:
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
    return _rewrite(data, {name: name.replace("/", "\\") for name in names}, {})


def moved_workbook(data: bytes) -> bytes:
    """The xlsx `data` with its workbook part at xl/book.xml, found only through the
    package relationships (_rels/.rels) and the content types."""
    return _rewrite(
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
