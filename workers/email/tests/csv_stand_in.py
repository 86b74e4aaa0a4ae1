"""A stand-in csv worker for the email e2e tests, until the tabular worker lands on main:
one TABLE node with its header, one ROW node per data row. Run as a script; it serves
the formats in TELHA_FORMATS with the real WorkerConsumer."""

from __future__ import annotations

import csv
import io

from workers_common import IngestionResultBuilder, Job, WorkerConsumer


def handle(job: Job) -> bytes:
    text = job.read_text("utf-8")
    builder = IngestionResultBuilder(options=job.options)
    builder.set_canonical_text(text)
    rows = list(csv.reader(io.StringIO(text)))
    header, body = (rows[0], rows[1:]) if rows else ([], [])
    table = builder.add_node(["TABLE"], {"name": job.name, "columns": header, "rows": len(body)})
    for index, row in enumerate(body):
        node = builder.add_node(["ROW"], {"index": index, "cells": row})
        builder.add_relationship("HAS_ROW", from_ref=table, to_ref=node)
    return builder.to_json()


if __name__ == "__main__":
    raise SystemExit(WorkerConsumer({"csv": handle}).run())
