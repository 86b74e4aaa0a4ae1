"""tabular_worker: Telha's csv, tsv, workbook and parquet worker (polars), streaming partials.

- handler     the entry: formats csv, tsv, xlsx, xlsb, xls, ods, parquet -> `handle(job)`
- options     job options and their bounds (chunk size, guards, date order)
- compressed  gzip/zstd/bzip2/xz csv/tsv inflated into the work folder, bomb-guarded
- sniff       csv/tsv bytes -> UTF-8 for polars: binary refusal, encoding, line guard, delimiter
- xlsx_guard  workbook kind by its bytes, zip-bomb guard, encryption (password-protected)
- opc         the workbook part of an xlsx/xlsb package; a copy with the usual part names
- spreadsheet sheets -> TableSources through calamine, numbers and durations exact
- durations   ISO 8601 durations; day counts in the workbook's epoch
- tables      TableSource: header + frame (or blocks) of data rows
- source      formats -> TableSources, one per file or sheet
- celltypes   column types: what each type's cells look like, typed values
- dates       ISO and dd/mm readings, day-first/month-first voting, effective-date column
- profile     the streaming profile pass: types, null/dirty counts, row count per table
- rows        a chunk of rows -> canonical lines, typed values, valid times, ambiguities
- jsontext    polars expressions writing JSON text exactly as the harness's canonical JSON
- rowjson     those rows as JSON text: ROW nodes, HAS_ROW edges and row spans, encoded runs
- partial     one partial submission being filled; built into an IngestionResultBuilder
- projection  the streamed projection: TABLE, COLUMN, ROW nodes over partials, stats
- __main__    `python -m tabular_worker` runs WorkerConsumer with these handlers
"""

from .handler import FORMATS, HANDLERS, handle

__all__ = ["FORMATS", "HANDLERS", "handle"]
