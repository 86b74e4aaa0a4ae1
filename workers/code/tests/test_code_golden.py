"""Golden projections, one per language, through the conformance kit (a real handler run
with the kit's stand-in core); determinism across processes, TZ, locale and hash seed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from code_worker import handle
from code_worker.ids import file_id, symbol_id
from code_worker.languages import content_language
from workers_common.conformance import check_determinism, check_submissions, run_handler
from workers_common.pytest_plugin import GoldenDir

from code_corpus import LANGUAGE_FILES, Fixture


def _write(tmp_path: Path, fixture: Fixture) -> Path:
    path = tmp_path / fixture.filename.rsplit("/", 1)[-1]
    path.write_text(fixture.text)
    return path


def _project(tmp_path: Path, fixture: Fixture) -> tuple[list[bytes], dict[str, Any]]:
    subs = run_handler(handle, _write(tmp_path, fixture), format="code", options=fixture.options)
    return subs, json.loads(subs[0])


@pytest.mark.parametrize("language", sorted(LANGUAGE_FILES))
def test_golden(language: str, tmp_path: Path, golden: GoldenDir) -> None:
    subs, _ = _project(tmp_path, LANGUAGE_FILES[language])
    golden.check(language, subs)


def _by_id(sub: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["id"]: n for n in sub["nodes"]}


def _calls(sub: dict[str, Any]) -> set[tuple[str, str]]:
    ids = [n["id"] for n in sub["nodes"]]
    return {
        (ids[r["fromRef"]], r.get("toId") or ids[r["toRef"]])
        for r in sub["relationships"]
        if r["type"] == "CALLS"
    }


def test_python_calls_resolve_by_scope_and_by_import(tmp_path: Path) -> None:
    _, sub = _project(tmp_path, LANGUAGE_FILES["python"])
    sym = "code:sym:demo/pkg/shapes.py#"
    calls = _calls(sub)
    assert (sym + "Square.__init__", "code:sym:demo/pkg/util.py#clamp") in calls  # alias c
    assert (sym + "Square.describe", sym + "Square.area") in calls  # self.area()
    assert (sym + "Square.describe", "code:sym:demo/pkg/util.py#helper") in calls
    assert (sym + "_total", sym + "_total.one") in calls  # nested definition
    nodes = _by_id(sub)
    assert nodes[sym + "_total~2"]["labels"] == ["FUNCTION"]  # a second `def _total`
    assert nodes[sym + "Square.area"]["labels"] == ["METHOD"]
    assert nodes[sym + "Square"]["properties"]["doc"] == "A square."
    file_props = nodes["code:file:demo/pkg/shapes.py"]["properties"]
    # missing() and math.floor() (a module outside the repository) resolve to nothing.
    assert file_props["calls_unresolved"] >= 2
    assert file_props["parse_errors"] == 0


def test_rust_module_impl_and_use_paths(tmp_path: Path) -> None:
    _, sub = _project(tmp_path, LANGUAGE_FILES["rust"])
    sym = "code:sym:demo/src/lib.rs#"
    nodes = _by_id(sub)
    assert nodes[sym + "crate"]["labels"] == ["MODULE"]
    assert nodes[sym + "geometry"]["labels"] == ["MODULE"]
    assert nodes[sym + "Point::new"]["labels"] == ["METHOD"]
    assert nodes[sym + "Point::moved"]["properties"]["visibility"] == "pub(crate)"
    calls = _calls(sub)
    assert (sym + "Point::new", sym + "Point::check") in calls  # Self::check
    assert (sym + "Point::new", "code:sym:demo/src/util.rs#clamp") in calls
    assert (sym + "Point::moved", sym + "geometry::origin") in calls
    assert (sym + "Point::moved", "code:sym:demo/src/util.rs#Scale::factor") in calls
    assert (sym + "geometry::origin", sym + "geometry::zero") in calls
    assert (sym + "run", "code:sym:demo/src/util.rs#log") in calls  # crate::util::log()
    imports = {r["toId"] for r in sub["relationships"] if r["type"] == "IMPORTS"}
    assert imports == {"code:file:demo/src/util.rs"}  # `mod util;`


def test_go_symbols_are_keyed_by_package_directory(tmp_path: Path) -> None:
    _, sub = _project(tmp_path, LANGUAGE_FILES["go"])
    calls = _calls(sub)
    assert ("code:sym:demo/server#Server.Run", "code:sym:demo/server#Server.stop") in calls
    assert ("code:sym:demo/server#Server.Run", "code:sym:demo/util#Help") in calls
    # helper() is nothing of this file: by Go's rules another file of the package.
    assert ("code:sym:demo/server#Server.Run", "code:sym:demo/server#helper") in calls
    assert "code:sym:demo/server#init~2" in _by_id(sub)


_GO_DOT_TEST = b"""package server_test

import (
	. "example.com/demo/server"
	"testing"
)

func TestRun(t *testing.T) {
	s := NewServer()
	s.Run()
	if !helper() {
		t.Fatal(Describe())
	}
}
"""


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        # One dot import of the archive: its exported names are that package's.
        ("", "code:sym:demo/server#NewServer"),
        # Two dot imports, one of them external: which one defines it is not known.
        ('import . "github.com/onsi/gomega"\n', None),
    ],
)
def test_go_dot_imports_name_the_imported_package(
    extra: str, expected: str | None, tmp_path: Path
) -> None:
    path = tmp_path / "server_test.go"
    path.write_bytes(_GO_DOT_TEST.replace(b"\nfunc", extra.encode() + b"\nfunc", 1))
    options: dict[str, object] = {"root": "demo", "path": "server/server_test.go"}
    options["go_modules"] = {"example.com/demo": ""}
    sub = json.loads(run_handler(handle, path, format="code", options=options)[0])
    calls = {callee for _, callee in _calls(sub)}
    caller = "code:sym:demo/server/server_test#"
    # Unexported: the external test package's own helper, by Go's rule.
    assert caller + "helper" in calls
    if expected is None:
        assert not any(c.endswith(("#NewServer", "#Describe")) for c in calls)
    else:
        assert expected in calls
        assert "code:sym:demo/server#Describe" in calls
        assert caller + "NewServer" not in calls


def test_go_package_level_function_literals_are_functions(tmp_path: Path) -> None:
    path = tmp_path / "hooks.go"
    path.write_text(
        "package hooks\n\n// Now is replaced in tests.\nvar Now = func() int { return 1 }\n\n"
        "var (\n\tlimit int\n\treset = func() {}\n)\n\n"
        "func Run() {\n\tvar local = func() {}\n\tlocal()\n\tNow()\n\treset()\n}\n"
    )
    options = {"root": "demo", "path": "hooks/hooks.go"}
    sub = json.loads(run_handler(handle, path, format="code", options=options)[0])
    nodes = {n["id"]: n for n in sub["nodes"][1:]}
    sym = "code:sym:demo/hooks#"
    assert set(nodes) == {sym + "Now", sym + "reset", sym + "Run"}  # not `local`, not `limit`
    assert nodes[sym + "Now"]["properties"]["doc"] == "Now is replaced in tests."
    assert _calls(sub) == {(sym + "Run", sym + "Now"), (sym + "Run", sym + "reset")}


def test_java_imports_and_same_package_classes(tmp_path: Path) -> None:
    _, sub = _project(tmp_path, LANGUAGE_FILES["java"])
    sym = "code:sym:demo/src/com/ex/App.java#"
    calls = _calls(sub)
    assert (sym + "App.init", "code:sym:demo/src/com/ex/util/Helper.java#Helper.assist") in calls
    assert (sym + "App.init", "code:sym:demo/src/com/ex/util/Tools.java#Tools.max") in calls
    assert (sym + "App.init", "code:sym:demo/src/com/ex/Other.java#Other.ping") in calls
    assert (sym + "App.App", sym + "App.init") in calls  # a bare call finds the method
    # run() is overloaded: this.run() has two candidates and is not guessed.
    assert not any(caller == sym + "App.init" and "run" in callee for caller, callee in calls)


def test_java_calls_on_a_static_imported_field_are_the_fields_type(tmp_path: Path) -> None:
    path = tmp_path / "Job.java"
    path.write_text(
        "package com.ex;\n\n"
        "import static com.ex.util.Tools.LOG;\n"
        "import static com.ex.util.Tools.theUnsafe;\n"
        "import static com.ex.util.Tools.Inner;\n"
        "import static com.ex.util.Tools.max;\n\n"
        "class Job {\n"
        "    void go() { LOG.info(); theUnsafe.get(); Inner.make(); max(); }\n"
        "}\n"
    )
    resolve = {"com.ex.util.Tools": "src/com/ex/util/Tools.java"}
    options = {"root": "demo", "path": "src/com/ex/Job.java", "resolve": resolve}
    sub = json.loads(run_handler(handle, path, format="code", options=options)[0])
    tools = "code:sym:demo/src/com/ex/util/Tools.java#Tools."
    # LOG and theUnsafe are fields: their methods are their types', not Tools'.
    assert {callee for _, callee in _calls(sub)} == {tools + "Inner.make", tools + "max"}
    props = sub["nodes"][0]["properties"]
    assert (props["calls_cross_file"], props["calls_unresolved"]) == (2, 2)


COMMONJS = Fixture(
    "lib/b.js",
    "const a = require('./a');\n"
    "const { f, g: h } = require('./a');\n"
    "const k = require('./a').k;\n"
    "require('./side');\n"
    "const pkg = require('lodash');\n"
    "\n"
    "/** Runs it. */\n"
    "exports.run = function () {\n"
    "  f();\n"
    "  h();\n"
    "  k();\n"
    "  a.m();\n"
    "  a();\n"  # the module itself (module.exports = function): no symbol to name
    "  pkg.x();\n"
    "};\n"
    "module.exports.other = () => exports.run();\n",
    {"root": "demo", "path": "lib/b.js"},
)


def test_javascript_commonjs_require_binds_like_an_import(tmp_path: Path) -> None:
    """Most of npm is CommonJS: `require('./x')` bound to a name, destructured, or read
    for a member binds as an ES import does, and `exports.f = function` defines `f`."""
    _, sub = _project(tmp_path, COMMONJS)
    sym = "code:sym:demo/lib/b.js#"
    nodes = _by_id(sub)
    run = nodes[sym + "run"]
    assert run["labels"] == ["FUNCTION"]
    assert (run["properties"]["visibility"], run["properties"]["doc"]) == ("exported", "Runs it.")
    assert nodes[sym + "other"]["labels"] == ["FUNCTION"]
    other = "code:sym:demo/lib/a.js#"
    assert _calls(sub) == {
        (sym + "run", other + "f"),
        (sym + "run", other + "g"),  # h is g, renamed
        (sym + "run", other + "k"),
        (sym + "run", other + "m"),
        (sym + "other", sym + "run"),  # exports.run() is this file's own run
    }
    imports = {r["toId"] for r in sub["relationships"] if r["type"] == "IMPORTS"}
    assert imports == {"code:file:demo/lib/a.js", "code:file:demo/lib/side.js"}
    props = nodes["code:file:demo/lib/b.js"]["properties"]
    assert props["imports"] == ["./a", "./side", "lodash"]
    # a(), pkg.x() and the five require() calls name nothing of the repository
    assert props["calls_unresolved"] == 7


def test_typescript_import_equals_require_is_a_namespace(tmp_path: Path) -> None:
    fixture = Fixture(
        "src/main.ts",
        "import util = require('./util');\nexport function main() { return util.parse(1); }\n",
        {"root": "demo", "path": "src/main.ts"},
    )
    _, sub = _project(tmp_path, fixture)
    assert _calls(sub) == {("code:sym:demo/src/main.ts#main", "code:sym:demo/src/util.ts#parse")}


def test_unknown_language_is_a_file_without_symbols(tmp_path: Path) -> None:
    path = tmp_path / "tool.rb"
    path.write_text("def hello\n  puts 'hi'\nend\n")
    [raw] = run_handler(handle, path, format="code", name=str(path))  # as `telha ingest` names it
    sub = json.loads(raw)
    [node] = sub["nodes"]
    assert node["labels"] == ["FILE"]
    assert node["properties"]["language"] == "ruby"  # a language without a grammar here
    assert node["id"] == f"code:file:{tmp_path.name}/tool.rb"  # root: the folder's name
    other = tmp_path / "build.zork"
    other.write_text("x\n")
    [raw] = run_handler(handle, other, format="code")
    assert json.loads(raw)["nodes"][0]["properties"]["language"] == "zork"  # the extension


def test_language_option_overrides_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "script"
    path.write_text("def f():\n    return g()\n\ndef g():\n    return 1\n")
    [raw] = run_handler(handle, path, format="code", options={"language": "python"})
    labels = sorted(label for n in json.loads(raw)["nodes"] for label in n["labels"])
    assert labels == ["FILE", "FUNCTION", "FUNCTION"]


def test_undecodable_bytes_are_replaced_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "latin.py"
    path.write_bytes(b"# caf\xe9\ndef f():\n    return '\xff\xfe'\n")
    [raw] = run_handler(handle, path, format="code")
    sub = json.loads(raw)
    assert sub["nodes"][0]["properties"]["replaced_bytes"] == 3  # \xe9, \xff, \xfe
    assert "\ufffd" in sub["canonicalText"]
    assert [n["properties"]["name"] for n in sub["nodes"][1:]] == ["f"]


def test_a_utf16_source_with_a_bom_is_read_not_refused_as_binary(tmp_path: Path) -> None:
    text = (
        "// \u00e9t\u00e9\nint add(int a, int b) { return a + b; }\n"
        "int two(void) { return add(1, 1); }\n"
    )
    for bom, codec in ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        path = tmp_path / f"{codec}.c"
        path.write_bytes(bom + text.encode(codec))
        [raw] = run_handler(handle, path, format="code")
        sub = json.loads(raw)
        props = sub["nodes"][0]["properties"]
        assert sub["canonicalText"] == text
        assert props["encoding"] == codec
        assert "replaced_bytes" not in props
        assert props["bytes"] == len(text.encode(codec)) + 2
        assert [n["properties"]["name"] for n in sub["nodes"][1:]] == ["add", "two"]


def test_a_python_coding_declaration_is_honoured(tmp_path: Path) -> None:
    path = tmp_path / "legacy.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\ndef caf\xe9():\n    return '\xa3'\n")
    [raw] = run_handler(handle, path, format="code")
    sub = json.loads(raw)
    props = sub["nodes"][0]["properties"]
    assert props["encoding"] == "iso8859-1"
    assert "replaced_bytes" not in props
    assert "return '\u00a3'" in sub["canonicalText"]
    assert [n["properties"]["name"] for n in sub["nodes"][1:]] == ["caf\u00e9"]
    # The same bytes in another language: a declaration means nothing there (UTF-8).
    other = tmp_path / "legacy.js"
    other.write_bytes(b"// -*- coding: latin-1 -*-\nfunction f() { return '\xa3'; }\n")
    js = json.loads(run_handler(handle, other, format="code")[0])["nodes"][0]["properties"]
    assert "encoding" not in js
    assert js["replaced_bytes"] == 1


@pytest.mark.parametrize(
    "first_line",
    [b"# coding: no-such-codec\n", b"# coding: utf-16\n", b"\xef\xbb\xbf# coding: latin-1\n"],
)
def test_a_coding_declaration_that_cannot_hold_is_read_as_utf8(
    first_line: bytes, tmp_path: Path
) -> None:
    # Unknown codec; one that cannot spell its own ASCII declaration; a UTF-8 BOM that
    # contradicts it. Each is read as UTF-8, its undecodable byte counted.
    path = tmp_path / "odd.py"
    path.write_bytes(first_line + b"x = '\xe9'\n")
    props = json.loads(run_handler(handle, path, format="code")[0])["nodes"][0]["properties"]
    assert "encoding" not in props
    assert props["replaced_bytes"] == 1


_CPP_HEADER = b"""#pragma once
#include <vector>

namespace geo {
class Shape {
 public:
  virtual double area() const = 0;
  double twice() const { return 2 * area(); }
};
}  // namespace geo
"""

_C_HEADER = b"""/* The class of a window, as X names it. */
#ifdef __cplusplus
extern "C" {
#endif
struct point { int x, y; };
int distance(struct point a, struct point b);
#ifdef __cplusplus
}
#endif
"""


@pytest.mark.parametrize(
    ("text", "language"),
    [
        (_CPP_HEADER, "cpp"),
        (_C_HEADER, "c"),
        (b"template <typename T>\nT id(T x) { return x; }\n", "cpp"),
        (b"#include <string>\nint f(void);\n", "cpp"),
        (b"static int n = std::max(1, 2);\n", "cpp"),
        (b"class Widget : public Base {};\n", "cpp"),
        (b"  class passed to CreateWindow */\nint f(void);\n", "c"),
        (b"#include <stdio.h>\nint main(void);\n", "c"),
        (b"#import <Foundation/Foundation.h>\n@interface RCTView : UIView\n@end\n", "objective-c"),
        (b"@protocol RCTBridgeModule <NSObject>\n@end\n", "objective-c"),
        (b"#import <UIKit/UIKit.h>\nnamespace facebook {\n}\n", "cpp"),  # Objective-C++
    ],
)
def test_a_header_is_c_or_cpp_by_its_bytes(text: bytes, language: str) -> None:
    assert content_language("include/x.h", "c", text) == language
    assert content_language("src/x.c", "c", text) == "c"  # only .h headers are sniffed


def test_a_cpp_header_is_projected_as_cpp_unless_the_option_says(tmp_path: Path) -> None:
    path = tmp_path / "shape.h"
    path.write_bytes(_CPP_HEADER)
    sub = json.loads(run_handler(handle, path, format="code")[0])
    assert sub["nodes"][0]["properties"]["language"] == "cpp"
    assert sub["nodes"][0]["properties"]["parse_errors"] == 0
    labels = {n["properties"]["qualified_name"]: n["labels"][0] for n in sub["nodes"][1:]}
    # A pure virtual declaration has no body: not a definition here, as in a .cpp file.
    assert labels == {"geo::Shape": "CLASS", "geo::Shape::twice": "METHOD"}
    forced = json.loads(run_handler(handle, path, format="code", options={"language": "c"})[0])
    assert forced["nodes"][0]["properties"]["language"] == "c"


_FLOW = b"""/**
 * Copyright notice.
 *
 * @flow strict-local
 * @format
 */

import type {Point} from './geometry';

export type Pair<T> = {first: T, second: T};

export function swap<T>(pair: Pair<T>): Pair<T> {
  return {first: pair.second, second: pair.first};
}

function twice(p: Point): Pair<Point> {
  return swap({first: p, second: p});
}
"""


def test_flow_javascript_is_read_with_the_tsx_grammar(tmp_path: Path) -> None:
    path = tmp_path / "pairs.js"
    path.write_bytes(_FLOW)
    sub = json.loads(run_handler(handle, path, format="code")[0])
    props = sub["nodes"][0]["properties"]
    assert (props["language"], props["dialect"], props["parse_errors"]) == ("javascript", "flow", 0)
    names = {n["properties"]["name"]: n["labels"][0] for n in sub["nodes"][1:]}
    assert names == {"Pair": "TYPE", "swap": "FUNCTION", "twice": "FUNCTION"}
    assert props["calls_local"] == 1
    # `@flow` past the leading comments is not the pragma: plain JavaScript.
    plain = tmp_path / "plain.js"
    plain.write_bytes(b"// utilities\nfunction f() { return '@flow'; }\n/* @flow */\n")
    props = json.loads(run_handler(handle, plain, format="code")[0])["nodes"][0]["properties"]
    assert "dialect" not in props
    assert props["language"] == "javascript"


def test_syntax_errors_are_counted_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("def ok():\n    return 1\n\ndef broken(:\n    pass\n")
    [raw] = run_handler(handle, path, format="code")
    props = json.loads(raw)["nodes"][0]["properties"]
    assert props["parse_errors"] >= 1


def test_binary_and_oversize_files_fail_typed(tmp_path: Path) -> None:
    from workers_common import TooLarge, Unsupported

    binary = tmp_path / "blob.c"
    binary.write_bytes(b"\x7fELF\x00\x00\x01")
    with pytest.raises(Unsupported, match="binary"):
        run_handler(handle, binary, format="code")
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * 100)
    with pytest.raises(TooLarge, match="max_file_bytes=100"):
        run_handler(handle, big, format="code", options={"max_file_bytes": 100})


def test_empty_file_is_a_file_node(tmp_path: Path) -> None:
    path = tmp_path / "empty.go"
    path.write_bytes(b"")
    [raw] = run_handler(handle, path, format="code")
    sub = json.loads(raw)
    assert [n["labels"] for n in sub["nodes"]] == [["FILE"]]
    assert sub["nodes"][0]["properties"]["lines"] == 0


@pytest.mark.timeout(120)
@pytest.mark.parametrize("language", ["python", "rust", "go"])
def test_determinism_across_processes(language: str, tmp_path: Path) -> None:
    fixture = LANGUAGE_FILES[language]
    check_determinism(
        "code_worker:handle", _write(tmp_path, fixture), format="code", options=fixture.options
    )


def test_a_file_with_more_definitions_than_a_submission_carries_is_too_large(
    tmp_path: Path,
) -> None:
    from workers_common import TooLarge

    path = tmp_path / "generated.py"
    path.write_text("".join(f"def f{i}(): pass\n" for i in range(100_001)))
    with pytest.raises(TooLarge, match="100003 nodes"):
        run_handler(handle, path, format="code")


def test_a_parse_over_its_budget_is_too_large_and_the_next_file_parses(tmp_path: Path) -> None:
    """max_parse_ms bounds tree-sitter itself (its progress callback), not only the job's
    timeout; the worker's reused parser starts the next file afresh."""
    from workers_common import TooLarge

    slow = tmp_path / "slow.py"
    slow.write_text("".join(f"def f{i}(a, b):\n    return g(a, [b, {i}])\n" for i in range(40_000)))
    with pytest.raises(TooLarge, match=r"did not finish within max_parse_ms=1 ms"):
        run_handler(handle, slow, format="code", options={"max_parse_ms": 1})
    small = tmp_path / "small.py"
    small.write_text("def f():\n    return g()\n\ndef g():\n    return 1\n")
    [raw] = run_handler(handle, small, format="code")
    sub = json.loads(raw)
    assert sub["nodes"][0]["properties"]["calls_local"] == 1
    assert [n["properties"]["name"] for n in sub["nodes"][1:]] == ["f", "g"]
    [again] = run_handler(handle, slow, format="code")  # the default budget is ample
    assert json.loads(again)["nodes"][0]["properties"]["symbols"] == 40_000


def test_an_import_naming_an_impossible_id_links_to_its_hashed_id(tmp_path: Path) -> None:
    """A control character inside an import path (one flipped byte of a real file) makes a
    target id no node can have: the builder refused it and the job ended `transient`
    (found by the fault suite). The import and the call through it link to the hashed
    ids (ids.py) that a file of that name would carry, so nothing is lost or guessed."""
    path = tmp_path / "mod.js"
    path.write_bytes(
        b"import { helper } from './a\x01b';\nexport function run() { return helper(1); }\n"
    )
    subs = run_handler(handle, path, format="code", options={"root": "r", "path": "mod.js"})
    check_submissions(subs)
    final = json.loads(subs[-1])
    targets = {r["type"]: r.get("toId") for r in final["relationships"] if r.get("toId")}
    assert targets == {
        "IMPORTS": file_id("r", "a\x01b.js"),
        "CALLS": symbol_id("r", "a\x01b.js", "helper"),
    }
    assert all(t.startswith(("code:file:~", "code:sym:~")) for t in targets.values())
    [file] = [n for n in final["nodes"] if "FILE" in n["labels"]]
    assert file["properties"]["calls_cross_file"] == 1


def test_cpp_names_written_over_lines_or_around_comments_are_spelled_as_tokens(
    tmp_path: Path,
) -> None:
    """GCC's libstdc++ (pb_ds) writes a macro scope and the member's name on separate lines;
    as written, the name held a newline, no id could carry it, and 163 of /usr/include's
    headers ended dead after five `transient` attempts. Names are their tokens: one space
    between two words only, comments left out."""
    path = tmp_path / "imps.hpp"
    path.write_bytes(
        b"PB_DS_CLASS_T_DEC\nvoid\nPB_DS_CLASS_C_DEC::\nswap(PB_DS_CLASS_C_DEC& other)\n"
        b"{ value_swap(other); }\n\n"
        b"void Outer /* the owner */ :: inner() { swap(*this); }\n\n"
        b"struct S { void* operator new(unsigned long n); bool operator == (const S&) const"
        b" { return true; } };\n"
    )
    subs = run_handler(handle, path, format="code", options={"root": "r", "path": "imps.hpp"})
    check_submissions(subs)
    nodes = json.loads(subs[-1])["nodes"]
    names = [n["properties"]["qualified_name"] for n in nodes if "FILE" not in n["labels"]]
    assert names == ["PB_DS_CLASS_C_DEC::swap", "Outer::inner", "S", "S::operator=="]
    ids = [n["id"] for n in nodes]
    assert symbol_id("r", "imps.hpp", "PB_DS_CLASS_C_DEC::swap") in ids
    assert all("~" not in i for i in ids)  # each one its readable id, none hashed
