//! The module `telha_xlsx`: `read_sheet`, `number_format_class`, `builtin_format_class`.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

create_exception!(
    telha_xlsx,
    Declined,
    PyException,
    "The scanner leaves this sheet to fastexcel; the message says which construct."
);

type SheetTuple<'py> = (Vec<String>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, usize, Vec<String>);

/// `(header, kinds, values, rows, strings)` of one worksheet part, or `Declined`.
/// `values` holds native-endian f64, column after column (`rows` each).
#[pyfunction]
#[pyo3(signature = (sheet, shared, styles, date1904, threads = 2, max_cells = 50_000_000))]
fn read_sheet<'py>(
    py: Python<'py>,
    sheet: &[u8],
    shared: Option<&[u8]>,
    styles: &[u8],
    date1904: bool,
    threads: usize,
    max_cells: usize,
) -> PyResult<SheetTuple<'py>> {
    let read = py.detach(|| crate::read_sheet(sheet, shared, styles, date1904, threads, max_cells));
    as_tuple(py, read)
}

fn as_tuple<'py>(py: Python<'py>, read: Result<crate::Sheet, crate::Decline>) -> PyResult<SheetTuple<'py>> {
    let sheet = read.map_err(|decline| Declined::new_err(decline.0))?;
    let kinds = PyBytes::new(py, &sheet.kinds);
    let values = PyBytes::new_with(py, sheet.values.len() * 8, |buf| {
        for (slot, value) in buf.chunks_exact_mut(8).zip(&sheet.values) {
            slot.copy_from_slice(&value.to_ne_bytes());
        }
        Ok(())
    })?;
    Ok((sheet.header, kinds, values, sheet.rows, sheet.strings))
}

/// `read_sheet` of the parts `sheet` and `shared` of the package at `path` (inflated in
/// Rust, each on its own thread, to at most `max_bytes`).
#[pyfunction]
#[pyo3(signature = (path, sheet, shared, styles, date1904, threads = 2, max_cells = 50_000_000, max_bytes = 1 << 32))]
#[allow(clippy::too_many_arguments)]
fn read_package_sheet<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    sheet: &str,
    shared: Option<&str>,
    styles: &[u8],
    date1904: bool,
    threads: usize,
    max_cells: usize,
    max_bytes: u64,
) -> PyResult<SheetTuple<'py>> {
    let read = py.detach(|| {
        crate::read_package_sheet(&path, sheet, shared, styles, date1904, threads, max_cells, max_bytes)
    });
    as_tuple(py, read)
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
    module.add("Declined", module.py().get_type::<Declined>())?;
    Ok(())
}
