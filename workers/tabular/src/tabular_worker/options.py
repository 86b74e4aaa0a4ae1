"""The tabular worker's job options (`telha ingest --option KEY=VALUE`), checked once per job.

Every limit has a default sized for the `[pools.tabular]` limits in supervisor.toml; tests
lower them to exercise the guards without multi-gigabyte inputs. A bad value is the job's
fault, not the worker's: it fails as `invalid_input` naming the option.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, get_args

from workers_common import InvalidInput
from workers_common.result import clarify_enabled

__all__ = ["DateOrder", "Quoting", "TabularOptions"]

DateOrder = Literal["auto", "day-first", "month-first"]
Quoting = Literal["auto", "csv", "none"]
"""How csv/tsv fields are quoted: detected, RFC 4180 (`"a, b"`, `""` inside), or not at all."""

# (minimum, maximum) per integer option. chunk_rows stays well under the core's per
# submission caps (100,000 nodes, 200,000 edges: a partial holds a ROW and a HAS_ROW per
# row, plus a table's COLUMN nodes); max_partial_bytes under its 32 MiB of text.
_BOUNDS: dict[str, tuple[int, int]] = {
    "chunk_rows": (1, 40_000),
    "max_partial_bytes": (1 << 10, 16 << 20),
    "max_line_bytes": (1 << 10, 1 << 40),
    "block_bytes": (1, 1 << 30),
    "max_xlsx_bytes": (1 << 10, 1 << 40),
    "max_xlsx_ratio": (2, 1 << 20),
    "max_compression_ratio": (2, 1 << 20),
    "max_decompressed_bytes": (1 << 10, 1 << 44),
    "skip_rows": (0, 100),
}


@dataclass(frozen=True, slots=True)
class TabularOptions:
    """What a job may tune; see workers/tabular/README.md for each option's reason."""

    chunk_rows: int = 10_000
    """Rows per partial submission (streaming)."""
    max_partial_bytes: int = 8 << 20
    """Canonical text per partial; a partial closes early when its rows reach this."""
    max_line_bytes: int = 64 << 20
    """csv/tsv: a physical line, or a record, longer than this is refused as too_large
    before parsing."""
    block_bytes: int = 8 << 20
    """csv/tsv: the file is read and parsed this many bytes at a time (cut at records)."""
    max_xlsx_bytes: int = 256 << 20
    """xlsx: the archive's total uncompressed size, measured by inflating it, not trusted."""
    max_xlsx_ratio: int = 200
    """xlsx: a member inflating more than this many times its compressed size is a bomb."""
    max_compression_ratio: int = 200
    """csv/tsv compressed (gzip, zstd, bzip2, xz): inflating more than this many times the
    compressed size is a bomb."""
    max_decompressed_bytes: int = 64 << 30
    """csv/tsv compressed: the inflated text is written to the work folder; at most this."""
    date_order: DateOrder = "auto"
    """How ambiguous dd/mm vs mm/dd cells are read: by votes (auto) or forced."""
    delimiter: str | None = None
    """csv/tsv: the field separator, instead of detecting it."""
    skip_rows: int | None = None
    """csv/tsv: records before the header, instead of looking for a preamble (sniff.py)."""
    quoting: Quoting = "auto"
    """csv/tsv: `csv` (RFC 4180 quoted fields) or `none` (every `"` literal), instead of
    detecting it."""
    clarify: bool = False
    """Record ambiguities (options.clarify, as the builder reads it)."""

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> TabularOptions:
        """Reads the job's options; unknown keys are ignored (other layers may add some)."""
        values: dict[str, Any] = {"clarify": clarify_enabled(options)}
        for field in fields(cls):
            if field.name not in options or field.name == "clarify":
                continue
            raw = options[field.name]
            if field.name in _BOUNDS:
                values[field.name] = _bounded_int(field.name, raw)
            elif field.name == "date_order":
                values[field.name] = _choice(field.name, raw, DateOrder)
            elif field.name == "quoting":
                values[field.name] = _choice(field.name, raw, Quoting)
            elif field.name == "delimiter":
                values[field.name] = _delimiter(raw)
        return cls(**values)


def _bounded_int(name: str, raw: object) -> int:
    low, high = _BOUNDS[name]
    if isinstance(raw, bool) or not isinstance(raw, int) or not low <= raw <= high:
        raise InvalidInput(f"option {name} must be an integer in [{low}, {high}], not {raw!r}")
    return raw


def _choice(name: str, raw: object, choices: Any) -> str:
    """`raw` when it is one of the Literal type `choices`' values."""
    for choice in get_args(choices):
        if raw == choice:
            chosen: str = choice
            return chosen
    allowed = ", ".join(get_args(choices))
    raise InvalidInput(f"option {name} must be one of {allowed}, not {raw!r}")


def _delimiter(raw: object) -> str:
    if isinstance(raw, str) and raw == "\\t":
        return "\t"  # what a shell user types for a tab
    if not (isinstance(raw, str) and len(raw) == 1 and raw not in '"\r\n'):
        raise InvalidInput(
            f"option delimiter must be one character (not a quote or newline), not {raw!r}"
        )
    return raw
