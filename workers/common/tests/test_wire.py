"""wire.json_value: the fast copy path gives the same values and the same errors as the
checked walk, for valid and invalid data alike."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workers_common.wire import _checked_copy, canonical_json, canonical_json_text, json_value

_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and infinities included: both paths must refuse them alike
    | st.text()  # lone surrogates included
    | st.sampled_from([b"x", object(), 1j])
)
_keys = st.text(max_size=4) | st.integers(0, 3) | st.sampled_from(["\udc80", "é"])
_values = st.recursive(
    _leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(_keys, inner, max_size=4)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3).map(OrderedDict)
    ),
    max_leaves=20,
)


def _outcome(fn: Any, value: object) -> tuple[str, Any]:
    try:
        return ("ok", fn(value, "v"))
    except (TypeError, ValueError) as err:
        return (type(err).__name__, str(err))


@given(_values)
def test_fast_path_agrees_with_the_checked_walk(value: object) -> None:
    fast, checked = _outcome(json_value, value), _outcome(_checked_copy, value)
    assert fast == checked
    if fast[0] == "ok":
        # NaN never gets here (refused), so == compares the copies exactly.
        assert repr(fast[1]) == repr(checked[1])


def test_copy_is_private() -> None:
    inner = {"a": [1, 2]}
    copied = json_value({"x": inner}, "v")
    assert copied == {"x": {"a": [1, 2]}}
    inner["a"].append(3)
    assert copied == {"x": {"a": [1, 2]}}


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ({"a": [1.0, float("nan")]}, ValueError, "v.a[1]: nan is not a JSON number"),
        ({1: "x"}, TypeError, "v: key 1 is int, not str"),
        (["ok", "\udc80"], ValueError, "v[1]: string is not encodable as UTF-8"),
        ({"n": [1 << 64]}, ValueError, "v.n[0]: the integer 18446744073709551616 does not fit"),
        ({"n": -(1 << 63) - 1}, ValueError, "v.n: the integer -9223372036854775809 does not fit"),
    ],
)
def test_errors_name_the_path(value: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        json_value(value, "v")


def test_the_64_bit_extremes_are_kept() -> None:
    extremes = {"max": (1 << 64) - 1, "min": -(1 << 63), "zero": -0}
    assert json_value(extremes, "v") == extremes


def _dumps_reference(value: object) -> str:
    """The canonical encoding as json.dumps spells it: what canonical_json_text replaced."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def _encoded(fn: Any, value: object) -> tuple[str, Any]:
    try:
        return ("ok", fn(value))
    except (TypeError, ValueError) as err:
        return (type(err).__name__, str(err))


_TRICKY = [
    {"é": "ünïcødé ✓ 😀", "b": ["\u2028\u2029", "\x00\x1f\x7f", '"\\/'], "a": None},
    {"floats": [0.1, 1e300, -0.0, 5e-324, 1.0, 123456789.123456789, 2.5e-7]},
    {"ints": [2**63 - 1, -(2**63), 2**64 - 1, 10**40, True, False, 0]},
    {"nested": {"z": {"y": [{"x": [[], {}, [{}]]}]}, "": ""}},
    {"escapes": "tab\there\nnew\rcr\bback\fform"},
    ("tuple", 1),
    "a top-level string \U0001f600",
    {"nan": float("nan")},
    {"surrogate": "\udc80"},
    {1: "int key", "1": "str key"},
]


@pytest.mark.parametrize("value", _TRICKY)
def test_the_cached_encoder_writes_what_json_dumps_writes(value: object) -> None:
    """The submission bytes are hashed by the core: the encoder built once must give the
    bytes (and refusals) json.dumps gave, for unicode, floats, big ints, nesting, escapes."""
    assert _encoded(canonical_json_text, value) == _encoded(_dumps_reference, value)
    if isinstance(value, dict) and _encoded(_dumps_reference, value)[0] == "ok":
        try:
            expected = _dumps_reference(value).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no UTF-8 form, refused alike
            with pytest.raises(UnicodeEncodeError):
                canonical_json(value)
        else:
            assert canonical_json(value) == expected


@given(_values)
def test_the_cached_encoder_agrees_with_json_dumps(value: object) -> None:
    assert _encoded(canonical_json_text, value) == _encoded(_dumps_reference, value)
