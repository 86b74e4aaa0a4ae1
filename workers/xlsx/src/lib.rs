//! A fast reader of one xlsx worksheet for the tabular worker: the sheet's cells as typed
//! columns, the way calamine (through fastexcel) would type them; the Python module
//! (python.rs) hands them to polars as Arrow arrays, without a Python object per cell.
//!
//! calamine parses a sheet through a general XML tokenizer and builds a cell value per
//! cell; for a 200,000 x 10 sheet that is ~1.2 s, while the rows' own csv projects in less.
//! This scanner reads only the SpreadsheetML that writers actually emit (`<row>`, `<c>`
//! with `r`/`s`/`t`, `<v>`, `<f>`, `<is>`) with memchr, splits the sheet at row boundaries
//! across threads, and parses the shared strings beside it. Anything else it meets (an
//! unknown element, a namespace prefix, an error cell, a column mixing kinds other than
//! numbers and strings, an entity it
//! does not know, a `_xHHHH_` escape, ...) makes it decline with a reason
//! ([`Decline`]); the caller then reads the sheet through fastexcel as before. So it never
//! has to be right about a construct it does not handle, and a differential test holds it to
//! fastexcel's answer on the constructs it does.
//!
//! What it returns per sheet: the header row (every header cell a non-empty string), each
//! column's kind (one kind per column, MIXED for numbers and strings, or all empty), each
//! cell's kind, and the data cells column by column as f64 (NaN for an empty cell): a number
//! as stored, a boolean as 0/1, a date-time as milliseconds since 1970 computed as calamine
//! does, a duration in milliseconds, a string as its index into the returned string table
//! (the shared strings, then the sheet's inline strings).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::thread;

use memchr::memmem;

pub mod format;
mod strings;
mod text;

pub use strings::Strings;

pub use text::Decline;
use text::decode_text;

/// A column's kind (and a cell's, while scanning).
pub mod kind {
    pub const EMPTY: u8 = 0;
    pub const NUMBER: u8 = 1;
    pub const STRING: u8 = 2;
    pub const BOOL: u8 = 3;
    pub const DATETIME: u8 = 4;
    pub const DURATION: u8 = 5;
    /// A column of numbers and strings (fastexcel reads it as text: each number as
    /// calamine renders it, see [`crate::render_number`]).
    pub const MIXED: u8 = 7;
    /// A string of the sheet itself (inline or a formula's string result), indexed in its
    /// chunk's table until the chunks are joined.
    pub(crate) const INLINE: u8 = 6;
}

/// What calamine makes of a number with a given cell style (the caller's per-xf table).
pub mod style {
    pub const OTHER: u8 = 0;
    pub const DATETIME: u8 = 1;
    pub const TIMEDELTA: u8 = 2;
    /// The caller could not tell: a number cell of this style makes the scan decline.
    pub const UNKNOWN: u8 = 255;
}

const MS_PER_DAY: f64 = 86_400_000.0;
/// 1899-12-30T00:00:00, calamine's epoch, in milliseconds since 1970.
const EXCEL_EPOCH_MS: f64 = -2_209_161_600_000.0;
const DAYS_1900_TO_1904: f64 = 1462.0;
/// 0001-01-01 and 9999-12-31T23:59:59.999 in milliseconds since 1970 (chrono's and polars'
/// years are wider, but a date outside these is a construct left to fastexcel).
const MIN_MS: f64 = -62_135_596_800_000.0;
const MAX_MS: f64 = 253_402_300_799_999.0;

/// One sheet read.
#[derive(Debug, Default, PartialEq)]
pub struct Sheet {
    /// The first row's cells (the column names), one per column.
    pub header: Vec<String>,
    /// Per column, its kind ([`kind`]).
    pub kinds: Vec<u8>,
    /// The data cells (every row after the header), column after column, `rows` each.
    pub values: Vec<f64>,
    /// Each data cell's kind, laid out as `values` (what tells a MIXED column's numbers
    /// from its strings).
    pub cells: Vec<u8>,
    pub rows: usize,
    /// The string table the STRING cells index: the shared strings, then inline strings.
    pub strings: Strings,
}

#[derive(Clone, Copy)]
struct Cell {
    row: u32,
    col: u16,
    kind: u8,
    value: f64,
}

/// Reads a worksheet part. `shared` is the shared-strings part (when the workbook has one),
/// `styles` the class of each cell style ([`style`]) indexed by the `s` attribute, `threads`
/// how many threads may scan the sheet (at least 1), `max_cells` the most cells (rows x
/// columns of the used range) it will lay out.
pub fn read_sheet(
    sheet: &[u8],
    shared: Option<&[u8]>,
    styles: &[u8],
    date1904: bool,
    threads: usize,
    max_cells: usize,
) -> Result<Sheet, Decline> {
    thread::scope(|scope| {
        let strings = shared.map(|xml| scope.spawn(move || shared_strings(xml)));
        let scanned = scan_sheet(sheet, styles, date1904, threads);
        let strings = joined(strings)?;
        finish(scanned?, strings, max_cells)
    })
}

/// [`read_sheet`] of the parts `sheet` and `shared` of the zip package at `path`, each
/// inflated (within `max_bytes` and `max_ratio`) and read on its own thread.
#[allow(clippy::too_many_arguments)]
pub fn read_package_sheet(
    path: &Path,
    sheet: &str,
    shared: Option<&str>,
    styles: &[u8],
    date1904: bool,
    threads: usize,
    max_cells: usize,
    max_bytes: u64,
    max_ratio: u64,
) -> Result<Sheet, Decline> {
    thread::scope(|scope| {
        let strings = shared.map(|member| {
            scope.spawn(move || shared_strings(&inflate(path, member, max_bytes, max_ratio)?))
        });
        let scanned = inflate(path, sheet, max_bytes, max_ratio)
            .and_then(|xml| scan_sheet(&xml, styles, date1904, threads));
        let strings = joined(strings)?;
        finish(scanned?, strings, max_cells)
    })
}

/// Below this many inflated bytes a part's compression ratio is not judged (small parts
/// compress extremely well and are harmless), as in the tabular worker's bomb guard.
const RATIO_FLOOR: u64 = 1 << 20;
const READ_BLOCK: usize = 1 << 20;

/// One part of a zip package, whole: at most `max_bytes`, and past [`RATIO_FLOOR`] never
/// more than `max_ratio` times its compressed size (the scanner may run before the worker's
/// bomb guard has finished: it must stay bounded by the same limits).
fn inflate(path: &Path, member: &str, max_bytes: u64, max_ratio: u64) -> Result<Vec<u8>, Decline> {
    let file = File::open(path).map_err(|_| Decline("the package cannot be opened"))?;
    let mut archive =
        zip::ZipArchive::new(BufReader::new(file)).map_err(|_| Decline("not a zip package"))?;
    let mut entry = archive.by_name(member).map_err(|_| Decline("a part not in the package"))?;
    if entry.size() > max_bytes {
        return Err(Decline("a part larger than the scanner reads"));
    }
    let allowed = max_bytes.min(max_ratio.saturating_mul(entry.compressed_size().max(1)).max(RATIO_FLOOR));
    let mut out = Vec::with_capacity(entry.size().min(allowed) as usize);
    loop {
        let filled = out.len();
        out.resize(filled + READ_BLOCK, 0);
        let read = entry.read(&mut out[filled..]).map_err(|_| Decline("a part that does not inflate"))?;
        out.truncate(filled + read);
        if read == 0 {
            return Ok(out);
        }
        if out.len() as u64 > allowed {
            return Err(Decline("a part that inflates past the bomb guard's limits"));
        }
    }
}

fn joined(
    strings: Option<thread::ScopedJoinHandle<'_, Result<Strings, Decline>>>,
) -> Result<Strings, Decline> {
    match strings {
        Some(handle) => {
            handle.join().unwrap_or(Err(Decline("the shared strings thread panicked")))
        }
        None => Ok(Strings::default()),
    }
}

/// The sheet's rows scanned in `threads` pieces, each on its own thread (the first on this
/// one), in order.
fn scan_sheet(
    sheet: &[u8],
    styles: &[u8],
    date1904: bool,
    threads: usize,
) -> Result<Vec<Scanned>, Decline> {
    let body = sheet_data(sheet)?;
    let chunks = split_rows(body, threads.max(1));
    thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .iter()
            .skip(1)
            .map(|&chunk| scope.spawn(move || scan_rows(chunk, styles, date1904)))
            .collect();
        let mut scanned = vec![scan_rows(chunks[0], styles, date1904)?];
        for handle in handles {
            scanned.push(handle.join().unwrap_or(Err(Decline("a scanning thread panicked")))?);
        }
        Ok(scanned)
    })
}

/// The scanned pieces laid out in columns, the first row as the header; each piece's
/// inline strings go after the shared ones (and the pieces' before it).
fn finish(
    scanned: Vec<Scanned>,
    mut strings: Strings,
    max_cells: usize,
) -> Result<Sheet, Decline> {
    let shared = strings.len() as f64;
    let mut offsets = Vec::with_capacity(scanned.len());
    let mut bounds: Option<(u32, u32, u32, u32)> = None;
    for part in &scanned {
        offsets.push(strings.len() as f64);
        strings.extend(&part.inline);
        for cell in &part.cells {
            if cell.kind == kind::STRING && cell.value >= shared {
                return Err(Decline("a shared string index past the table"));
            }
            let (row, col) = (cell.row, u32::from(cell.col));
            bounds = Some(match bounds {
                None => (row, row, col, col),
                Some((top, bottom, left, right)) => {
                    (top.min(row), bottom.max(row), left.min(col), right.max(col))
                }
            });
        }
    }
    let Some((top, bottom, left, right)) = bounds else {
        return Ok(Sheet { strings, ..Sheet::default() });
    };
    let columns = (right - left) as usize + 1;
    let rows = (bottom - top) as usize;
    if rows == 0 {
        return Err(Decline("a header row and no data rows"));
    }
    if rows.saturating_mul(columns) > max_cells {
        return Err(Decline("more cells than the scanner lays out"));
    }
    let mut header: Vec<Option<usize>> = vec![None; columns];
    let mut kinds = vec![kind::EMPTY; columns];
    let mut values = vec![f64::NAN; rows * columns];
    let mut cells = vec![kind::EMPTY; rows * columns];
    for (part, offset) in scanned.iter().zip(offsets) {
        for cell in &part.cells {
            let (kind, value) = match cell.kind {
                kind::INLINE => (kind::STRING, cell.value + offset),
                other => (other, cell.value),
            };
            let col = (u32::from(cell.col) - left) as usize;
            if cell.row == top {
                if kind != kind::STRING {
                    return Err(Decline("a header cell that is not a string"));
                }
                header[col] = Some(value as usize);
                continue;
            }
            let seen = &mut kinds[col];
            *seen = match (*seen, kind) {
                (kind::EMPTY, kind) => kind,
                (seen, kind) if seen == kind => seen,
                (kind::NUMBER | kind::STRING | kind::MIXED, kind::NUMBER | kind::STRING) => {
                    kind::MIXED
                }
                _ => return Err(Decline("a column mixing kinds of cells other than numbers and text")),
            };
            let at = col * rows + (cell.row - top - 1) as usize;
            values[at] = value;
            cells[at] = kind;
        }
    }
    let header = header
        .into_iter()
        .map(|at| match at.and_then(|i| strings.get(i)) {
            Some(name) if !name.is_empty() => Ok(name.to_owned()),
            _ => Err(Decline("a blank header cell")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut names: Vec<&str> = header.iter().map(String::as_str).collect();
    names.sort_unstable();
    if names.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(Decline("two columns of one name"));
    }
    Ok(Sheet { header, kinds, values, cells, rows, strings })
}

/// A number as calamine renders it in a text column: nine decimals, trailing zeros and
/// point dropped (`0.333333333`, `5`, `-0`, `1000000000000000000000`); the tabular
/// worker's tests hold it to fastexcel on 20,000 doubles of every magnitude.
pub fn render_number(value: f64) -> String {
    let mut text = format!("{value:.9}");
    if text.contains('.') {
        let kept = text.trim_end_matches('0').trim_end_matches('.').len();
        text.truncate(kept);
    }
    text
}

/// The content of `<sheetData>`.
fn sheet_data(sheet: &[u8]) -> Result<&[u8], Decline> {
    let Some(open) = memmem::find(sheet, b"<sheetData") else {
        return Err(if memmem::find(sheet, b":sheetData").is_some() {
            Decline("a namespace prefix")
        } else {
            Decline("no sheetData element")
        });
    };
    let after = open + b"<sheetData".len();
    let (_, end) = text::open_tag(sheet, after)?;
    if end.self_closing {
        return Ok(&[]);
    }
    let Some(close) = memmem::find(&sheet[end.next..], b"</sheetData>") else {
        return Err(Decline("sheetData not closed"));
    };
    Ok(&sheet[end.next..end.next + close])
}

/// The sheet's rows cut into about `parts` pieces, each starting at a `<row`.
fn split_rows(body: &[u8], parts: usize) -> Vec<&[u8]> {
    let mut pieces = Vec::with_capacity(parts);
    let mut start = 0;
    for k in 1..parts {
        let target = body.len() * k / parts;
        if target <= start {
            continue;
        }
        match memmem::find(&body[target..], b"<row") {
            Some(at) => {
                pieces.push(&body[start..target + at]);
                start = target + at;
            }
            None => break,
        }
    }
    pieces.push(&body[start..]);
    pieces
}

#[derive(Default)]
struct Scanned {
    cells: Vec<Cell>,
    inline: Strings,
}

fn scan_rows(body: &[u8], styles: &[u8], date1904: bool) -> Result<Scanned, Decline> {
    let mut out =
        Scanned { cells: Vec::with_capacity(body.len() / 40), inline: Strings::default() };
    let mut at = 0;
    while let Some((name, after)) = text::next_tag(body, at)? {
        at = match name {
            b"row" | b"/row" => text::open_tag(body, after)?.1.next,
            b"c" => cell(body, after, styles, date1904, &mut out)?,
            _ => return Err(Decline("an element other than row and c in sheetData")),
        };
    }
    Ok(out)
}

/// One `<c>` from its attributes on; returns where the scan goes on.
fn cell(
    body: &[u8],
    after: usize,
    styles: &[u8],
    date1904: bool,
    out: &mut Scanned,
) -> Result<usize, Decline> {
    let (attrs, tag) = text::open_tag(body, after)?;
    if tag.self_closing {
        return Ok(tag.next);
    }
    let Some(place) = attrs.r else {
        return Err(Decline("a cell without a reference"));
    };
    let (row, col) = text::reference(place)?;
    let mut value: Option<&[u8]> = None;
    let mut inline: Option<usize> = None;
    let mut at = tag.next;
    loop {
        let Some((name, child)) = text::next_tag(body, at)? else {
            return Err(Decline("a cell not closed"));
        };
        let (_, end) = text::open_tag(body, child)?;
        at = end.next;
        match name {
            b"v" if !end.self_closing => {
                let (content, next) = text::content(body, at, b"</v>")?;
                value = Some(content);
                at = next;
            }
            b"f" if !end.self_closing => {
                let Some(close) = memmem::find(&body[at..], b"</f>") else {
                    return Err(Decline("a formula not closed"));
                };
                at += close + b"</f>".len();
            }
            b"v" | b"f" => {}
            b"is" if end.self_closing => {
                return Err(Decline("an empty inline string element"));
            }
            b"is" => {
                at = text::rich_text(body, at, b"/is", out.inline.open())?;
                inline = Some(out.inline.close());
            }
            b"/c" => break,
            _ => return Err(Decline("an element other than v, f and is in a cell")),
        }
    }
    if inline.is_some() && attrs.t != Some(b"inlineStr") {
        return Err(Decline("an inline string in a cell of another type"));
    }
    let typed = match attrs.t {
        None | Some(b"n") => match value {
            None | Some(b"") => None,
            Some(number) => Some(number_cell(number, attrs.s, styles, date1904)?),
        },
        Some(b"s") => match value {
            None | Some(b"") => None,
            Some(index) => Some((kind::STRING, text::index(index)? as f64)),
        },
        Some(b"b") => match value {
            None | Some(b"") => None,
            Some(flag) => Some((kind::BOOL, if flag == b"0" { 0.0 } else { 1.0 })),
        },
        Some(b"str") => match value {
            None => None,
            Some(string) => {
                decode_text(string, out.inline.open())?;
                Some((kind::INLINE, out.inline.close() as f64))
            }
        },
        Some(b"inlineStr") => inline.map(|at| (kind::INLINE, at as f64)),
        Some(b"e") => return Err(Decline("an error cell")),
        Some(b"d") => return Err(Decline("an ISO 8601 date cell")),
        Some(_) => return Err(Decline("an unknown cell type")),
    };
    if let Some((kind, value)) = typed {
        out.cells.push(Cell { row, col, kind, value });
    }
    Ok(at)
}

fn number_cell(
    number: &[u8],
    style_attr: Option<&[u8]>,
    styles: &[u8],
    date1904: bool,
) -> Result<(u8, f64), Decline> {
    let value: f64 = std::str::from_utf8(number)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or(Decline("a number cell that is not a number"))?;
    if !value.is_finite() {
        return Err(Decline("a number cell that is not finite"));
    }
    let class = match style_attr {
        None => style::OTHER,
        Some(id) => styles.get(text::index(id)?).copied().unwrap_or(style::OTHER),
    };
    match class {
        style::OTHER => Ok((kind::NUMBER, value)),
        style::DATETIME => {
            let mut days = if date1904 { value + DAYS_1900_TO_1904 } else { value };
            if days < 60.0 {
                days += 1.0;
            }
            let ms = (days * MS_PER_DAY).round() + EXCEL_EPOCH_MS;
            if !(MIN_MS..=MAX_MS).contains(&ms) {
                return Err(Decline("a date outside years 1 to 9999"));
            }
            Ok((kind::DATETIME, ms))
        }
        style::TIMEDELTA => {
            let ms = (value * MS_PER_DAY).round();
            if ms.abs() > MAX_MS {
                return Err(Decline("a duration too long"));
            }
            Ok((kind::DURATION, ms))
        }
        _ => Err(Decline("a number in a cell style of unknown kind")),
    }
}

/// The `<si>` entries of a shared-strings part, in order.
fn shared_strings(xml: &[u8]) -> Result<Strings, Decline> {
    let mut strings = Strings::default();
    let mut at = 0;
    while let Some(found) = memmem::find(&xml[at..], b"<si") {
        let open = at + found;
        let (name, after) = text::tag_name(xml, open + 1);
        if name != b"si" {
            at = after;
            continue;
        }
        let (_, end) = text::open_tag(xml, after)?;
        if end.self_closing {
            return Err(Decline("an empty shared string element"));
        }
        at = text::rich_text(xml, end.next, b"/si", strings.open())?;
        strings.close();
    }
    Ok(strings)
}

#[cfg(feature = "python")]
mod python;


#[cfg(test)]
mod tests;
