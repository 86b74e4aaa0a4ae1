"""Source files and archives the code worker's tests are made of, each built here so a
reader sees why each byte is there."""

from __future__ import annotations

import io
import tarfile
import zipfile
from dataclasses import dataclass, field

__all__ = ["LANGUAGE_FILES", "PY_REPO", "RUST_REPO", "Fixture", "tar_gz", "zip_bytes"]


@dataclass(frozen=True)
class Fixture:
    filename: str
    text: str
    options: dict[str, object] = field(default_factory=dict)


# One file per language: definitions of every label the language has, a doc comment,
# visibility, a nested definition, calls by scope (local, self/this, nested) and imports
# whose calls resolve to other files' symbol ids.
LANGUAGE_FILES = {
    "python": Fixture(
        "pkg/shapes.py",
        '"""Shapes."""\n'
        "import math\n"
        "from .util import clamp as c, helper\n"
        "from . import colors\n\n\n"
        "class Square:\n"
        '    """A square."""\n\n'
        "    def __init__(self, side):\n"
        "        self.side = c(side)\n\n"
        "    def area(self):\n"
        "        return self.side * self.side\n\n"
        "    def describe(self):\n"
        "        return helper(self.area()) + colors.name()\n\n\n"
        "def _total(squares):\n"
        "    def one(s):\n"
        "        return s.area()\n"
        "    return sum(one(s) for s in squares) + math.floor(0.5) + missing()\n\n\n"
        "def _total(squares):  # redefined: the second gets a position suffix\n"
        "    return 0\n",
        {"root": "demo", "path": "pkg/shapes.py"},
    ),
    "rust": Fixture(
        "src/lib.rs",
        "//! The crate.\n"
        "mod util;\n"
        "mod geometry {\n    pub fn origin() -> i32 { zero() }\n    fn zero() -> i32 { 0 }\n}\n"
        "use crate::util::{clamp, Scale as S};\n\n"
        "/// A point.\npub struct Point { x: i32 }\n\n"
        "impl Point {\n"
        "    /// Makes one.\n"
        "    pub fn new(x: i32) -> Self { Self::check(x); Point { x: clamp(x) } }\n"
        "    fn check(_x: i32) {}\n"
        "    pub(crate) fn moved(&self) -> i32 { self.x + geometry::origin() + S::factor() }\n"
        "}\n\n"
        "impl std::fmt::Display for Point {\n"
        '    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result { write!(f, "p") }\n'
        "}\n\n"
        "pub trait Shape { fn area(&self) -> f64; }\n"
        "pub enum Kind { A, B }\n"
        "pub type Id = u32;\n"
        "fn run() { crate::util::log(); unknown(); }\n",
        {"root": "demo", "path": "src/lib.rs"},
    ),
    "javascript": Fixture(
        "web/app.js",
        "import render, { format as fmt } from './view.js';\n"
        "import * as store from '../lib/store';\n"
        "import React from 'react';\n\n"
        "/** Starts the app. */\n"
        "export function start() { fmt(load()); store.save(); render(); React.x(); }\n"
        "const load = () => 42;\n"
        "class Counter {\n  inc() { this.add(1); }\n  add(n) { return n; }\n  #hidden() {}\n}\n",
        {"root": "demo", "path": "web/app.js"},
    ),
    "typescript": Fixture(
        "src/model.ts",
        'import { Store } from "./store";\n\n'
        "/** A user. */\n"
        "export interface User { id: number; name(): string }\n"
        "export type Id = number;\n"
        "export enum Role { Admin, Guest }\n"
        "export abstract class Base { abstract key(): string; }\n"
        "export class Repo extends Base {\n"
        "  private items: User[] = [];\n"
        "  key(): string { return this.prefix() + Store.open(); }\n"
        "  protected prefix(): string { return ''; }\n"
        "}\n"
        "function helper(): void { new Repo().key(); }\n",
        {"root": "demo", "path": "src/model.ts"},
    ),
    "tsx": Fixture(
        "ui/Button.tsx",
        'import { theme } from "./theme";\n'
        "export function Button(props: { label: string }) {\n"
        "  return <button style={theme()}>{caption(props.label)}</button>;\n"
        "}\n"
        "function caption(s: string): string { return s.toUpperCase(); }\n",
        {"root": "demo", "path": "ui/Button.tsx"},
    ),
    "go": Fixture(
        "server/server.go",
        "package server\n\n"
        'import (\n\t"fmt"\n\tu "example.com/demo/util"\n)\n\n'
        "// Server serves requests.\n"
        "type Server struct{ n int }\n\n"
        "// Handler handles.\ntype Handler interface{ Serve() }\n\n"
        "type ID int\n\n"
        "// Run starts it.\n"
        'func (s *Server) Run() { s.stop(); u.Help(); fmt.Println(len("x")); helper() }\n'
        "func (s *Server) stop() {}\n"
        "func New() *Server { s := &Server{}; s.Run(); return s }\n"
        "func init() {}\n"
        "func init() {}\n",
        {"root": "demo", "path": "server/server.go", "go_modules": {"example.com/demo": ""}},
    ),
    "java": Fixture(
        "src/com/ex/App.java",
        "package com.ex;\n\n"
        "import com.ex.util.Helper;\n"
        "import static com.ex.util.Tools.max;\n"
        "import java.util.List;\n\n"
        "/** The app. */\n"
        "public class App {\n"
        "    public App() { init(); }\n"
        "    private void init() { this.run(); Helper.assist(); max(); Other.ping(); List.of(); }\n"
        "    protected void run() {}\n"
        "    void run(int times) {}\n"
        "    interface Listener { void on(); }\n"
        "    enum Mode { ON, OFF }\n"
        "    record Pair(int a, int b) {}\n"
        "}\n",
        {
            "root": "demo",
            "path": "src/com/ex/App.java",
            "resolve": {
                "com.ex.App": "src/com/ex/App.java",
                "com.ex.Other": "src/com/ex/Other.java",
                "com.ex.util.Helper": "src/com/ex/util/Helper.java",
                "com.ex.util.Tools": "src/com/ex/util/Tools.java",
            },
        },
    ),
    "c": Fixture(
        "src/calc.c",
        '#include "calc.h"\n#include <stdio.h>\n\n'
        "/* Adds two numbers. */\n"
        "static int add(int a, int b) { return a + b; }\n\n"
        'int *twice(int a) { add(a, a); printf("%d", a); return 0; }\n'
        "struct pair { int a; int b; };\n"
        "union value { int i; float f; };\n"
        "enum color { RED, GREEN };\n"
        "typedef struct pair pair_t;\n",
        {"root": "demo", "path": "src/calc.c"},
    ),
    "cpp": Fixture(
        "src/shape.cpp",
        '#include "shape.hpp"\n#include <vector>\n\n'
        "namespace geo {\n"
        "// A shape.\n"
        "class Shape {\n public:\n  double area() const { return side() * 2; }\n"
        " private:\n  double side() const;\n};\n"
        "struct Point { int x; };\n"
        "enum class Kind { A, B };\n"
        "using Id = int;\n"
        "double scale(double v) { return v * 2; }\n"
        "}\n\n"
        "double geo::Shape::side() const { return this->area() + geo::scale(1) + helper(); }\n"
        "template <typename T> T twice(T v) { return v + v; }\n",
        {"root": "demo", "path": "src/shape.cpp"},
    ),
}

# A Python mini-repository whose cross-file calls cover `from a.b import f`, `import a.b`,
# a relative import and a package's `__init__`.
PY_REPO = {
    "pyproject.toml": (
        b'[project]\nname = "mini_py"\nversion = "1.0"\ndependencies = ["requests>=2"]\n'
    ),
    # The package re-exports text.shout as yell: callers of mini.yell reach text.py.
    "mini/__init__.py": b"from .text import shout as yell\n\ndef version():\n    return '1'\n",
    "mini/core.py": (
        b"from mini.text import shout\n"
        b"from .numbers import double\n"
        b"import mini.numbers\n"
        b"from mini import version\n\n"
        b"def run(x):\n"
        b"    return shout(str(double(x))) + str(mini.numbers.triple(x)) + version()\n"
    ),
    "mini/text.py": (
        b"def shout(s):\n    return s.upper() + bang()\n\ndef bang():\n    return '!'\n"
    ),
    "mini/numbers.py": b"def double(x):\n    return 2 * x\n\ndef triple(x):\n    return 3 * x\n",
    "tests/test_core.py": (
        b"from mini.core import run\nfrom mini import yell\n\n"
        b"def test_run():\n    assert run(1) and yell('a')\n"
    ),
}

# A Rust mini-crate: `mod` files (x.rs and x/mod.rs styles), `use crate::…`, a
# path call, a method on a type imported from another module.
RUST_REPO = {
    "Cargo.toml": (
        b'[package]\nname = "mini-rs"\nversion = "0.1.0"\n\n[dependencies]\nserde = "1"\n'
    ),
    "src/lib.rs": (
        b"mod extra;\nmod shapes;\nmod util;\n\n"
        b"pub use crate::shapes::Circle;\nuse crate::util::clamp;\n\n"
        b"pub fn area(r: f64) -> f64 { Circle::new(clamp(r)).area() + util::pi() }\n"
    ),
    "src/shapes.rs": (
        b"use crate::util::square;\n\n"
        b"pub struct Circle { r: f64 }\n\n"
        b"impl Circle {\n"
        b"    pub fn new(r: f64) -> Self { Circle { r } }\n"
        b"    pub fn area(&self) -> f64 { crate::util::pi() * square(self.r) }\n"
        b"}\n"
    ),
    # Circle through the crate root's `pub use`: the call must reach shapes.rs.
    "src/extra.rs": b"use crate::Circle;\n\npub fn unit() -> f64 { Circle::new(1.0).area() }\n",
    "src/util/mod.rs": (
        b"pub fn clamp(x: f64) -> f64 { if x < 0.0 { 0.0 } else { x } }\n"
        b"pub fn square(x: f64) -> f64 { x * x }\n"
        b"pub fn pi() -> f64 { 3.14 }\n"
    ),
}


def zip_bytes(files: dict[str, bytes], prefix: str = "") -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in sorted(files.items()):
            info = zipfile.ZipInfo(prefix + name, date_time=(2026, 1, 1, 0, 0, 0))
            archive.writestr(info, data, zipfile.ZIP_DEFLATED)
    return out.getvalue()


def tar_gz(files: dict[str, bytes], prefix: str = "") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(prefix + name)
            info.size, info.mtime = len(data), 1_767_225_600
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()
