"""The wire's JSON encoding: canonical bytes and JSON-value checking.

Submissions are hashed by the core (`submission_hash`), so the same submission must always
encode to the same bytes: keys sorted, no insignificant whitespace, UTF-8 without escaping,
no NaN or infinity (they are not JSON). Everything that goes on the wire as `result_json`
is encoded here.

A streaming worker that writes thousands of array elements per submission can hand them
over already encoded (`EncodedRun`: their canonical JSON bytes, written with vectorized
string operations instead of one Python dict each); the builder keeps them in an
`EncodedArray`, and `canonical_json` splices those bytes in verbatim, so the output is the
one the per-element path would have produced.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

__all__ = [
    "WIRE_VERSION",
    "EncodedArray",
    "EncodedRun",
    "JsonValue",
    "canonical_json",
    "canonical_json_text",
    "json_value",
]

WIRE_VERSION = 1
"""The `v` of every submission this harness produces."""

JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None


_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
"""The encoder `json.dumps` would build for these options, built once: `encode` keeps no
state between calls (each call makes its own), and building it per call (as json.dumps
does when given options) was half the cost of encoding a small submission."""


def canonical_json_text(value: Any) -> str:
    """One JSON value as canonical text: sorted keys, compact, non-ASCII kept as is."""
    return _ENCODER.encode(value)


def canonical_json(value: Mapping[str, Any]) -> bytes:
    """Encodes `value` as canonical UTF-8 JSON, the bytes of `result_json`.

    Values of `value` itself may be EncodedArrays (a submission's arrays sit at its top
    level): their encoded runs are spliced in verbatim. Anywhere deeper, an EncodedArray is
    not JSON and raises TypeError, as any other foreign object does.
    """
    if not any(type(item) is EncodedArray for item in value.values()):
        return canonical_json_text(value).encode("utf-8")
    # Pieces joined once at the end: a submission's runs are megabytes, copied only there.
    pieces = [b"{"]
    for key, item in sorted(value.items()):
        if type(key) is not str:
            raise TypeError(f"keys must be str, not {type(key).__name__}")
        if len(pieces) > 1:
            pieces.append(b",")
        pieces.append(canonical_json_text(key).encode("utf-8") + b":")
        if type(item) is EncodedArray:
            item.add_pieces(pieces)
        else:
            pieces.append(canonical_json_text(item).encode("utf-8"))
    pieces.append(b"}")
    return b"".join(pieces)


# What a canonical element never starts or ends with: a run is elements, not a fragment.
_NOT_AT_EDGES = frozenset(b" \t\n\r,")


@dataclass(frozen=True, slots=True)
class EncodedRun:
    """`count` consecutive elements of a JSON array, already encoded: each element's
    canonical JSON (as canonical_json_text writes it) in UTF-8, joined by commas, without
    brackets.

    Whoever builds a run vouches for its content (polars, say, whose strings are always
    valid UTF-8); the checks here are structural and constant-time, since a run can be
    megabytes: bytes, at least `2 * count - 1` of them, neither starting nor ending with
    a comma or whitespace.
    """

    data: bytes
    count: int

    def __post_init__(self) -> None:
        if type(self.data) is not bytes:
            raise TypeError(f"an encoded run's data must be bytes, not {type(self.data).__name__}")
        if type(self.count) is not int:
            raise TypeError(f"an encoded run's count must be int, not {type(self.count).__name__}")
        if self.count < 1:
            raise ValueError(f"an encoded run holds at least one element, not {self.count}")
        if len(self.data) < 2 * self.count - 1:
            raise ValueError(f"{len(self.data)} bytes cannot hold {self.count} elements")
        if self.data[0] in _NOT_AT_EDGES or self.data[-1] in _NOT_AT_EDGES:
            raise ValueError("an encoded run starts or ends with a comma or whitespace")


class EncodedArray:
    """A JSON array given as segments, in order: lists of plain values (encoded when the
    array is) and EncodedRuns (spliced in as they are)."""

    __slots__ = ("_count", "_segments")

    def __init__(self, segments: Iterable[list[JsonValue] | EncodedRun]) -> None:
        self._segments = tuple(segment for segment in segments if segment)
        self._count = sum(
            segment.count if isinstance(segment, EncodedRun) else len(segment)
            for segment in self._segments
        )

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        return f"EncodedArray({self._count} elements in {len(self._segments)} segments)"

    def add_pieces(self, pieces: list[bytes]) -> None:
        """Appends the array's canonical JSON to `pieces` (to be joined by the caller)."""
        pieces.append(b"[")
        for at, segment in enumerate(self._segments):
            if at:
                pieces.append(b",")
            if isinstance(segment, EncodedRun):
                pieces.append(segment.data)
            else:
                pieces.append(canonical_json_text(segment)[1:-1].encode("utf-8"))
        pieces.append(b"]")

    def json_bytes(self) -> bytes:
        """The array as canonical UTF-8 JSON."""
        pieces: list[bytes] = []
        self.add_pieces(pieces)
        return b"".join(pieces)

    def decoded(self) -> list[JsonValue]:
        """The array as plain values (tests and debugging: it parses every run)."""
        decoded: list[JsonValue] = json.loads(self.json_bytes())
        return decoded


class _NotPlain(Exception):
    """Raised inside the fast copy: the value needs the checked walk (to copy or to report)."""


# The integers the core stores exactly (int64 and uint64; src/graph/apply.rs inexact_integer).
_INT_MIN = -(1 << 63)
_INT_MAX = (1 << 64) - 1


def _plain_copy(value: object) -> JsonValue:
    # The fast path for the data workers actually send (exact str/int/float/bool/None,
    # dict and list): no error paths are formatted on the way, which is most of the cost
    # of the checked walk below. Anything else, including every invalid value,
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
        # An ASCII str, the commonest value, without the call: a node's properties are
        # copied one by one on every add_node.
        copied[key] = item if type(item) is str and item.isascii() else _plain_item(item)
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
    elif kind is int:
        if not _INT_MIN <= item <= _INT_MAX:
            raise _NotPlain
    elif not (kind is bool or item is None):
        raise _NotPlain
    plain: JsonValue = item
    return plain


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _checked_scalar(value: bool | int | float | None, where: str) -> JsonValue:
    if isinstance(value, int) and not isinstance(value, bool):
        if not _INT_MIN <= value <= _INT_MAX:
            raise ValueError(
                f"{where}: the integer {value} does not fit 64 bits (-2**63 ..= 2**64-1): the"
                " core keeps properties exactly and refuses it (send it as a string)"
            )
        return int(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: {value!r} is not a JSON number")
    return value


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
    if value is None or isinstance(value, bool | int | float):
        return _checked_scalar(value, where)
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
