"""wire.json_value: the fast copy path gives the same values and the same errors as the
checked walk, for valid and invalid data alike."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workers_common.wire import _checked_copy, json_value

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
