"""The native sheet scanner (telha_xlsx) against fastexcel: every sheet it reads becomes the
same table, cell for cell and count for count, as fastexcel's reads make it; every sheet it
declines says why and still becomes that table (through fastexcel).

The workbooks are written here by xlsxwriter, in both of its layouts (shared strings, and
`constant_memory`'s inline strings), and cover what the scanner types itself: numbers of
every magnitude, date-times and times through built-in and custom formats, durations,
the epoch's first days, the 1904 date system, booleans, rich and escaped strings, formula
results, sparse and offset ranges.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import random
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastexcel
import pytest
import telha_xlsx
import xlsxwriter
from hypothesis import given, settings
from hypothesis import strategies as st
from workbook_corpus import durations_xlsx, exact_numbers_xlsx

from tabular_worker import spreadsheet
from tabular_worker.native_xlsx import frame, native_sheets
from tabular_worker.options import TabularOptions
from tabular_worker.source import open_tables
from tabular_worker.tables import TableSource
from workers_common import TooLarge

from tabular_corpus import xlsx_bytes

Table = tuple[list[str], dict[int, dict[str, int]], list[tuple[Any, ...]]]


def _table(source: TableSource) -> Table:
    rows = [row for part in source.parts() for row in part.collect().rows()]
    return source.header, {k: dict(v) for k, v in source.known.items()}, rows


def _both(path: Path, *, date1904: bool = False) -> list[tuple[bool, Table | None, Table]]:
    """Per sheet: whether the scanner read it, its table through the scanner's path and
    through fastexcel's alone."""
    reader = fastexcel.read_excel(path)
    names = reader.sheet_names
    native = native_sheets(path, date1904=date1904)
    assert native is not None, "the scanner found the workbook's parts"
    assert native.names == names
    out: list[tuple[bool, Table | None, Table]] = []
    for index, name in enumerate(names):
        scanned = native.typed(name)
        one = spreadsheet._one_read(reader, index, name, date1904)
        if one is None:
            # The text read: it knows no profile counts ahead (the profile counts them
            # itself), so only the header and the cells can be compared.
            two = spreadsheet._two_reads("xlsx", path, reader, index, name, date1904)
            reference = _table(two)
        else:
            reference = _table(one)
        if scanned is None:
            out.append((False, None, reference))
            continue
        rewrite = spreadsheet._lost_rewritten(scanned.lost) if scanned.lost else None
        native_table = _table(
            spreadsheet._typed_table(
                name, scanned.header, scanned.typed, date1904, exact_mixed=rewrite
            )
        )
        if one is None:
            native_table = (native_table[0], {}, native_table[2])
        out.append((True, native_table, reference))
    return out


def _write(
    path: Path,
    fill: Callable[[xlsxwriter.Workbook], None],
    *,
    inline: bool = False,
    date1904: bool = False,
) -> Path:
    options = {"constant_memory": inline, "date_1904": date1904}
    book = xlsxwriter.Workbook(str(path), options)
    book.set_properties({"created": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)})
    fill(book)
    book.close()
    return path


def _typed_cells(book: xlsxwriter.Workbook) -> None:
    rng = random.Random(16)
    formats = {
        "iso": book.add_format({"num_format": "yyyy-mm-dd hh:mm:ss.000"}),
        "day": book.add_format({"num_format": "dd/mm/yyyy"}),
        "builtin": book.add_format({"num_format": 14}),
        "time": book.add_format({"num_format": "h:mm AM/PM"}),
        "elapsed": book.add_format({"num_format": "[h]:mm:ss"}),
        "money": book.add_format({"num_format": '"$"#,##0.00_);[Red]("$"#,##0.00)'}),
        "percent": book.add_format({"num_format": "0.00%"}),
    }
    sheet = book.add_worksheet("typed")
    header = ["int", "float", "tiny", "huge", "when", "day", "builtin", "time", "elapsed"]
    header += ["money", "percent", "flag", "text", "formula", "text formula"]
    sheet.write_row(0, 0, header)
    for r in range(1, 400):
        sheet.write_number(r, 0, rng.randint(-(10**15), 10**15))
        sheet.write_number(r, 1, rng.uniform(-1e6, 1e6))
        sheet.write_number(r, 2, rng.uniform(-1, 1) * 10.0 ** rng.randint(-300, -5))
        sheet.write_number(r, 3, rng.uniform(-1, 1) * 10.0 ** rng.randint(15, 300))
        serial = rng.uniform(0, 80_000)
        sheet.write_number(r, 4, serial, formats["iso"])
        sheet.write_number(r, 5, math.floor(serial), formats["day"])
        sheet.write_number(r, 6, rng.uniform(0, 100), formats["builtin"])
        sheet.write_number(r, 7, rng.random(), formats["time"])
        sheet.write_number(r, 8, rng.uniform(0, 40), formats["elapsed"])
        sheet.write_number(r, 9, rng.uniform(-1e4, 1e4), formats["money"])
        sheet.write_number(r, 10, rng.random(), formats["percent"])
        sheet.write_boolean(r, 11, rng.random() < 0.5)
        sheet.write_string(r, 12, rng.choice(["a & b", "<tag>", '"q"', "ünï €", " pad ", "x\ny"]))
        sheet.write_formula(r, 13, f"=A{r + 1}*2", None, rng.randint(0, 99) * 2)
        sheet.write_formula(r, 14, f'=B{r + 1}&"!"', None, f"v{r}!")


def _sparse(book: xlsxwriter.Workbook) -> None:
    sheet = book.add_worksheet("sparse")
    sheet.write_row(2, 2, ["a", "b", "empty", "d"])
    for r in range(3, 60, 3):
        sheet.write_number(r, 2, r / 7)
        sheet.write_string(r + 1, 3, f"s{r}")
        sheet.write_string(r, 5, "z")
    sheet.write_blank(70, 2, None, book.add_format({"bold": True}))


def _rich(book: xlsxwriter.Workbook) -> None:
    bold = book.add_format({"bold": True})
    sheet = book.add_worksheet("rich")
    sheet.write_row(0, 0, ["rich", "plain"])
    for r in range(1, 30):
        sheet.write_rich_string(r, 0, "plain ", bold, f"bold {r}", " tail")
        sheet.write_string(r, 1, f"row {r}")


def _mixed(book: xlsxwriter.Workbook) -> None:
    """Columns of numbers and text: numbers of every magnitude (their rendering rounds to
    nine decimals), text that looks like numbers, blanks."""
    rng = random.Random(11)
    sheet = book.add_worksheet("mixed")
    sheet.write_row(0, 0, ["value", "note", "count"])
    words = ["n/a", "0.3", "1e5", "-", " 7 ", "total", "0.30000000000000004"]
    for r in range(1, 1500):
        if rng.random() < 0.25:
            sheet.write_string(r, 0, rng.choice(words))
        elif rng.random() < 0.9:
            sheet.write_number(r, 0, rng.uniform(-1, 1) * 10.0 ** rng.randint(-30, 25))
        sheet.write_string(r, 1, f"row {r}") if r % 3 else sheet.write_number(r, 1, r / 7)
        sheet.write_number(r, 2, r) if r % 50 else sheet.write_string(r, 2, "subtotal")


@pytest.mark.parametrize("inline", [False, True], ids=["shared-strings", "inline-strings"])
@pytest.mark.parametrize(
    "fill", [_typed_cells, _sparse, _rich, _mixed], ids=lambda f: f.__name__[1:]
)
def test_every_sheet_the_scanner_reads_is_the_table_fastexcel_gives(
    tmp_path: Path, fill: Callable[[xlsxwriter.Workbook], None], inline: bool
) -> None:
    path = _write(tmp_path / "book.xlsx", fill, inline=inline)
    for read, native, reference in _both(path):
        assert read, "the scanner read the sheet (it is made of what it handles)"
        assert native == reference


@pytest.mark.parametrize("date1904", [False, True], ids=["1900", "1904"])
def test_dates_and_durations_of_either_epoch_match(tmp_path: Path, date1904: bool) -> None:
    path = _write(tmp_path / "book.xlsx", _typed_cells, date1904=date1904)
    ((read, native, reference),) = _both(path, date1904=date1904)
    assert read
    assert native == reference


@pytest.mark.parametrize(
    ("name", "content", "scanned"),
    [
        # Its columns mix numbers and text on purpose.
        ("exact-numbers", exact_numbers_xlsx(), [True]),
        ("durations", durations_xlsx(), [True]),
        ("durations-1904", durations_xlsx(date1904=True), [True]),
        ("workbook", xlsx_bytes(), [True, True, True]),
    ],
)
def test_the_golden_workbooks_come_out_the_same_through_either_reader(
    tmp_path: Path, name: str, content: bytes, scanned: list[bool]
) -> None:
    path = tmp_path / f"{name}.xlsx"
    path.write_bytes(content)
    results = _both(path, date1904=name.endswith("1904"))
    assert [read for read, _, _ in results] == scanned
    for read, native, reference in results:
        if read:
            assert native == reference


def _declined(book: xlsxwriter.Workbook) -> None:
    """One sheet per construct the scanner leaves to fastexcel."""
    cases: dict[str, Callable[[Any], object]] = {
        "error": lambda s: s.write_formula(1, 0, "=1/0", None, "#DIV/0!"),
        "mixed with a boolean": lambda s: (s.write_boolean(1, 0, True), s.write_number(2, 0, 1)),
        "number header": lambda s: (s.write_number(0, 1, 2024), s.write_number(1, 1, 5)),
        "twin header": lambda s: (s.write_string(0, 1, "a"), s.write_number(1, 1, 5)),
        "blank header": lambda s: (s.write_number(1, 1, 2), s.write_number(2, 0, 7)),
        "escape": lambda s: s.write_string(1, 0, "_x0041_"),
    }
    for name, make in cases.items():
        sheet = book.add_worksheet(name)
        sheet.write_string(0, 0, "a")
        make(sheet)


def test_what_the_scanner_declines_is_read_by_fastexcel_to_the_same_table(tmp_path: Path) -> None:
    path = _write(tmp_path / "book.xlsx", _declined)
    results = _both(path)
    assert [read for read, _, _ in results] == [False] * len(results)
    via_worker = [_table(t) for t in spreadsheet.sheet_tables("xlsx", path, date1904=False)]
    assert via_worker == [reference for _, _, reference in results]


def test_a_decline_names_the_construct() -> None:
    cell = b'<row r="1"><c r="A1" t="e"><v>#N/A</v></c></row>'
    sheet = b"<worksheet><sheetData>" + cell + b"</sheetData></worksheet>"
    with pytest.raises(telha_xlsx.Declined, match="error cell"):
        telha_xlsx.read_sheet(sheet, None, b"", False)
    prefixed = b"<x:worksheet><x:sheetData></x:sheetData></x:worksheet>"
    with pytest.raises(telha_xlsx.Declined, match="namespace prefix"):
        telha_xlsx.read_sheet(prefixed, None, b"", False)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("General", 0),
        ("0.00", 0),
        ('"$"#,##0_);[Red]("$"#,##0)', 0),
        ("dd/mm/yyyy", 1),
        ("h:mm AM/PM", 1),
        ("H:MM:SS;@", 1),
        ("[h]:mm:ss", 2),
        ("[mm]", 2),
        ("[Blue]\\+[h]:mm;[Red]\\-[h]:mm", 2),
        ("#,##0\\ [$\\u20bd-46D]", 0),
        ("\\Y000000", 0),
        ("#,##0*y", 255),
    ],
)
def test_number_format_classes_follow_calamine(code: str, expected: int) -> None:
    assert telha_xlsx.number_format_class(code) == expected


def test_a_sheet_split_across_threads_reads_as_in_one(tmp_path: Path) -> None:
    path = _write(tmp_path / "book.xlsx", _typed_cells, inline=True)
    data = zipfile.ZipFile(path).read("xl/worksheets/sheet1.xml")
    one = telha_xlsx.read_sheet(data, None, _styles(path), False, threads=1)
    four = telha_xlsx.read_sheet(data, None, _styles(path), False, threads=4)
    assert one[0] == four[0]
    assert [c is None for c in one[2]] == [c is None for c in four[2]]
    assert frame(one[1]).equals(frame(four[1]))
    assert frame(one[1]).height == 399


def _styles(path: Path) -> bytes:
    native = native_sheets(path, date1904=False)
    assert native is not None
    return native.styles


def test_the_frame_is_fastexcels_typed_read(tmp_path: Path) -> None:
    path = _write(tmp_path / "book.xlsx", _typed_cells)
    native = native_sheets(path, date1904=False)
    assert native is not None
    scanned = native.typed("typed")
    assert scanned is not None
    header, typed = scanned.header, scanned.typed
    sheet = fastexcel.read_excel(path).load_sheet(0, schema_sample_rows=None)
    reference = sheet.to_polars()
    assert header == [c.name for c in sheet.available_columns()]
    reference = reference.rename({old: f"t{i}" for i, old in enumerate(reference.columns)})
    assert typed.schema == reference.schema
    assert typed.equals(reference)


def _with_sheet(book: Path, sheet: bytes) -> Path:
    """The workbook with its first sheet's part replaced by `sheet` (every other part kept)."""
    out = book.with_name("bomb.xlsx")
    with zipfile.ZipFile(book) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as copy:
        for info in source.infolist():
            name = info.filename
            copy.writestr(name, sheet if name == "xl/worksheets/sheet1.xml" else source.read(info))
    return out


@pytest.mark.parametrize(
    ("options", "reason"),
    [({}, "max_xlsx_ratio"), ({"max_xlsx_bytes": 2 << 20, "max_xlsx_ratio": 100_000}, "past")],
)
def test_a_bomb_sheet_read_while_the_guard_runs_is_still_too_large(
    tmp_path: Path, options: dict[str, int], reason: str
) -> None:
    """The scanner starts on the first sheet before the guard's verdict: a bomb there stops
    it at the guard's own limits, and the job fails as the guard says (too_large)."""
    book = _write(tmp_path / "book.xlsx", _sparse)
    bomb = _with_sheet(book, b"<worksheet><sheetData>" + b" " * (8 << 20) + b"</sheetData>")
    settings = TabularOptions.from_mapping(options)
    with pytest.raises(TooLarge, match=reason):
        list(open_tables("xlsx", bomb, settings, tmp_path))
    native = native_sheets(bomb, date1904=False, limits=(2 << 20, 200))
    assert native is not None
    assert native.typed("sparse") is None, "the scanner stopped at the limits"


_EXCEL_SHEET = b"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"
 xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"
 xmlns:x14ac="http://schemas.microsoft.com/office/spreadsheetml/2009/9/ac">
<dimension ref="A1:E7"/><sheetViews><sheetView workbookViewId="0"/></sheetViews>
<sheetFormatPr defaultRowHeight="15" x14ac:dyDescent="0.25"/>
<sheetData>
<row r="1" spans="1:5" x14ac:dyDescent="0.25">
 <c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="s"><v>2</v></c>
 <c r="D1" t="s"><v>3</v></c><c r="E1" t="s"><v>4</v></c></row>
<row r="2" spans="1:5" ht="20" customHeight="1" x14ac:dyDescent="0.25">
 <c r="A2" s="1" t="s"><v>5</v></c><c r="B2" s="2"><v>45292.75</v></c>
 <c r="C2"><f>B2*2</f><v>90585.5</v></c><c r="D2" t="str"><f>"a"&amp;"b"</f><v>ab</v></c>
 <c r="E2" s="3"><v>1.5</v></c></row>
<row r="3" spans="1:5" x14ac:dyDescent="0.25">
 <c r="A3" t="s"><v>6</v></c><c r="B3" s="2"><v>45293</v></c>
 <c r="C3"><f t="shared" ref="C3:C5" si="0">B3*2</f><v>90586</v></c>
 <c r="D3" t="str"><f t="shared" ref="D3:D4" si="1">"x"</f><v>x</v></c><c r="E3" s="4"/></row>
<row r="4" spans="1:5" x14ac:dyDescent="0.25">
 <c r="A4" t="s"><v>7</v></c><c r="B4" s="2"><v>59.5</v></c>
 <c r="C4"><f t="shared" si="0"/><v>119</v></c><c r="D4" t="str"><f t="shared" si="1"/><v></v></c>
 <c r="E4" s="3"><v>0.1</v></c></row>
<row r="5" ht="30" customHeight="1"/>
<row r="7" spans="1:5"><c r="A7" t="s"><v>0</v></c><c r="C7"><v>-2.5E+20</v></c>
 <c r="E7" s="3"><v>1E-3</v></c></row>
</sheetData>
<pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" header="0.3" footer="0.3"/>
<extLst><ext uri="{x}"><x14ac:thing/></ext></extLst>
</worksheet>"""

_EXCEL_STRINGS = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="9" uniqueCount="8">
<si><t>name</t></si><si><t>when</t></si><si><t>twice</t></si><si><t>formula</t></si>
<si><t xml:space="preserve"> hours </t></si>
<si><r><rPr><b/><sz val="11"/></rPr><t>Bold</t></r>
<r><t xml:space="preserve"> and &amp; plain</t></r></si>
<si><t>漢字</t><rPh sb="0" eb="2"><t>カンジ</t></rPh><phoneticPr fontId="1"/></si>
<si><t>line&#10;break &lt;x&gt; &quot;q&quot; &apos;a&apos;</t></si>
</sst>""".encode()

_EXCEL_STYLES = b"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">
<numFmts count="2"><numFmt numFmtId="164" formatCode="yyyy\\-mm\\-dd\\ hh:mm"/>
<numFmt numFmtId="165" formatCode="[h]:mm"/></numFmts>
<fonts count="1"><font><sz val="11"/></font></fonts>
<cellXfs count="5"><xf numFmtId="0" fontId="0"/><xf numFmtId="0" fontId="0" applyFont="1"/>
<xf numFmtId="164" fontId="0" applyNumberFormat="1"/><xf numFmtId="165" applyNumberFormat="1"/>
<xf numFmtId="4" fontId="0"/></cellXfs>
</styleSheet>"""


def test_a_sheet_as_excel_writes_it_reads_as_fastexcel_reads_it(tmp_path: Path) -> None:
    """Excel's own shapes: shared strings with rich runs, phonetic runs, preserved spaces
    and character references; row attributes of its extensions; formulas (shared ones
    included) with cached values; styled empty cells; an empty row; exponents; custom
    date and elapsed-time formats; parts after sheetData."""

    def one_sheet(book: xlsxwriter.Workbook) -> None:
        sheet = book.add_worksheet("Sheet1")
        sheet.write_string(0, 0, "placeholder")

    book = _write(tmp_path / "book.xlsx", one_sheet)
    out = tmp_path / "excel.xlsx"
    parts = {
        "xl/worksheets/sheet1.xml": _EXCEL_SHEET,
        "xl/sharedStrings.xml": _EXCEL_STRINGS,
        "xl/styles.xml": _EXCEL_STYLES,
    }
    with zipfile.ZipFile(book) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as copy:
        names = source.namelist()
        for name in names:
            copy.writestr(name, parts.get(name, source.read(name)))
        if "xl/sharedStrings.xml" not in names:
            copy.writestr("xl/sharedStrings.xml", _EXCEL_STRINGS)
    ((read, native, reference),) = _both(out)
    assert read, "the scanner read Excel's shapes"
    assert native == reference
    assert native is not None
    assert native[0] == ["name", "when", "twice", "formula", " hours "]


@settings(max_examples=400, deadline=None)
@given(
    edits=st.lists(
        st.tuples(st.floats(0, 1), st.sampled_from([b"", b"<", b">", b'"', b"&", b"\xff", b"<c>"])),
        min_size=1,
        max_size=6,
    ),
    cut=st.integers(0, 64),
    threads=st.integers(1, 3),
)
def test_any_damage_reads_or_declines_and_never_fails_otherwise(
    edits: list[tuple[float, bytes]], cut: int, threads: int
) -> None:
    """Damaged sheets and shared strings (bytes replaced, cut out, markup inserted): a
    table or `Declined`, never another exception, never a crash."""
    sheet, strings = bytearray(_EXCEL_SHEET), bytearray(_EXCEL_STRINGS)
    for where, insert in edits:
        target = sheet if where < 0.7 else strings
        at = int(where * (len(target) - 1))
        target[at : at + cut % 8] = insert
    with contextlib.suppress(telha_xlsx.Declined):
        telha_xlsx.read_sheet(bytes(sheet), bytes(strings), b"\0\0\1\2\0", False, threads)


def test_numbers_in_a_text_column_render_as_calamine_renders_them(tmp_path: Path) -> None:
    """20,000 doubles of every magnitude (random bit patterns too) in a column with text:
    the scanner's text of each is fastexcel's, and its lost numbers are exactly those whose
    text reads back as another double."""
    rng = random.Random(20)
    values = [rng.uniform(-1, 1) * 10.0 ** rng.randint(-320, 300) for _ in range(10_000)]
    values += [rng.uniform(-1e6, 1e6) for _ in range(5_000)]
    while len(values) < 20_000:
        bits = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if math.isfinite(bits):
            values.append(bits)

    def fill(book: xlsxwriter.Workbook) -> None:
        sheet = book.add_worksheet("numbers")
        sheet.write_string(0, 0, "value")
        sheet.write_string(1, 0, "text")
        for r, value in enumerate(values, start=2):
            sheet.write_number(r, 0, value)

    path = _write(tmp_path / "numbers.xlsx", fill)
    native = native_sheets(path, date1904=False)
    assert native is not None
    scanned = native.typed("numbers")
    assert scanned is not None
    shown = fastexcel.read_excel(path).load_sheet(0, dtypes="string").to_polars()
    assert scanned.typed["t0"].to_list() == shown["value"].to_list()
    lost = scanned.lost[0].to_list()
    for text, number in zip(shown["value"].to_list()[1:], lost[1:], strict=True):
        assert (number is not None) == (float(text) != float(number or text))
