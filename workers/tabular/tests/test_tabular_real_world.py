"""What each real-world class of issue 16 must become, asserted on the projection (the
golden files hold the whole submissions; these say which parts matter and why). Every
test here failed before the fix of its class."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import fastexcel
import pytest
import workbook_corpus as wb

from tabular_worker import handle, spreadsheet
from tabular_worker.xlsx_guard import prepare_workbook
from workers_common import InvalidInput, TooLarge, Unsupported
from workers_common.conformance import check_submissions, run_handler

from tabular_corpus import BAD, BASIC_CSV, CORPUS, Fixture, xlsx_bytes


def project(tmp_path: Path, fixture: Fixture) -> list[dict[str, Any]]:
    path = tmp_path / fixture.filename
    path.write_bytes(fixture.data)
    subs = run_handler(
        handle, path, format=fixture.format, name=fixture.filename, options=fixture.options
    )
    check_submissions(subs)
    return [json.loads(raw) for raw in subs]


def labelled(subs: list[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    return [n["properties"] for s in subs for n in s["nodes"] if label in n["labels"]]


def column_types(subs: list[dict[str, Any]]) -> dict[str, str]:
    return {c["name"]: c["type"] for c in labelled(subs, "COLUMN")}


def text(subs: list[dict[str, Any]]) -> str:
    return "".join(s["canonicalText"] for s in subs)


# -- 6. leading zeros -------------------------------------------------------------------------


def test_a_column_with_leading_zeros_is_not_numeric(tmp_path: Path) -> None:
    subs = project(tmp_path, CORPUS["leading-zeros"])
    assert column_types(subs) == {"zip": "string", "amount": "float"}
    rows = labelled(subs, "ROW")
    assert rows[0]["zip"] == "08123"  # was the float 8123.0
    assert rows[-1]["zip"] == "00501"
    assert rows[1]["zip"] == "90001"  # the plain numbers of the column are text too


# -- 7. exact numbers -------------------------------------------------------------------------


def test_xlsx_numbers_keep_the_stored_double(tmp_path: Path) -> None:
    fixture = CORPUS["exact-numbers"]
    subs = project(tmp_path, fixture)
    path = tmp_path / fixture.filename
    stored = fastexcel.read_excel(path).load_sheet(0).to_polars()["value"].to_list()
    rows = labelled(subs, "ROW")
    assert [row["value"] for row in rows] == stored  # ROW properties: the doubles
    lines = text(subs).splitlines()[1:]
    shown = [line.split("\t")[0] for line in lines]
    assert [float(cell) for cell in shown] == stored  # the text reads back exactly
    assert shown[:3] == ["0.3010299956639812", "1e-20", "2.220446049250313e-16"]
    assert shown[4] == "5"  # an integral double is shown as an integer
    # A text column holding a number: the number exact, the text "0.3" as written.
    assert [row.get("mixed") for row in rows[:3]] == ["0.3010299956639812", "0.3", "n/a"]


# -- 8. durations and the 1904 date system ----------------------------------------------------


@pytest.mark.parametrize("name", ["durations", "durations-1904"])
def test_durations_are_iso_8601_in_both_date_systems(tmp_path: Path, name: str) -> None:
    subs = project(tmp_path, CORPUS[name])
    types = column_types(subs)
    assert [types[c] for c in ("elapsed", "start time", "day count")] == ["duration"] * 3
    build, test = labelled(subs, "ROW")
    assert build["elapsed"] == "P10DT15H10M10S"  # [h]:mm:ss, was 1900-01-10 15:10:10
    assert build["start time"] == "PT12H"  # 0.5 through hh:mm:ss
    assert build["day count"] == "P2DT6H"  # 2.25 days through a date-time format
    assert (test["elapsed"], test["day count"]) == ("PT1H30M", "PT0S")
    # A real date is the date the file means, 1904 system or not.
    assert (build["due"], test["due"]) == ("2026-03-04T00:00:00", "2026-03-05T00:00:00")


# -- 9. packaging variants --------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [wb.backslash_names(xlsx_bytes()), wb.moved_workbook(xlsx_bytes())],
    ids=["backslashes", "workbook-via-rels"],
)
def test_unusual_packages_read_like_the_usual_one(tmp_path: Path, data: bytes) -> None:
    usual = project(tmp_path, Fixture("usual.xlsx", xlsx_bytes()))
    subs = project(tmp_path, Fixture("variant.xlsx", data))
    assert text(subs) == text(usual)
    assert labelled(subs, "ROW") == labelled(usual, "ROW")
    assert [t["name"] for t in labelled(subs, "TABLE")] == ["Orders", "People", "Empty"]


def test_a_zip_without_any_workbook_part_is_invalid(tmp_path: Path) -> None:
    data = wb.rewrite(xlsx_bytes(), {}, {b"officeDocument": b"somethingElse"})
    data = wb.rewrite(data, {"xl/workbook.xml": "xl/other.xml"}, {})
    with pytest.raises(InvalidInput, match="without a workbook part"):
        project(tmp_path, Fixture("none.xlsx", data))


@pytest.mark.parametrize("fmt", ["xlsx", "xlsb", "ods"])
def test_a_zip_asking_for_a_newer_zip_version_is_unsupported_not_transient(
    tmp_path: Path, fmt: str
) -> None:
    """One flipped byte in a central directory entry's "version needed" (17.6) made
    zipfile raise NotImplementedError, which ended the job `transient` (found by the fault
    suite's hostile part on an xlsb)."""
    data = {"xlsx": xlsx_bytes, "xlsb": wb.xlsb_bytes, "ods": wb.ods_bytes}[fmt]()
    entry = data.index(b"PK\x01\x02")
    newer = data[: entry + 6] + (176).to_bytes(2, "little") + data[entry + 8 :]
    with pytest.raises(Unsupported, match="zip feature"):
        project(tmp_path, Fixture(f"newer.{fmt}", newer))


# -- 10. more formats, compression, encryption ------------------------------------------------


def test_legacy_xls_and_ods_read_through_calamine(tmp_path: Path) -> None:
    xls = labelled(project(tmp_path, CORPUS["legacy-xls"]), "ROW")
    assert xls[0] == {
        "name": "Ana",
        "qty": 3,
        "ratio": 0.3010299956639812,
        "effective date": "2026-03-04T00:00:00",
    }
    ods = labelled(project(tmp_path, CORPUS["ods"]), "ROW")
    assert ods == [{"item": "rent", "amount": 0.3010299956639812, "due": "2026-03-04"}]


def test_an_excel_template_reads_as_xlsx(tmp_path: Path) -> None:
    """An `.xltx` is a workbook whose main part is typed `...template.main+xml`: the CLI and
    attachment routing now send it to xlsx, and it must read as the workbook it is."""
    template = wb.rewrite(xlsx_bytes(), {}, {b"sheet.main+xml": b"template.main+xml"})
    types = zipfile.ZipFile(io.BytesIO(template)).read("[Content_Types].xml")
    assert b"template.main+xml" in types
    plain = labelled(project(tmp_path, Fixture("book.xlsx", xlsx_bytes())), "ROW")
    assert plain
    assert labelled(project(tmp_path, Fixture("book.xlsx", template)), "ROW") == plain


def test_an_opendocument_spreadsheet_template_reads_as_ods(tmp_path: Path) -> None:
    """An `.ots` (`mimetype` ...spreadsheet-template) holds a spreadsheet's content: the
    guard refused it as "an OpenDocument package that is not a spreadsheet"."""
    plain = b"application/vnd.oasis.opendocument.spreadsheet"
    template = wb.rewrite(CORPUS["ods"].data, {}, {plain: plain + b"-template"})
    with zipfile.ZipFile(io.BytesIO(template)) as ods:
        for name in ("mimetype", "META-INF/manifest.xml"):
            assert plain + b"-template" in ods.read(name)
    rows = labelled(project(tmp_path, Fixture("plan.ods", template)), "ROW")
    assert rows == [{"item": "rent", "amount": 0.3010299956639812, "due": "2026-03-04"}]


@pytest.mark.parametrize("name", ["xlsb", "xlsb-1904"])
def test_xlsb_reads_through_calamine(tmp_path: Path, name: str) -> None:
    subs = project(tmp_path, CORPUS[name])
    assert column_types(subs) == {
        "name": "string",
        "ratio": "float",
        "when": "datetime",
        "took": "duration",
        "ok": "boolean",
    }
    # The same dates in both date systems: the 1904 file stores serials 1462 days fewer.
    assert labelled(subs, "ROW") == [
        {
            "name": "Ana",
            "ratio": 0.3010299956639812,
            "when": "2026-03-01T00:00:00",
            "took": "P1DT12H",
            "ok": True,
        },
        {"name": "Bruno", "ratio": 5, "when": "2026-03-02T00:00:00", "took": "PT6H", "ok": False},
    ]
    assert "Ana\t0.3010299956639812\t2026-03-01 00:00:00\tP1DT12H\ttrue\n" in text(subs)


def test_an_xlsb_chart_sheet_is_an_empty_table_not_a_failed_workbook(tmp_path: Path) -> None:
    """calamine reads an xlsb chart sheet's part as a worksheet and fails on it ("failed
    to fill whole buffer"), which failed the whole workbook `invalid_input` (found on
    python-calamine's any_sheets.xlsb). Its data sheet is kept, the chart sheet is an
    empty table as calamine makes an xlsx one, and a plain xlsb is untouched."""
    subs = project(tmp_path, Fixture("charted.xlsb", wb.xlsb_bytes(chart=True)))
    plain = project(tmp_path, CORPUS["xlsb"])
    assert [t["name"] for t in labelled(subs, "TABLE")] == ["Data", "Trend"]
    assert labelled(subs, "TABLE")[1]["row_count"] == 0
    assert labelled(subs, "ROW") == labelled(plain, "ROW")
    assert len(labelled(subs, "ROW")) == 2


def test_xlsb_date_system_is_read_from_its_workbook_record(tmp_path: Path) -> None:
    for date1904 in (False, True):
        path = tmp_path / f"book-{date1904}.xlsb"
        path.write_bytes(wb.xlsb_bytes(date1904=date1904))
        book = prepare_workbook("xlsb", path, tmp_path, max_bytes=1 << 30, max_ratio=1000)
        assert (book.kind, book.date1904) == ("xlsb", date1904)


def test_an_xls_named_xlsx_is_read_by_its_bytes(tmp_path: Path) -> None:
    subs = project(tmp_path, Fixture("misnamed.xlsx", wb.legacy_xls()))
    assert labelled(subs, "ROW")[1]["name"] == "Bo"


@pytest.mark.parametrize("name", ["csv-gzip", "csv-zstd", "tsv-gzip"])
def test_compressed_text_projects_like_the_plain_file(tmp_path: Path, name: str) -> None:
    plain = {"csv-gzip": "basic", "csv-zstd": "basic", "tsv-gzip": "escapes-unicode"}[name]
    subs = project(tmp_path, CORPUS[name])
    expected = project(tmp_path, CORPUS[plain])
    assert text(subs) == text(expected)
    assert labelled(subs, "ROW") == labelled(expected, "ROW")
    (table,) = labelled(subs, "TABLE")
    assert table["compression"] == ("zstd" if name == "csv-zstd" else "gzip")


def test_compressed_text_is_read_in_blocks(tmp_path: Path) -> None:
    fixture = Fixture("basic.csv.gz", wb.gzip_bytes(BASIC_CSV), {"block_bytes": 5})
    assert text(project(tmp_path, fixture)) == text(project(tmp_path, CORPUS["basic"]))


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("password-protected", Unsupported),
        ("gzip-bomb", TooLarge),
        ("truncated-gzip", InvalidInput),
    ],
)
def test_bad_workbooks_and_streams_fail_typed(tmp_path: Path, name: str, error: type) -> None:
    fixture, _, phrase = BAD[name]
    with pytest.raises(error, match=phrase):
        project(tmp_path, fixture)


# -- 11. one read where it suffices -----------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    sorted(n for n, f in CORPUS.items() if f.format in ("xlsx", "xlsb", "xls", "ods")),
)
def test_one_read_and_two_reads_give_the_same_tables(tmp_path: Path, name: str) -> None:
    """The fast path (the typed read alone, text columns re-read only where a value is
    null) must give exactly the tables of the text read refined by the typed one."""
    fixture = CORPUS[name]
    path = tmp_path / fixture.filename
    path.write_bytes(fixture.data)
    workbook = prepare_workbook(fixture.format, path, tmp_path, max_bytes=1 << 30, max_ratio=1000)
    reader = fastexcel.read_excel(workbook.path)
    for index, sheet in enumerate(reader.sheet_names):
        fast = spreadsheet._one_read(reader, index, sheet, workbook.date1904)
        slow = spreadsheet._two_reads(
            fixture.format, workbook.path, reader, index, sheet, workbook.date1904
        )
        assert fast is not None, sheet
        assert fast.header == slow.header
        assert [part.collect().to_dicts() for part in fast.parts()] == [
            part.collect().to_dicts() for part in slow.parts()
        ]


def test_a_text_cell_in_a_number_column_survives_the_fast_path(tmp_path: Path) -> None:
    """calamine's typed read nulls `n/a` in a number column: the fast path reads that
    column's text again and keeps it (the golden workbook's qty column)."""
    rows = labelled(project(tmp_path, Fixture("book.xlsx", xlsx_bytes())), "ROW")
    assert rows[10] == {"order": "A-11", "qty": "n/a"}


def test_a_column_mixing_durations_and_text_keeps_both(tmp_path: Path) -> None:
    """calamine cannot type a column of durations and text (fastexcel refuses the
    combination): the sheet is read as text, that column re-read as text in the typed
    read, and the other columns still exact."""
    import io

    import xlsxwriter

    buffer = io.BytesIO()
    book = xlsxwriter.Workbook(buffer, {"in_memory": True})
    hours = book.add_format({"num_format": "[h]:mm:ss"})
    sheet = book.add_worksheet("Mixed")
    sheet.write_row(0, 0, ["elapsed", "ratio"])
    sheet.write_number(1, 0, 1.5, hours)
    sheet.write_string(2, 0, "unknown")
    sheet.write_number(1, 1, 0.3010299956639812)
    sheet.write_number(2, 1, 1e-20)
    book.close()
    rows = labelled(project(tmp_path, Fixture("mixed.xlsx", buffer.getvalue())), "ROW")
    assert [row["ratio"] for row in rows] == [0.3010299956639812, 1e-20]
    assert rows[1]["elapsed"] == "unknown"
    assert rows[0]["elapsed"] == "P1DT12H"  # not calamine's 1900-01-01 12:00:00
