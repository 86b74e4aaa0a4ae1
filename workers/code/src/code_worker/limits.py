"""The worker's limits and how an option overrides one."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "DEFAULT_MAX_ARCHIVE_BYTES",
    "DEFAULT_MAX_DOCUMENT_BYTES",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_NOTEBOOK_BYTES",
    "DEFAULT_MAX_PARSE_MS",
    "DEFAULT_MAX_RATIO",
    "DEFAULT_MAX_TOTAL_BYTES",
    "int_option",
]

DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024
"""A source file larger than this is too_large (generated tables, amalgamations)."""
DEFAULT_MAX_DOCUMENT_BYTES = 25 * 1024 * 1024
"""A document of an archive (a PDF, a spreadsheet, ...) larger than this becomes a content-less
child that fails too_large (the email worker's attachment limit: base64 in a 64 MiB submission)."""
DEFAULT_MAX_NOTEBOOK_BYTES = 32 * 1024 * 1024
"""A Jupyter notebook file larger than this is too_large. Its outputs (plots, as base64) are
most of a notebook's bytes and are not read; its script is held to max_file_bytes."""
DEFAULT_MAX_PARSE_MS = 10_000
"""CPU time one file's parse may take (real code parses at several MB/s, so a 4 MiB file
in about a second here); past it the file is too_large."""
DEFAULT_MAX_ARCHIVE_BYTES = 1024 * 1024 * 1024
"""The archive file itself."""
DEFAULT_MAX_ENTRIES = 50_000
"""Members of any kind in one archive (directories, links and skipped files count)."""
DEFAULT_MAX_TOTAL_BYTES = 2 * 1024 * 1024 * 1024
"""Inflated bytes of all members together, as declared and as read."""
DEFAULT_MAX_RATIO = 200
"""Inflated / compressed bytes past which a large archive is a bomb (source code
compresses 4-10x)."""


def int_option(options: Mapping[str, object], key: str, default: int) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return default
    return value
