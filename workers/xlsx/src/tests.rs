//! The scanner's own cases; tests/test_native_xlsx.py holds it to fastexcel on real workbooks.

use crate::{Decline, format, kind, read_sheet, render_number, style};

fn sheet(rows: &str) -> Vec<u8> {
    format!("<worksheet><sheetData>{rows}</sheetData></worksheet>").into_bytes()
}

#[test]
fn a_sheet_of_each_kind_reads_as_typed_columns() {
    let xml = sheet(concat!(
        r#"<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="inlineStr"><is><t>when</t></is></c>"#,
        r#"<c r="C1" t="str"><v>ok &amp; &#233;</v></c></row>"#,
        r#"<row r="2"><c r="A2"><v>1.2345678901234567</v></c><c r="B2" s="1"><v>45000.5</v></c>"#,
        r#"<c r="C2" t="b"><v>1</v></c></row>"#,
        r#"<row r="4"><c r="A4"><f>A2*2</f><v>2</v></c><c r="C4" t="b"><v>0</v></c></row>"#,
    ));
    let shared = b"<sst><si><t>n</t></si></sst>";
    let read = read_sheet(&xml, Some(shared), &[style::OTHER, style::DATETIME], false, 1, 100)
        .expect("read");
    assert_eq!(read.header, ["n", "when", "ok & \u{e9}"]);
    assert_eq!(read.kinds, [kind::NUMBER, kind::DATETIME, kind::BOOL]);
    assert_eq!(read.rows, 3);
    assert_eq!(read.values[0], 1.234_567_890_123_456_7);
    assert!(read.values[1].is_nan());
    assert_eq!(read.values[2], 2.0);
    // 45000.5 days after 1899-12-30: 2023-03-15T12:00:00.
    assert_eq!(read.values[3], 1_678_881_600_000.0);
    assert_eq!(read.values[6], 1.0);
    assert!(read.values[7].is_nan(), "row 3 is empty");
    assert_eq!(read.values[8], 0.0);
}

#[test]
fn threads_split_at_rows_and_give_the_same_sheet() {
    let mut rows = String::from(r#"<row r="1"><c r="A1" t="inlineStr"><is><t>a</t></is></c></row>"#);
    for r in 2..500 {
        rows.push_str(&format!(
            r#"<row r="{r}"><c r="A{r}" t="inlineStr"><is><r><t>x</t></r><r><t>{r}</t></r></is></c></row>"#
        ));
    }
    let xml = sheet(&rows);
    let one = read_sheet(&xml, None, &[], false, 1, 10_000).expect("one thread");
    let three = read_sheet(&xml, None, &[], false, 3, 10_000).expect("three threads");
    assert_eq!(one, three);
    assert_eq!(one.strings.get(one.values[10] as usize), Some("x12"));
}

#[test]
fn what_it_does_not_handle_is_declined_by_name() {
    let cases = [
        (r#"<row r="1"><c r="A1" t="e"><v>#N/A</v></c></row>"#, "an error cell"),
        (r#"<row r="1"><c r="A1" t="str"><v>&nbsp;</v></c></row>"#, "an entity other than the XML five"),
        (r#"<row r="1"><c r="A1" t="str"><v>_x000D_</v></c></row>"#, "an _xHHHH_ escape in text"),
        (r#"<row r="1"><c t="str"><v>a</v></c></row>"#, "a cell without a reference"),
        (r#"<row r="1"><c r="A1" t="str"><v>a</v></c></row><row r="2"><c r="A2"><v>1</v></c><c r="A3" t="b"><v>1</v></c></row>"#, "a column mixing kinds of cells other than numbers and text"),
        (r#"<row r="1"><c r="A1"><v>1</v></c></row><row r="2"><c r="A2"><v>1</v></c></row>"#, "a header cell that is not a string"),
        (r#"<x:row/>"#, "an element other than row and c in sheetData"),
    ];
    for (rows, why) in cases {
        assert_eq!(read_sheet(&sheet(rows), None, &[], false, 1, 100), Err(Decline(why)), "{rows}");
    }
}

#[test]
fn number_formats_are_classed_as_calamine_classes_them() {
    assert_eq!(format::custom("yyyy-mm-dd"), style::DATETIME);
    assert_eq!(format::custom("[h]:mm:ss"), style::TIMEDELTA);
    assert_eq!(format::custom("0.00;[Red]-0.00"), style::OTHER);
    assert_eq!(format::custom("\"d\"0"), style::OTHER);
    assert_eq!(format::custom("0*d"), style::UNKNOWN);
    assert_eq!(format::builtin("14"), style::DATETIME);
    assert_eq!(format::builtin("46"), style::TIMEDELTA);
    assert_eq!(format::builtin("4"), style::OTHER);
}

#[test]
fn a_column_of_numbers_and_text_is_mixed_and_numbers_render_as_calamine_renders_them() {
    let xml = sheet(concat!(
        r#"<row r="1"><c r="A1" t="inlineStr"><is><t>a</t></is></c></row>"#,
        r#"<row r="2"><c r="A2"><v>0.3333333333333333</v></c></row>"#,
        r#"<row r="3"><c r="A3" t="inlineStr"><is><t>n/a</t></is></c></row>"#,
    ));
    let read = read_sheet(&xml, None, &[], false, 1, 100).expect("read");
    assert_eq!(read.kinds, [kind::MIXED]);
    assert_eq!(read.cells, [kind::NUMBER, kind::STRING]);
    for (value, shown) in [
        (1.0 / 3.0, "0.333333333"),
        (5.0, "5"),
        (-0.0, "-0"),
        (1e21, "1000000000000000000000"),
        (2.5e-300, "0"),
        (0.000_123_456_789, "0.000123457"),
    ] {
        assert_eq!(render_number(value), shown);
    }
}
