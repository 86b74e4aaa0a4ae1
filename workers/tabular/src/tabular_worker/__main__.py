"""`python -m tabular_worker`: serve csv, tsv, workbook (xlsx, xlsb, xls, ods) and parquet jobs
until SIGTERM."""

from __future__ import annotations

from workers_common import WorkerConsumer

from .handler import HANDLERS


def main() -> int:
    return WorkerConsumer(HANDLERS).run()


if __name__ == "__main__":
    raise SystemExit(main())
