"""JSON text written by polars, byte for byte as workers_common's canonical_json writes it.

The ROW nodes are encoded as whole columns of text (rowjson.py) instead of one Python dict
each; these are the pieces. Strings are escaped with the very table json.dumps uses
(ensure_ascii=False: only the quote, the backslash and the C0 controls); integers and
booleans are their polars casts, which spell them as Python does; floats too, inside the
range where polars and Python's repr agree, and by Python outside it (rare values).
"""

from __future__ import annotations

import json

import polars as pl

from workers_common import BuilderError
from workers_common.wire import canonical_json_text, json_value

__all__ = ["float_json", "json_pieces", "json_string"]


def _escapes() -> dict[str, str]:
    # Everything json.dumps(ensure_ascii=False) escapes, spelled as it spells it.
    escaped = ['"', "\\", *map(chr, range(0x20))]
    return {char: json.dumps(char, ensure_ascii=False)[1:-1] for char in escaped}


_ESCAPES = _escapes()

# Inside [1e-4, 1e16) Python's repr writes a float positionally with its shortest
# round-tripping digits, and so does polars' cast to String; outside, both use exponents
# but spell them differently (1e-07 against 1e-7, or 0.00001 against 1e-05).
_POSITIONAL = (1e-4, 1e16)


def json_string(text: pl.Expr, plain: bool = False) -> pl.Expr:
    """String values as JSON string literals (null stays null); `plain` when they are
    known to hold nothing to escape."""
    return pl.concat_str(json_pieces(text, pl.String(), plain))


def json_pieces(value: pl.Expr, dtype: pl.DataType, plain: bool = False) -> list[pl.Expr]:
    """Values of a String, integer or Boolean column as JSON, in pieces to concatenate
    (null stays null): a string is its quotes and its escaped text, which saves a copy
    when the pieces go into a larger concatenation. Floats go through float_json."""
    if dtype == pl.String:
        escaped = (
            value if plain else value.str.replace_many(list(_ESCAPES), list(_ESCAPES.values()))
        )
        return [pl.lit('"'), escaped, pl.lit('"')]
    if dtype.is_integer() or dtype == pl.Boolean:
        return [value.cast(pl.String)]
    raise TypeError(f"json_pieces: no JSON spelling for {dtype}")


def float_json(values: pl.Series, where: str) -> pl.Series:
    """A Float64 series as JSON numbers (null stays null). A value that is not finite
    raises BuilderError, as the builder's per-value check does; `where` names it."""
    text = values.cast(pl.String)
    magnitude = values.abs()
    low, high = _POSITIONAL
    odd = (values != 0) & ((magnitude < low) | (magnitude >= high) | values.is_nan())
    positions = odd.fill_null(False).arg_true()
    if positions.len() == 0:
        return text
    spelled = [_python_float(value, where) for value in values.gather(positions).to_list()]
    return text.scatter(positions, pl.Series(spelled, dtype=pl.String))


def _python_float(value: float, where: str) -> str:
    try:
        return canonical_json_text(json_value(value, where))
    except ValueError as err:
        raise BuilderError(str(err)) from err
