"""tabular_worker: Telha's csv, tsv, xlsx and parquet worker (polars), streaming partials.

- handler     the entry: formats csv, tsv, xlsx, parquet -> `handle(job)`, a generator
- options     job options and their bounds (chunk size, guards, date order)
- sniff       csv/tsv bytes -> UTF-8 for polars: binary refusal, encoding, line guard, delimiter
- xlsx_guard  xlsx zip-bomb guard (inflates and counts before calamine reads)
- source      formats -> TableSources (header + lazy frame of data rows), one per sheet
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
