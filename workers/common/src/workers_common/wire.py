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


class _NotPlain(Exception):
    """Raised inside the fast copy: the value needs the checked walk (to copy or to report)."""


def _plain_copy(value: object) -> JsonValue:
    # The fast path for the data workers actually send (exact str/int/float/bool/None,
    # dict and list): no error paths are formatted on the way, which is most of the cost
    # of the checked walk below, and scalars are checked inline rather than by a call
    # each (a tabular ROW has ten of them). Anything else, including every invalid value,
    # raises _NotPlain and json_value redoes the whole value with the checked walk, so
    # results and error messages are the same as without this path.
    if type(value) is dict:
        return _plain_dict(value)
    if type(value) is list or type(value) is tuple:
        return [_plain_item(item) for item in value]
    return _plain_item(value)


def _plain_dict(value: dict[Any, Any]) -> dict[str, JsonValue]:
    copied: dict[str, JsonValue] = {}
    for key, item in value.items():
        if type(key) is not str or not (key.isascii() or _encodable(key)):
            raise _NotPlain
        # _plain_item, inlined: this loop is the hot spot of a ROW-heavy submission.
        kind = type(item)
        if kind is str:
            if not (item.isascii() or _encodable(item)):
                raise _NotPlain
        elif kind is float:
            if not math.isfinite(item):
                raise _NotPlain
        elif kind is dict or kind is list or kind is tuple:
            item = _plain_copy(item)
        elif not (kind is int or kind is bool or item is None):
            raise _NotPlain
        copied[key] = item
    return copied


def _plain_item(item: Any) -> JsonValue:
    kind = type(item)
    if kind is str:
        if not (item.isascii() or _encodable(item)):
            raise _NotPlain
    elif kind is float:
        if not math.isfinite(item):
            raise _NotPlain
    elif kind is dict or kind is list or kind is tuple:
        return _plain_copy(item)
    elif not (kind is int or kind is bool or item is None):
        raise _NotPlain
    plain: JsonValue = item
    return plain


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def json_value(value: object, where: str) -> JsonValue:
    """Returns a private copy of `value` as plain JSON data, or raises TypeError/ValueError.

    Accepts what the JSON encoder would and nothing that would encode ambiguously: mapping
    keys must be str (json.dumps would silently turn 1 and "1" into the same key), floats
    must be finite, strings must have a UTF-8 form (no lone surrogates), tuples become
    lists. `where` names the value in error messages.
    """
    try:
        return _plain_copy(value)
    except _NotPlain:
        return _checked_copy(value, where)


def _checked_copy(value: object, where: str) -> JsonValue:
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
            _checked_copy(key, f"{where} key")
            copied[key] = _checked_copy(item, f"{where}.{key}")
        return copied
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [_checked_copy(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise TypeError(f"{where}: {type(value).__name__} is not a JSON value")
