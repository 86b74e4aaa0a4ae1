//! The module `telha_xlsx`: `read_sheet`, `read_package_sheet`, `number_format_class`,
//! `builtin_format_class`, and the `Column`s they return (Arrow arrays polars imports
//! through `__arrow_c_array__`).

use std::sync::Arc;

use arrow_array::builder::StringViewBuilder;
use arrow_array::types::{DurationMillisecondType, Float64Type, TimestampMillisecondType};
use arrow_array::{ArrayRef, BooleanArray, NullArray, PrimitiveArray};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::{Decline, Sheet, kind, render_number};

create_exception!(
    telha_xlsx,
    Declined,
    PyException,
    "The scanner leaves this sheet to fastexcel; the message says which construct."
);

/// One column of a sheet's data rows as an Arrow array: Float64, Boolean, Timestamp(ms),
/// Duration(ms), Utf8View or Null, by the column's kind.
#[pyclass(frozen, module = "telha_xlsx")]
struct Column {
    array: ArrayRef,
}

#[pymethods]
impl Column {
    /// The Arrow PyCapsule interface: (schema, array) capsules of this column.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema; // the column has one type; a consumer casts if it must
        let (array, schema) = arrow_array::ffi::to_ffi(&self.array.to_data())
            .map_err(|err| PyValueError::new_err(err.to_string()))?;
        let schema = PyCapsule::new_with_value(py, schema, c"arrow_schema")?;
        let array = PyCapsule::new_with_value(py, array, c"arrow_array")?;
        Ok((schema, array))
    }

    fn __len__(&self) -> usize {
        self.array.len()
    }
}

/// A MIXED column as text, each number as calamine renders it ([`render_number`]), and the
/// numbers whose rendering reads back as another double (`1/3` shown as `0.333333333`), the
/// rest null: what the worker rewrites exactly, as it does after fastexcel's text read; None
/// when every rendering reads back. Each number is rendered once for both.
fn mixed(sheet: &Sheet, at: usize) -> (ArrayRef, Option<ArrayRef>) {
    let rows = sheet.rows;
    let cells = &sheet.values[at * rows..(at + 1) * rows];
    let kinds = &sheet.cells[at * rows..(at + 1) * rows];
    let mut text = StringViewBuilder::with_capacity(rows);
    let mut lost = Vec::with_capacity(rows);
    for (value, cell) in cells.iter().zip(kinds) {
        let mut rounded = None;
        match *cell {
            kind::NUMBER => {
                let shown = render_number(*value);
                if shown.parse::<f64>().ok() != Some(*value) {
                    rounded = Some(*value);
                }
                text.append_value(shown);
            }
            kind::STRING => match sheet.strings.get(*value as usize) {
                Some(string) => text.append_value(string),
                None => text.append_null(),
            },
            _ => text.append_null(),
        }
        lost.push(rounded);
    }
    let lost = lost.iter().any(Option::is_some).then(|| {
        Arc::new(PrimitiveArray::<Float64Type>::from_iter(lost)) as ArrayRef
    });
    (Arc::new(text.finish()), lost)
}

/// The data rows of column `at`, typed by its kind (a MIXED column is [`mixed`]'s).
fn column(sheet: &Sheet, at: usize) -> ArrayRef {
    let rows = sheet.rows;
    let cells = &sheet.values[at * rows..(at + 1) * rows];
    let present = |value: &f64| !value.is_nan();
    match sheet.kinds[at] {
        kind::NUMBER => Arc::new(PrimitiveArray::<Float64Type>::from_iter(
            cells.iter().map(|v| present(v).then_some(*v)),
        )),
        kind::BOOL => {
            Arc::new(BooleanArray::from_iter(cells.iter().map(|v| present(v).then_some(*v != 0.0))))
        }
        kind::DATETIME => Arc::new(PrimitiveArray::<TimestampMillisecondType>::from_iter(
            cells.iter().map(|v| present(v).then_some(*v as i64)),
        )),
        kind::DURATION => Arc::new(PrimitiveArray::<DurationMillisecondType>::from_iter(
            cells.iter().map(|v| present(v).then_some(*v as i64)),
        )),
        kind::STRING => {
            let mut builder = StringViewBuilder::with_capacity(rows);
            for value in cells {
                match present(value).then(|| sheet.strings.get(*value as usize)).flatten() {
                    Some(text) => builder.append_value(text),
                    None => builder.append_null(),
                }
            }
            Arc::new(builder.finish())
        }
        _ => Arc::new(NullArray::new(rows)),
    }
}

type Columns = (Vec<String>, Vec<Column>, Vec<Option<Column>>);
type Arrays = (Vec<String>, Vec<ArrayRef>, Vec<Option<ArrayRef>>);

/// The sheet's header, its columns and their lost numbers, built without the GIL.
fn columns(sheet: Sheet) -> Arrays {
    let (arrays, lost) = (0..sheet.kinds.len())
        .map(|at| match sheet.kinds[at] {
            kind::MIXED => mixed(&sheet, at),
            _ => (column(&sheet, at), None),
        })
        .unzip();
    (sheet.header, arrays, lost)
}

/// Runs a read; a panic (a defect of the scanner, never the file's doing) declines too, so
/// the worker reads the sheet through fastexcel instead of failing the job.
fn guarded(read: impl FnOnce() -> Result<Arrays, Decline>) -> Result<Arrays, Decline> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read))
        .unwrap_or(Err(Decline("the scanner panicked (a defect: please report the file)")))
}

fn into_python(read: Result<Arrays, Decline>) -> PyResult<Columns> {
    let (header, arrays, lost) = read.map_err(|decline| Declined::new_err(decline.0))?;
    let columns = arrays.into_iter().map(|array| Column { array }).collect();
    let lost = lost.into_iter().map(|array| array.map(|array| Column { array })).collect();
    Ok((header, columns, lost))
}

/// `(header, columns, lost)` of one worksheet part, or `Declined`; `lost[i]` is column i's
/// numbers whose text rendering reads back as another double (None when there are none).
#[pyfunction]
#[pyo3(signature = (sheet, shared, styles, date1904, threads = 2, max_cells = 50_000_000))]
fn read_sheet(
    py: Python<'_>,
    sheet: &[u8],
    shared: Option<&[u8]>,
    styles: &[u8],
    date1904: bool,
    threads: usize,
    max_cells: usize,
) -> PyResult<Columns> {
    into_python(py.detach(|| {
        guarded(|| crate::read_sheet(sheet, shared, styles, date1904, threads, max_cells).map(columns))
    }))
}

/// `read_sheet` of the parts `sheet` and `shared` of the package at `path` (inflated in
/// Rust, each on its own thread, within `max_bytes` and `max_ratio` like the bomb guard).
#[pyfunction]
#[pyo3(signature = (path, sheet, shared, styles, date1904, threads = 2, max_cells = 50_000_000, max_bytes = 256 << 20, max_ratio = 200))]
#[allow(clippy::too_many_arguments)]
fn read_package_sheet(
    py: Python<'_>,
    path: std::path::PathBuf,
    sheet: &str,
    shared: Option<&str>,
    styles: &[u8],
    date1904: bool,
    threads: usize,
    max_cells: usize,
    max_bytes: u64,
    max_ratio: u64,
) -> PyResult<Columns> {
    into_python(py.detach(|| {
        guarded(|| {
            crate::read_package_sheet(
                &path, sheet, shared, styles, date1904, threads, max_cells, max_bytes, max_ratio,
            )
            .map(columns)
        })
    }))
}

/// The class of a custom number format code (0 other, 1 date-time, 2 duration, 255 unknown).
#[pyfunction]
fn number_format_class(code: &str) -> u8 {
    crate::format::custom(code)
}

/// The class of a built-in number format id, as written in the file (`"14"`).
#[pyfunction]
fn builtin_format_class(id: &str) -> u8 {
    crate::format::builtin(id)
}

#[pymodule]
fn telha_xlsx(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(read_sheet, module)?)?;
    module.add_function(wrap_pyfunction!(read_package_sheet, module)?)?;
    module.add_function(wrap_pyfunction!(number_format_class, module)?)?;
    module.add_function(wrap_pyfunction!(builtin_format_class, module)?)?;
    module.add_class::<Column>()?;
    module.add("Declined", module.py().get_type::<Declined>())?;
    Ok(())
}
