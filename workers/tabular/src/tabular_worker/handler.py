"""The tabular worker's entry: the formats it serves and how a job becomes its partials."""

from __future__ import annotations

import tempfile
from collections.abc import Generator, Mapping, Sequence
from pathlib import Path
from typing import Any

from workers_common import Handler, Job

from .options import TabularOptions
from .projection import project
from .source import FORMATS, open_tables

__all__ = ["FORMATS", "HANDLERS", "handle"]


def handle(job: Job) -> Generator[dict[str, Any], Sequence[str], None]:
    """Streams the projection of a csv, tsv, workbook or parquet job (see projection.py).

    Options are read first (a bad one is invalid_input); the content is read from the
    core's blob file when it is local, else streamed into a temporary file; re-encoded
    text (sniff.py) goes to a temporary folder removed when the job ends.
    """
    options = TabularOptions.from_mapping(job.options)
    with (
        job.content_path() as path,
        tempfile.TemporaryDirectory(prefix="telha-tabular-") as work,
    ):
        tables = open_tables(job.format, path, options, Path(work))
        yield from project(tables, source=job.name, fmt=job.format, options=options)


HANDLERS: Mapping[str, Handler] = dict.fromkeys(FORMATS, handle)
