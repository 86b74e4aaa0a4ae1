"""The wire's JSON encoding: canonical bytes and JSON-value checking.

Submissions are hashed by the core (`submission_hash`), so the same submission must always
encode to the same bytes: keys sorted, no insignificant whitespace, UTF-8 without escaping,
no NaN or infinity (they are not JSON). Everything that goes on the wire as `result_json`
is encoded here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

__all__ = ["WIRE_VERSION", "JsonValue", "canonical_json", "json_value"]

WIRE_VERSION = 1
"""The `v` of every submission this harness produces."""

JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None


def canonical_json(value: Mapping[str, Any]) -> bytes:
    """Encodes `value` as canonical UTF-8 JSON: sorted keys, compact, non-ASCII kept as is."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def json_value(value: object, where: str) -> JsonValue:
    """Returns a private copy of `value` as plain JSON data, or raises TypeError/ValueError.

    Accepts what the JSON encoder would and nothing that would encode ambiguously: mapping
    keys must be str (json.dumps would silently turn 1 and "1" into the same key), floats
    must be finite, strings must have a UTF-8 form (no lone surrogates), tuples become
    lists. `where` names the value in error messages.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as err:
            raise ValueError(f"{where}: string is not encodable as UTF-8 ({err.reason})") from err
        return value
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: {value!r} is not a JSON number")
        return value
    if isinstance(value, Mapping):
        copied: dict[str, JsonValue] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: key {key!r} is {type(key).__name__}, not str")
            json_value(key, f"{where} key")
            copied[key] = json_value(item, f"{where}.{key}")
        return copied
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [json_value(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise TypeError(f"{where}: {type(value).__name__} is not a JSON value")
