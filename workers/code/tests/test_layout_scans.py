"""The layout's faster scans find what the plain ones do: Rust items one keyword at a
time against `_RUST_DEFINES` in one scan, words by `bytes.split` against `\\w+`, and a
file's crate by its folders against every crate tested."""

from __future__ import annotations

import random
import re

import pytest

from code_worker.layout import _RUST_DEFINES, Layout, _rust_defines, _words_of

_RUST_CASES = [
    b"fn main() {}\npub struct S;\nenum E { A }\ntrait T {}\nunion U {}\nmod m;\n",
    b"pub(crate) type Alias = u8;\npub type Other = u8;\ntype Err = ();\n",
    b"fn r#match() {}\nfn\n\tspaced() {}\nxfn no() {}\n_fn no() {}\n",
    # A match starting inside another: the one scan skips it.
    b"fn fn x",
    b"struct fn fn x",
    b"fn r#fn b",
    b"pub(fn x) type Y",
    b"pub(in fn) type T",
    b"pub type pub type Z",
    b"mod\nmod m",
    b"pubfn a",
    b"",
]


@pytest.mark.parametrize("data", _RUST_CASES)
def test_rust_items_one_keyword_at_a_time_are_the_one_scans(data: bytes) -> None:
    assert _rust_defines(data) == frozenset(_RUST_DEFINES.findall(data))


def test_rust_items_on_made_up_snippets() -> None:
    pieces = [b"fn", b"struct", b"enum", b"trait", b"union", b"mod", b"pub", b"type", b"r#"]
    pieces += [b"(", b")", b"(crate)", b" ", b"\n", b"\t", b"x", b"y1", b"_", b"#", b"::"]
    rng = random.Random(7)
    for _ in range(20_000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        assert _rust_defines(data) == frozenset(_RUST_DEFINES.findall(data)), data


def test_words_are_the_regex_words() -> None:
    data = "déf x_1(a, b2):\n\treturn a+b2 # über\x00z".encode()
    assert _words_of(data) == frozenset(re.findall(rb"\w+", data))


def test_a_file_belongs_to_the_deepest_crate_holding_it() -> None:
    files = {
        "src/lib.rs": b"mod a;",
        "src/a.rs": b"",
        "tools/gen/src/main.rs": b"",
        "tools/gen/src/lib.rs": b"",
        "tools/gen/src/x/mod.rs": b"",
        "vendor/loose.rs": b"",
    }
    layout = Layout(files, dict.fromkeys(files, "rust"))
    assert layout.crate_of == {
        "src/lib.rs": "src/lib.rs",
        "src/a.rs": "src/lib.rs",
        "tools/gen/src/main.rs": "tools/gen/src/lib.rs",
        "tools/gen/src/lib.rs": "tools/gen/src/lib.rs",
        "tools/gen/src/x/mod.rs": "tools/gen/src/lib.rs",
    }
