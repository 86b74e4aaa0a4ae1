"""The tabular worker through the conformance kit: golden projections of the corpus, the
kit's determinism and span checks, bad inputs failing with their typed reasons."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tabular_worker import HANDLERS, handle
from workers_common import InvalidInput, TooLarge, WorkerFailure
from workers_common.conformance import check_determinism, check_submissions, run_handler
from workers_common.pytest_plugin import GoldenDir

from tabular_corpus import BAD, CORPUS, Fixture, day_first_csv, many_rows_csv


def _write(tmp_path: Path, fixture: Fixture) -> Path:
    path = tmp_path / fixture.filename
    path.write_bytes(fixture.data)
    return path


def _run(tmp_path: Path, fixture: Fixture, **options: Any) -> list[dict[str, Any]]:
    subs = run_handler(
        handle,
        _write(tmp_path, fixture),
        format=fixture.format,
        name=fixture.filename,
        options={**fixture.options, **options},
    )
    check_submissions(subs)
    return [json.loads(raw) for raw in subs]


def _nodes(subs: list[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    return [n for s in subs for n in s["nodes"] if label in n["labels"]]


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_golden(name: str, tmp_path: Path, golden: GoldenDir) -> None:
    fixture = CORPUS[name]
    subs = run_handler(
        handle,
        _write(tmp_path, fixture),
        format=fixture.format,
        name=fixture.filename,
        options=fixture.options,
    )
    golden.check(name, subs)


@pytest.mark.parametrize("name", sorted(n for n, f in CORPUS.items() if f.format in ("csv", "tsv")))
@pytest.mark.parametrize("block_bytes", [1, 7, 64, 1000])
def test_golden_whatever_the_block_size(
    name: str, block_bytes: int, tmp_path: Path, golden: GoldenDir
) -> None:
    """csv/tsv read in blocks cut at records: the block size changes nothing sent."""
    fixture = CORPUS[name]
    subs = run_handler(
        handle,
        _write(tmp_path, fixture),
        format=fixture.format,
        name=fixture.filename,
        options={**fixture.options, "block_bytes": block_bytes},
    )
    golden.check(name, subs)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_deterministic_across_processes(name: str, tmp_path: Path) -> None:
    fixture = CORPUS[name]
    check_determinism(
        "tabular_worker:handle",
        _write(tmp_path, fixture),
        format=fixture.format,
        name=fixture.filename,
        options=fixture.options,
    )


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_row_spans_cut_exactly_their_lines(name: str, tmp_path: Path) -> None:
    """Every ROW span is one whole line of the accumulated canonical text, and the rows'
    lines follow the header line in order."""
    subs = _run(tmp_path, CORPUS[name])
    text = "".join(s["canonicalText"] for s in subs).encode()
    spans = [span for s in subs for span in s["spans"]]
    rows = [span for span in spans if span["kind"] == "row"]
    for span in rows:
        assert text[span["start"] - 1 : span["start"]] == b"\n"
        assert text[span["end"] : span["end"] + 1] == b"\n"
        assert b"\n" not in text[span["start"] : span["end"]]
    assert [r["start"] for r in rows] == sorted(r["start"] for r in rows)


def test_serves_its_formats() -> None:
    assert sorted(HANDLERS) == ["csv", "ods", "parquet", "tsv", "xls", "xlsb", "xlsx"]


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_fails_typed(name: str, tmp_path: Path) -> None:
    fixture, kind, phrase = BAD[name]
    with pytest.raises(WorkerFailure) as caught:
        _run(tmp_path, fixture)
    assert caught.value.kind == kind
    assert caught.value.permanent
    assert phrase in str(caught.value)


def test_long_line_guard_passes_lines_under_the_cap(tmp_path: Path) -> None:
    fixture = Fixture("ok.csv", b"a,b\n" + b"x" * 4000 + b",1\n", {"max_line_bytes": 4096})
    [sub] = _run(tmp_path, fixture)
    assert sub["stats"]["rows"] == 1


def test_long_line_guard_catches_a_line_across_read_chunks(tmp_path: Path) -> None:
    """A line longer than the 1 MiB read buffer, with a cap above the buffer."""
    data = b"a,b\n" + b"y" * (3 << 20) + b",1\n"
    with pytest.raises(TooLarge, match="max_line_bytes"):
        _run(tmp_path, Fixture("big.csv", data, {"max_line_bytes": 2 << 20}))


def test_a_quoted_record_over_the_cap_is_too_large(tmp_path: Path) -> None:
    """Many short lines inside one quoted field: past max_line_bytes as a record."""
    data = b'a,b\n1,"' + b"short line\n" * 1000 + b'"\n'
    with pytest.raises(TooLarge, match="max_line_bytes"):
        _run(tmp_path, Fixture("quoted.csv", data, {"max_line_bytes": 4096, "block_bytes": 1024}))


def test_multi_partial_rows_all_point_at_the_table_id(tmp_path: Path) -> None:
    subs = _run(tmp_path, Fixture("m.csv", many_rows_csv(10), {"chunk_rows": 4}))
    assert [s["partial"] for s in subs] == [True, True, False]
    table_ref = next(i for i, n in enumerate(subs[0]["nodes"]) if n["labels"] == ["TABLE"])
    table_id = f"node-0-{table_ref}"  # the conformance stand-in's id for it
    first_rows = [r for r in subs[0]["relationships"] if r["type"] == "HAS_ROW"]
    assert all(r["fromRef"] == table_ref for r in first_rows)
    for sub in subs[1:]:
        has_row = [r for r in sub["relationships"] if r["type"] == "HAS_ROW"]
        assert has_row
        assert all(r["fromId"] == table_id for r in has_row)
    indexes = [
        r["properties"]["index"] for s in subs for r in s["relationships"] if r["type"] == "HAS_ROW"
    ]
    assert indexes == list(range(10))
    assert subs[-1]["stats"]["rows"] == 10
    assert "stats" not in subs[0]


def test_day_first_votes_flip_the_ambiguous_cells(tmp_path: Path) -> None:
    subs = _run(tmp_path, Fixture("d.csv", day_first_csv(), {"clarify": True}))
    rows = _nodes(subs, "ROW")
    dates = [r["properties"]["effective date"] for r in rows]
    # 03/04/2026 after three day-first votes: 3 April, not March 4.
    assert dates[3] == "2026-04-03"
    assert rows[3]["validTime"] == {"validFrom": 1775174400000000, "validTo": 1775260800000000}
    [sub] = subs
    ambiguities = sub["ambiguities"]
    assert len(ambiguities) == len(rows) - 3
    first = ambiguities[0]
    assert [c["label"] for c in first["candidates"]] == [
        "2026-04-03 (day-first)",
        "2026-03-04 (month-first)",
    ]
    assert first["appliedCandidateConfidence"] == round(4 / 5, 4)  # (3 votes + 1) / (3 + 2)
    assert first["candidates"][0]["validFrom"] == rows[3]["validTime"]["validFrom"]


def test_without_votes_month_first_applies_at_even_odds(tmp_path: Path) -> None:
    subs = _run(tmp_path, CORPUS["ambiguous-before-votes"])
    rows = _nodes(subs, "ROW")
    assert [r["properties"]["date"] for r in rows] == [
        "2026-03-04",
        "2026-12-25",
        "2026-01-31",
        "2026-04-03",
    ]
    first, last = subs[0]["ambiguities"]
    assert first["appliedCandidateConfidence"] == 0.5
    assert last["candidates"][0]["label"] == "2026-04-03 (day-first)"


def test_ambiguities_only_with_clarify(tmp_path: Path) -> None:
    subs = _run(tmp_path, Fixture("d.csv", day_first_csv()))
    assert "ambiguities" not in subs[0]
    # The applied reading is the same either way.
    assert _nodes(subs, "ROW")[3]["properties"]["effective date"] == "2026-04-03"


def test_date_order_option_forces_the_reading(tmp_path: Path) -> None:
    subs = _run(tmp_path, Fixture("d.csv", day_first_csv()), date_order="month-first")
    assert _nodes(subs, "ROW")[3]["properties"]["effective date"] == "2026-03-04"


def test_votes_carry_across_chunks_and_partials(tmp_path: Path) -> None:
    """The same file read in chunks of one row decides every cell as in one chunk."""
    whole = _nodes(_run(tmp_path, Fixture("d.csv", day_first_csv(12))), "ROW")
    split = _nodes(_run(tmp_path, Fixture("d.csv", day_first_csv(12)), chunk_rows=1), "ROW")
    assert [r["properties"] for r in whole] == [r["properties"] for r in split]


def test_dirty_counts_and_raw_text_kept(tmp_path: Path) -> None:
    [sub] = _run(tmp_path, CORPUS["dirty-types"])
    assert sub["stats"]["dirty_counts"] == {"date": 1, "integer": 1}
    bad = _nodes([sub], "ROW")[9]["properties"]
    assert bad["n"] == "ten"
    assert bad["day"] == "2026-02-30"
    columns = {c["properties"]["name"]: c["properties"] for c in _nodes([sub], "COLUMN")}
    assert (columns["n"]["type"], columns["n"]["dirty_count"]) == ("integer", 1)


def test_invalid_utf8_is_replaced_and_counted(tmp_path: Path) -> None:
    [sub] = _run(tmp_path, CORPUS["invalid-utf8"])
    assert sub["stats"]["replaced_sequences"] == 2
    assert "\ufffd\ufffdX" in sub["canonicalText"]
    assert _nodes([sub], "TABLE")[0]["properties"]["encoding"] == "utf-8"


def test_cp1252_and_semicolons_are_detected(tmp_path: Path) -> None:
    [sub] = _run(tmp_path, CORPUS["semicolon-cp1252"])
    table = _nodes([sub], "TABLE")[0]["properties"]
    assert table["delimiter"] == ";"
    assert table["columns"] == ["Nome", "Cidade", "Preço", "Observação"]
    assert "São Paulo" in sub["canonicalText"]


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        # A Japanese CSV in ISO-2022-JP is seven-bit: it was read as ASCII with escapes.
        ("氏名,住所\n山田太郎,東京都千代田区\n佐藤花子,大阪府大阪市\n", "iso2022_jp"),
        # windows-1252 used to win the near tie: Şükrü came out as Þükrü.
        (
            "Ad,Şehir\nŞükrü Öztürk,İstanbul\nAyşe Yılmaz,Eskişehir\n",  # noqa: RUF001
            "cp1254",
        ),
    ],
)
def test_legacy_encodings_are_read_as_written(tmp_path: Path, text: str, encoding: str) -> None:
    [sub] = _run(tmp_path, Fixture("people.csv", text.encode(encoding)))
    table = _nodes([sub], "TABLE")[0]["properties"]
    assert table["encoding"] == encoding
    assert table["columns"] == text.splitlines()[0].split(",")
    first = table["columns"][0]
    assert [r["properties"][first] for r in _nodes([sub], "ROW")] == [
        line.split(",")[0] for line in text.splitlines()[1:]
    ]


def test_decimal_commas_make_a_float_column_where_commas_do_not_separate(
    tmp_path: Path,
) -> None:
    """A spreadsheet in most of Europe exports `;`-separated text with decimal commas:
    those columns were strings ("1.234,56"). A cell that is not a number stays dirty."""
    text = (
        "Artikel;Betrag;Menge;Kunde;PLZ\n"
        "Stuhl;1.234,56;3;Müller;08123\n"
        "Tisch;-7,5;2;Schmidt;01067\n"
        "Lampe;12;1;Weiß;10115\n"
        "Regal;1 250,00;4;Koch;20095\n"
        + "".join(f"Teil {i};{i},{i:02d};{i};K{i};{10000 + i}\n" for i in range(6))
        + "Sonder;n. a.;1;Lange;30159\n"
    )
    [sub] = _run(tmp_path, Fixture("preise.csv", text.encode("cp1252")))
    columns = {c["properties"]["name"]: c["properties"] for c in _nodes([sub], "COLUMN")}
    betrag = columns["Betrag"]
    assert (betrag["type"], betrag["decimal_separator"], betrag["dirty_count"]) == ("float", ",", 1)
    assert columns["Menge"]["type"] == "integer"
    assert "decimal_separator" not in columns["Menge"]
    assert columns["PLZ"]["type"] == "string"  # leading zeros: codes, not numbers
    rows = [r["properties"] for r in _nodes([sub], "ROW")]
    assert [r["Betrag"] for r in rows[:4]] == [1234.56, -7.5, 12.0, 1250.0]
    assert rows[-1]["Betrag"] == "n. a."  # dirty: its raw text
    assert "1.234,56" in sub["canonicalText"]  # the canonical text keeps every cell verbatim


def test_a_comma_separated_table_never_reads_a_comma_as_a_decimal_point(tmp_path: Path) -> None:
    text = 'name,amount\nA,"1,5"\nB,"2,25"\nC,"3,0"\n'
    [sub] = _run(tmp_path, Fixture("amounts.csv", text.encode()))
    columns = {c["properties"]["name"]: c["properties"] for c in _nodes([sub], "COLUMN")}
    assert columns["amount"]["type"] == "string"
    assert [r["properties"]["amount"] for r in _nodes([sub], "ROW")] == ["1,5", "2,25", "3,0"]


def test_ragged_rows_keep_extra_fields(tmp_path: Path) -> None:
    [sub] = _run(tmp_path, CORPUS["ragged"])
    table = _nodes([sub], "TABLE")[0]["properties"]
    assert table["columns"] == ["a", "b", "a_2", "column_4"]
    assert (table["ragged_rows"], table["blank_rows"], table["row_count"]) == (1, 2, 4)
    rows = [r["properties"] for r in _nodes([sub], "ROW")]
    assert rows[1] == {"a": 5, "b": 6}
    assert rows[2]["_extra"] == ["11", "12"]
    assert sub["canonicalText"].splitlines()[3] == "7\t8\t9\t10\t11\t12"


def test_empty_and_header_only_succeed(tmp_path: Path) -> None:
    [empty] = _run(tmp_path, CORPUS["empty"])
    assert (empty["canonicalText"], empty["stats"]["rows"]) == ("", 0)
    assert _nodes([empty], "TABLE")[0]["properties"]["column_count"] == 0
    [header] = _run(tmp_path, CORPUS["header-only"])
    assert header["canonicalText"] == "a\tb\tc\n"
    assert len(_nodes([header], "COLUMN")) == 3
    assert not _nodes([header], "ROW")


def test_xlsx_every_sheet_and_cached_formula_values(tmp_path: Path) -> None:
    [sub] = _run(tmp_path, CORPUS["workbook"])
    tables = [t["properties"] for t in _nodes([sub], "TABLE")]
    assert [t["sheet"] for t in tables] == ["Orders", "People", "Empty"]
    orders = [r["properties"] for r in _nodes([sub], "ROW")][:11]
    assert [o.get("total") for o in orders[:3]] == [2.5, 7.5, 15]  # formulas' cached values
    assert orders[0]["effective date"] == "2026-04-01T00:00:00"  # Excel dates have a time
    assert orders[10]["qty"] == "n/a"  # dirty, kept as text
    assert sub["stats"]["dirty_counts"] == {"integer": 1}


def test_parquet_native_types(tmp_path: Path) -> None:
    [sub] = _run(tmp_path, CORPUS["typed-parquet"])
    columns = {c["properties"]["name"]: c["properties"] for c in _nodes([sub], "COLUMN")}
    assert {n: c["type"] for n, c in columns.items()} == {
        "id": "integer",
        "score": "float",
        "valid from": "date",
        "seen": "datetime",
        "tags": "string",
        "label": "string",
    }
    rows = [r["properties"] for r in _nodes([sub], "ROW")]
    assert rows[0]["seen"] == "2026-01-01T12:00:00Z"
    assert "score" not in rows[1]  # NaN: not a JSON number, counted dirty
    assert sub["stats"]["dirty_counts"] == {"float": 1}


def test_bad_options_name_the_option(tmp_path: Path) -> None:
    fixture = Fixture("o.csv", b"a\n1\n")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"chunk_rows": "many"}, "chunk_rows"),
        ({"date_order": "sideways"}, "date_order"),
        ({"delimiter": "ab"}, "delimiter"),
        ({"max_line_bytes": True}, "max_line_bytes"),
    ]
    for options, phrase in cases:
        with pytest.raises(InvalidInput, match=phrase):
            _run(tmp_path, fixture, **options)
