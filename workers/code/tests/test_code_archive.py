"""Archives through the real handler: the fan-out, the filters, the resolve tables, and
hostile archives made here (bomb, traversal, links, devices, 100,000 entries, truncated)
→ typed outcomes, with nothing written outside the worker's temporary directory."""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from code_worker.archive_handler import handle_archive
from workers_common import InvalidInput, TooLarge, Unsupported
from workers_common.conformance import check_submissions, run_handler

from code_corpus import PY_REPO, RUST_REPO, tar_gz, zip_bytes


def _run(tmp_path: Path, name: str, data: bytes, **options: Any) -> list[dict[str, Any]]:
    path = tmp_path / name
    path.write_bytes(data)
    subs = run_handler(handle_archive, path, format="code-archive", options=options)
    check_submissions(subs)
    return [json.loads(raw) for raw in subs]


def _repository(subs: list[dict[str, Any]]) -> dict[str, Any]:
    props: dict[str, Any] = subs[0]["nodes"][0]["properties"]
    return props


def _children(subs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        c["options"]["path"]: c
        for s in subs
        for c in s.get("childJobs", [])
        if c["format"] == "code"
    }


def test_a_repository_fans_out_one_child_per_source_file(tmp_path: Path) -> None:
    subs = _run(tmp_path, "mini_py.tar.gz", tar_gz(PY_REPO, prefix="mini_py-1.0/"))
    repo = _repository(subs)
    assert (repo["root"], repo["files"], repo["languages"]) == ("mini_py", 5, {"python": 5})
    tests = _children(subs)["tests/test_core.py"]["options"]["resolve"]
    assert tests["=mini.yell"] == "mini/text.py#shout"  # mini/__init__.py re-exports it
    children = _children(subs)
    assert sorted(children) == [
        "mini/__init__.py",
        "mini/core.py",
        "mini/numbers.py",
        "mini/text.py",
        "tests/test_core.py",
    ]  # the shared top folder mini_py-1.0/ is gone
    core = children["mini/core.py"]
    import blake3

    digest = blake3.blake3(PY_REPO["mini/core.py"]).hexdigest()
    assert core["name"] == f"code:mini_py/mini/core.py@{digest}"
    assert core["options"]["module"] == "mini.core"
    # What core.py imports, as the line scan found it and the archive's files place it.
    assert core["options"]["resolve"] == {
        "mini": "mini/__init__.py",
        "mini.numbers": "mini/numbers.py",
        "mini.text": "mini/text.py",
        # What those files define, cut to the names core.py writes.
        "#mini/__init__.py": "version",
        "#mini/numbers.py": "double triple",
        "#mini/text.py": "shout",
    }
    packages = [n for s in subs for n in s["nodes"] if n["labels"] == ["PACKAGE"]]
    assert [p["id"] for p in packages] == ["code:pkg:pypi/mini-py"]
    deps = [r["toId"] for r in subs[0]["relationships"] if r["type"] == "DEPENDS_ON"]
    assert deps == ["code:pkg:pypi/requests"]
    contains = {r.get("toId") for s in subs for r in s["relationships"] if r["type"] == "CONTAINS"}
    assert "code:file:mini_py/mini/core.py" in contains


@pytest.mark.parametrize(
    ("name", "make", "root"),
    [
        ("mini_rs-0.3.1.crate", lambda: tar_gz(RUST_REPO, prefix="mini_rs/"), "mini_rs-0.3.1"),
        ("mini_py-1.0-py3-none-any.whl", lambda: zip_bytes(PY_REPO), "mini_py-1.0-py3-none-any"),
    ],
)
def test_packages_are_archives_named_without_their_suffix(
    name: str, make: Any, root: str, tmp_path: Path
) -> None:
    # A crates.io .crate is a tar.gz, a Python wheel a zip: the bytes say which.
    subs = _run(tmp_path, name, make())
    repo = _repository(subs)
    assert repo["root"] == root
    assert repo["files"] == len(_children(subs)) > 0
    assert all(c["name"].startswith(f"code:{root}/") for c in _children(subs).values())


def test_headers_count_as_the_language_their_bytes_say(tmp_path: Path) -> None:
    files = {
        "src/shape.h": b"namespace geo {\nclass Shape {\n public:\n  int n();\n};\n}\n",
        "src/point.h": b"struct point { int x; };\nint norm(struct point p);\n",
        "src/point.c": b'#include "point.h"\nint norm(struct point p) { return p.x; }\n',
    }
    subs = _run(tmp_path, "geo.zip", zip_bytes(files))
    assert _repository(subs)["languages"] == {"c": 2, "cpp": 1}


def test_sources_of_languages_without_a_grammar_are_file_children(tmp_path: Path) -> None:
    files = {
        "app/src/Main.kt": b"fun main() = println(1)\n",
        "ios/App.swift": b"print(1)\n",
        "scripts/build.sh": b"#!/bin/sh\nmake\n",
        "src/lib.rs": b"pub fn f() {}\n",
        "app/res/values.xml": b"<resources/>\n",  # configuration: not a source file
    }
    subs = _run(tmp_path, "mobile.zip", zip_bytes(files))
    repo = _repository(subs)
    assert repo["languages"] == {"kotlin": 1, "rust": 1, "shell": 1, "swift": 1}
    assert repo["skipped"] == {"not_source": 1}
    children = _children(subs)
    assert sorted(children) == [
        "app/src/Main.kt",
        "ios/App.swift",
        "scripts/build.sh",
        "src/lib.rs",
    ]
    from code_worker import handle

    kotlin = tmp_path / "Main.kt"
    kotlin.write_bytes(files["app/src/Main.kt"])
    options = children["app/src/Main.kt"]["options"]
    [node] = json.loads(run_handler(handle, kotlin, format="code", options=options)[0])["nodes"]
    assert (node["id"], node["properties"]["language"]) == (
        "code:file:mobile/app/src/Main.kt",
        "kotlin",
    )


def test_rust_children_get_their_crate_module_tree(tmp_path: Path) -> None:
    subs = _run(tmp_path, "mini-rs.zip", zip_bytes(RUST_REPO))
    lib = _children(subs)["src/lib.rs"]["options"]
    assert lib["crate"] == "mini-rs"
    assert lib["resolve"] == {
        "=crate::Circle": "crate::shapes::Circle",  # lib.rs's `pub use`
        "@crate": "src/lib.rs",
        "crate::extra": "src/extra.rs",
        "crate::shapes": "src/shapes.rs",
        "crate::util": "src/util/mod.rs",
        # What the files it can name define, cut to the names lib.rs writes.
        "#src/extra.rs": "",
        "#src/shapes.rs": "Circle area new",
        "#src/util/mod.rs": "clamp pi",
    }
    packages = [n["id"] for s in subs for n in s["nodes"] if n["labels"] == ["PACKAGE"]]
    assert packages == ["code:pkg:cargo/mini-rs"]


def test_default_excludes_gitignore_include_and_exclude(tmp_path: Path) -> None:
    files = {
        ".gitignore": b"generated/\n*.pb.go\n!keep.pb.go\n",
        "src/a.py": b"x = 1\n",
        "src/keep.pb.go": b"package p\n",
        "src/drop.pb.go": b"package p\n",
        "generated/g.py": b"y = 1\n",
        "node_modules/lib/index.js": b"z\n",
        "target/debug/build.rs": b"fn main() {}\n",
        "web/app.min.js": b"var a=1;\n",
        "web/app.js": b"export function f() {}\n",
        "docs/readme.md": b"# hi\n",
        "tests/t.py": b"z = 1\n",
    }
    subs = _run(tmp_path, "r.zip", zip_bytes(files))
    assert sorted(_children(subs)) == ["src/a.py", "src/keep.pb.go", "tests/t.py", "web/app.js"]
    skipped = _repository(subs)["skipped"]
    assert skipped == {"excluded": 3, "gitignored": 2, "not_source": 2}
    narrowed = _run(tmp_path, "r.zip", zip_bytes(files), include=["src/"], exclude="*.go")
    assert sorted(_children(narrowed)) == ["src/a.py"]


def test_an_oversize_file_becomes_a_too_large_child(tmp_path: Path) -> None:
    subs = _run(
        tmp_path,
        "r.tar.gz",
        tar_gz({"a.py": b"x = 1\n", "big.py": b"#" * 5000}),
        max_file_bytes=1000,
    )
    big = _children(subs)["big.py"]
    assert "contentB64" not in big
    assert big["options"]["oversize"] == {"bytes": 5000, "limit": 1000, "what": "max_file_bytes"}
    assert _repository(subs)["too_large_files"] == 1


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]], *, gz: bool = True) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return gzip.compress(out.getvalue(), mtime=0) if gz else out.getvalue()


def _info(
    name: str, kind: bytes = tarfile.REGTYPE, size: int = 0, link: str = ""
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname = kind, size, link
    return info


def test_hostile_tar_members_are_skipped_and_counted(tmp_path: Path) -> None:
    ok = b"def f():\n    return 1\n"
    data = _tar(
        [
            (_info("ok.py", size=len(ok)), ok),
            (_info("../../escape.py", size=len(ok)), ok),
            (_info("/etc/abs.py", size=len(ok)), ok),
            (_info("C:/win.py", size=len(ok)), ok),
            (_info("link.py", tarfile.SYMTYPE, link="/etc/passwd"), None),
            (_info("hard.py", tarfile.LNKTYPE, link="ok.py"), None),
            (_info("dev.py", tarfile.CHRTYPE), None),
            (_info("fifo.py", tarfile.FIFOTYPE), None),
            (_info("inner.zip", size=4), b"PK\x05\x06"),
            (_info("ok.py", size=len(ok)), ok),
        ]
    )
    before = sorted(os.listdir(tmp_path.parent))
    subs = _run(tmp_path, "evil.tar.gz", data)
    assert sorted(_children(subs)) == ["ok.py"]
    assert _repository(subs)["skipped"] == {
        "absolute_path": 1,
        "device": 2,
        "drive_letter": 1,
        "duplicate_path": 1,
        "hardlink": 1,
        "nested_archive": 1,
        "path_traversal": 1,
        "symlink": 1,
    }
    assert sorted(os.listdir(tmp_path.parent)) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.tar.gz"]  # nothing extracted


def test_hostile_zip_members_are_skipped_and_counted(tmp_path: Path) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("ok.py", "x = 1\n")
        archive.writestr("../up.py", "x = 1\n")
        archive.writestr("..\\win\\up.py", "x = 1\n")
        link = zipfile.ZipInfo("link.py")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
    subs = _run(tmp_path, "evil.zip", out.getvalue())
    assert sorted(_children(subs)) == ["ok.py"]
    assert _repository(subs)["skipped"] == {"path_traversal": 2, "symlink": 1}


def test_a_member_in_a_compression_method_zipfile_lacks_is_skipped_and_counted(
    tmp_path: Path,
) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("ok.py", "x = 1\n")
        archive.writestr("odd.py", "y = 2\n")
    data = bytearray(out.getvalue())
    # odd.py's method (stored, 0) becomes deflate64 (9) in its local and central headers.
    local = data.rindex(b"PK\x03\x04", 0, data.index(b"odd.py"))
    central = data.rindex(b"PK\x01\x02", 0, data.rindex(b"odd.py"))
    data[local + 8 : local + 10] = (9).to_bytes(2, "little")
    data[central + 10 : central + 12] = (9).to_bytes(2, "little")
    subs = _run(tmp_path, "deflate64.zip", bytes(data))
    assert sorted(_children(subs)) == ["ok.py"]
    assert _repository(subs)["skipped"] == {"unsupported_compression": 1}


def test_a_zip_that_needs_a_newer_zip_version_is_unsupported(tmp_path: Path) -> None:
    # One flipped byte: the central directory's "version needed" 2.0 becomes 15.4, which
    # zipfile refuses with NotImplementedError when it opens the archive (was transient).
    data = bytearray(zip_bytes({"a.py": b"x = 1\n"}))
    central = data.rindex(b"PK\x01\x02")
    data[central + 6 : central + 8] = (154).to_bytes(2, "little")
    path = tmp_path / "future.zip"
    path.write_bytes(bytes(data))
    with pytest.raises(Unsupported, match=r"zip file version 15\.4"):
        run_handler(handle_archive, path, format="code-archive")


def test_a_zip_bomb_is_too_large_before_anything_is_inflated(tmp_path: Path) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for i in range(3):
            archive.writestr(f"zeros{i}.py", b"\0" * (100 * 1024 * 1024))
    assert len(out.getvalue()) < 1024 * 1024
    path = tmp_path / "bomb.zip"
    path.write_bytes(out.getvalue())
    with pytest.raises(TooLarge, match="decompression bomb"):
        run_handler(handle_archive, path, format="code-archive")


def test_a_tar_bomb_is_too_large(tmp_path: Path) -> None:
    # A header that declares 10 GiB, followed by only 1 MiB: refused at the header.
    huge = _info("huge.py", size=10 * 1024**3)
    data = gzip.compress(huge.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * (1024 * 1024))
    path = tmp_path / "bomb.tar.gz"
    path.write_bytes(data)
    with pytest.raises(TooLarge, match="max_total_bytes"):
        run_handler(handle_archive, path, format="code-archive")


def test_too_many_entries_is_too_large(tmp_path: Path) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for i in range(100_000):
            archive.writestr(f"f{i}.py", b"")
    path = tmp_path / "many.zip"
    path.write_bytes(out.getvalue())
    with pytest.raises(TooLarge, match="max_entries=50000"):
        run_handler(handle_archive, path, format="code-archive")


@pytest.mark.parametrize("kind", ["zip", "tar.gz", "tar"])
def test_a_truncated_archive_is_invalid_input(kind: str, tmp_path: Path) -> None:
    files = {f"m{i}.py": (f"def f{i}():\n    return {i}\n" * 200).encode() for i in range(5)}
    if kind == "zip":
        data = zip_bytes(files)
    elif kind == "tar.gz":
        data = tar_gz(files)
    else:
        data = _tar([(_info(n, size=len(d)), d) for n, d in sorted(files.items())], gz=False)
    path = tmp_path / f"cut.{kind}"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InvalidInput):
        run_handler(handle_archive, path, format="code-archive")


def test_not_an_archive_is_invalid_input(tmp_path: Path) -> None:
    path = tmp_path / "fake.zip"
    path.write_bytes(b"just some text, no archive here\n" * 40)
    with pytest.raises(InvalidInput, match="not a zip or tar"):
        run_handler(handle_archive, path, format="code-archive")


def test_a_zip_after_a_shebang_line_is_read(tmp_path: Path) -> None:
    """A Python zipapp (`python -m zipapp` writes a `#!` line, then the zip) and a
    self-extracting archive (a stub program first) are zips read from their directory at
    the end; they were refused as having no zip signature at the start."""
    files = {"__main__.py": b"from app import run\nrun()\n", "app.py": b"def run():\n    pass\n"}
    for name, stub in (
        ("tool.pyz", b"#!/usr/bin/env python3\n"),
        ("setup.zip", b"\x7fELF" + bytes(4000)),
    ):
        subs = _run(tmp_path, name, stub + zip_bytes(files))
        children = sorted(c["name"].split("@")[0] for s in subs for c in s.get("childJobs", []))
        root = name.rsplit(".", 1)[0]
        assert children == [f"code:{root}/__main__.py", f"code:{root}/app.py"]


def test_many_files_are_split_into_partials(tmp_path: Path) -> None:
    files = {f"pkg/m{i:04}.py": f"def f{i}():\n    return {i}\n".encode() for i in range(4500)}
    subs = _run(tmp_path, "many.zip", zip_bytes(files))
    counts = [len(s.get("childJobs", [])) for s in subs]
    assert counts == [0, 2000, 2000, 500, 0]
    assert subs[-1]["partial"] is False
    # Only the first partial has nodes (REPOSITORY); the others carry children and the
    # CONTAINS edges by the repository's id (the core applies nodeless partials).
    assert [len(s["nodes"]) for s in subs] == [1, 0, 0, 0, 0]
    froms = {r.get("fromId") for s in subs[1:] for r in s["relationships"]}
    assert froms == {"code:repo:many"}
    assert sum(len(s["relationships"]) for s in subs[1:]) == 4500


def test_partials_stay_under_the_submission_size_limit(tmp_path: Path) -> None:
    """30 files of 1 MiB: their base64 and options fill partials of at most 24 MiB, far
    under the core's 64 MiB per submission."""
    files = {f"big{i:02}.py": (f"x{i} = 1\n" * 150_000)[: 1 << 20].encode() for i in range(30)}
    path = tmp_path / "big.zip"
    path.write_bytes(zip_bytes(files))
    raws = run_handler(handle_archive, path, format="code-archive")
    sizes = [len(raw) for raw in raws]
    assert max(sizes) < 26 * 1024 * 1024
    counts = [len(json.loads(raw).get("childJobs", [])) for raw in raws]
    assert sum(counts) == 30
    assert len([c for c in counts if c]) == 2  # 40 MiB of base64 in two partials


def test_the_parse_budget_is_passed_on_to_the_children(tmp_path: Path) -> None:
    subs = _run(tmp_path, "mini_py.zip", zip_bytes(PY_REPO), max_parse_ms=2500)
    budgets = {c["options"].get("max_parse_ms") for c in _children(subs).values()}
    assert budgets == {2500}
    subs = _run(tmp_path, "mini_py.zip", zip_bytes(PY_REPO))
    assert all("max_parse_ms" not in c["options"] for c in _children(subs).values())


STARS_PY = {
    "pkg/__init__.py": b"from .impl import *\n",
    "pkg/impl.py": b"class Mode:\n    ON = 1\n\ndef run():\n    return 1\n",
    "pkg/util.py": b"HELLO = 'hi'\n\ndef helper():\n    return 2\n",
    "app.py": (
        b"from pkg import run, Mode\n"
        b"from pkg.util import *\n"
        b"from pkg import util\n\n"
        b"def main():\n"
        b"    run()\n"  # through pkg/__init__.py's `*`
        b"    helper()\n"  # through this file's own `*`
        b"    util.HELLO.upper()\n"  # a value's method: util defines no HELLO symbol
        b"    Mode.ON.bit_length()\n"  # an enum-style member's method
    ),
}
STARS_RS = {
    "Cargo.toml": b'[package]\nname = "stars"\nversion = "0.1.0"\n',
    "src/lib.rs": b"pub mod shapes;\npub mod errors;\npub mod app;\npub use shapes::*;\n",
    "src/shapes.rs": (
        b"#[derive(Clone, Default)]\npub struct Square(pub u32);\n\n"
        b"impl Square {\n    pub fn new(side: u32) -> Self { Square(side) }\n}\n\n"
        b"pub fn unit() -> Square { Square::new(1) }\n"
    ),
    "src/errors.rs": b"pub enum Error {\n    Io(String),\n    Parse(u32),\n}\n",
    "src/app.rs": (
        b"use crate::{unit, Square};\nuse crate::errors::Error;\n\n"
        b"pub fn run() -> Result<Square, Error> {\n"
        b"    let s = unit();\n"  # `unit` through lib.rs's `pub use shapes::*`
        b"    let t = Square::new(2);\n"
        b"    let u = Square::default();\n"  # derived: shapes.rs defines no `default`
        b"    if t.0 > 1 { return Err(Error::Parse(t.0)); }\n"  # a tuple variant → the enum
        b"    Ok(s)\n}\n"
    ),
}
STARS_TS = {
    "package.json": b'{"name": "stars"}\n',
    "src/index.ts": b"export * from './math';\n",
    "src/math.ts": b"export function add(a: number, b: number) { return a + b; }\n",
    "src/main.ts": (
        b"import { add } from './index';\n\nexport function main() { return add(1, 2); }\n"
    ),
}

COMMONJS = {
    "package.json": b'{"name": "cjs"}\n',
    "lib/util.js": (
        b"function clean(v) { return v.trim(); }\n"
        b"exports.parse = function (v) { return clean(v); };\n"
        b"module.exports.format = (v) => `${v}`;\n"
        b"const isValid = isToken;\n"  # an alias: no symbol of that name
        b"module.exports.clean = clean;\nmodule.exports.isValid = isValid;\n"
    ),
    "lib/main.js": (
        b"const util = require('./util');\n"
        b"const { parse, format: fmt, isValid } = require('./util.js');\n"
        b"const clean = require('./util').clean;\n\n"
        b"function main(v) {\n"
        b"  util.format(parse(v));\n"
        b"  fmt(clean(v));\n"
        b"  return isValid(v);\n"  # util.js defines no function isValid: counted
        b"}\n"
        b"exports.main = main;\n"
    ),
}


def _fan_out(tmp_path: Path, name: str, files: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    """The archive, then every child through the `code` handler: path → its submission."""
    import base64

    from code_worker import handle

    subs = _run(tmp_path, name, zip_bytes(files))
    out = {}
    for path, child in _children(subs).items():
        file = tmp_path / "child"
        file.write_bytes(base64.b64decode(child["contentB64"]))
        [raw] = run_handler(handle, file, format="code", options=child["options"])
        out[path] = json.loads(raw)
    return out


def _cross(projected: dict[str, dict[str, Any]]) -> tuple[set[tuple[str, str]], set[str]]:
    """(caller key, target id) of every cross-file CALLS edge, and every node id."""
    ids = {n["id"] for sub in projected.values() for n in sub["nodes"]}
    edges = set()
    for sub in projected.values():
        for edge in sub["relationships"]:
            if edge["type"] == "CALLS" and edge["properties"].get("cross_file"):
                caller = sub["nodes"][edge["fromRef"]]["id"].partition("#")[2]
                edges.add((caller, edge["toId"]))
    return edges, ids


@pytest.mark.parametrize(
    ("files", "root", "expected", "undefined"),
    [
        (
            STARS_PY,
            "stars_py",
            {("main", "pkg/impl.py#run"), ("main", "pkg/util.py#helper")},
            {"app.py": 2},
        ),
        (
            STARS_RS,
            "stars_rs",
            {
                ("run", "src/shapes.rs#unit"),
                ("run", "src/shapes.rs#Square::new"),
                ("run", "src/errors.rs#Error"),
            },
            {"src/app.rs": 1},
        ),
        (STARS_TS, "stars_ts", {("main", "src/math.ts#add")}, {}),
        (
            COMMONJS,
            "cjs",
            {
                ("main", "lib/util.js#format"),
                ("main", "lib/util.js#parse"),
                ("main", "lib/util.js#clean"),
            },
            {"lib/main.js": 1},
        ),
    ],
    ids=["python", "rust", "typescript", "commonjs"],
)
def test_star_reexports_variants_and_undefined_targets(
    files: dict[str, bytes],
    root: str,
    expected: set[tuple[str, str]],
    undefined: dict[str, int],
    tmp_path: Path,
) -> None:
    """`*` imports and re-exports resolve through the archive's `#`/`*` table entries; a
    Rust tuple variant's call goes to its enum; a call the other file cannot satisfy
    (a derived method, a value's method) is counted, not emitted: every edge heals."""
    projected = _fan_out(tmp_path, f"{root}.zip", files)
    edges, ids = _cross(projected)
    assert edges == {(caller, f"code:sym:{root}/{target}") for caller, target in expected}
    assert all(target in ids for _caller, target in edges)  # every one heals
    counted = {
        path: sub["nodes"][0]["properties"]["calls_to_undefined"]
        for path, sub in projected.items()
        if "calls_to_undefined" in sub["nodes"][0]["properties"]
    }
    assert counted == undefined


def test_names_no_node_id_can_carry_become_hashed_ids_that_still_heal(tmp_path: Path) -> None:
    """A path nested past 512 bytes of id, a member named with a newline, a manifest whose
    name holds a control character and whose dependency is 600 bytes long: each made an
    id the builder refused, and the whole archive ended dead after five `transient`
    attempts. They become hashed ids (ids.py), the same from the archive's CONTAINS edge
    and from the child's own FILE node, so those edges still heal."""
    import blake3

    from code_worker import handle
    from code_worker.ids import file_id

    deep = "/".join(f"nested_folder_{i:02d}" for i in range(40)) + "/deep.py"
    files = {
        deep: b"def f():\n    return 1\n",
        "odd\nname.py": b"def g():\n    return 2\n",
        "plain.py": b"from odd import g\n",
        "package.json": json.dumps(
            {"name": "odd\u0001name", "dependencies": {"x" * 600: "1"}}
        ).encode(),
    }
    subs = _run(tmp_path, "repo.tar.gz", tar_gz(files, prefix="repo/"))
    children = _children(subs)
    assert sorted(children) == sorted(p for p in files if p.endswith(".py"))
    contains = {r.get("toId") for s in subs for r in s["relationships"] if r["type"] == "CONTAINS"}
    [package] = [n for s in subs for n in s["nodes"] if n["labels"] == ["PACKAGE"]]
    assert package["properties"]["name"] == "odd\u0001name"
    assert package["id"].startswith("code:pkg:~")
    [dependency] = [r["toId"] for r in subs[0]["relationships"] if r["type"] == "DEPENDS_ON"]
    assert dependency.startswith("code:pkg:~")
    assert children["odd\nname.py"]["name"].startswith("code:~")  # the core takes no newline
    assert children[deep]["name"] == f"code:repo/{deep}@{blake3.blake3(files[deep]).hexdigest()}"
    for path in (deep, "odd\nname.py"):
        child = children[path]
        source = tmp_path / "child.py"
        source.write_bytes(files[path])
        [raw] = run_handler(handle, source, format="code", options=child["options"])
        check_submissions([raw])
        [file] = [n for n in json.loads(raw)["nodes"] if "FILE" in n["labels"]]
        assert file["id"] == file_id("repo", path)
        assert file["id"].startswith("code:file:~")
        assert file["id"] in contains  # the archive's edge names the child's own node
        assert file["properties"]["path"] == path


def _documents(subs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Child jobs that are not `code`, by the path in their name (doc:<root>/<path>@...)."""
    return {
        c["name"].split("/", 1)[1].rsplit("@", 1)[0]: c
        for s in subs
        for c in s.get("childJobs", [])
        if c["format"] != "code"
    }


_PDF = b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n"
_DOCS_REPO = {
    "pkg/mod.py": b"def f():\n    return 1\n",
    "README": b"A project without an extension on its readme.\n",
    "docs/guide.md": b"# Guide\n\nHow to use it.\n",
    "docs/paper.pdf": _PDF,
    "docs/fake.pdf": b"this is text, not a PDF\n",
    "docs/slides.pptx": b"PK\x03\x04" + b"\x00" * 60,
    "data/table.csv": b"a,b\n1,2\n",
    "data/blob.bin": b"\x00\x01\x02",
}


def test_documents_become_child_jobs_of_their_routed_formats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODE_DOCUMENT_FORMATS", "txt, md,pdf,CSV")
    subs = _run(tmp_path, "proj.zip", zip_bytes(_DOCS_REPO))
    docs = _documents(subs)
    assert {path: c["format"] for path, c in docs.items()} == {
        "README": "txt",
        "docs/guide.md": "md",
        "docs/paper.pdf": "pdf",
        "data/table.csv": "csv",
    }
    import base64

    import blake3

    guide = docs["docs/guide.md"]
    digest = blake3.blake3(_DOCS_REPO["docs/guide.md"]).hexdigest()
    assert guide["name"] == f"doc:proj/docs/guide.md@{digest}"
    assert base64.b64decode(guide["contentB64"]) == _DOCS_REPO["docs/guide.md"]
    assert guide.get("options", {}) == {}
    repo = _repository(subs)
    assert repo["files"] == 1
    assert sorted(_children(subs)) == ["pkg/mod.py"]
    assert repo["documents"] == {"csv": 1, "md": 1, "pdf": 1, "txt": 1}
    # A .pdf that is text is not routed (the name and the bytes disagree); pptx is not a
    # routed format here; a .bin is no document at all.
    assert repo["skipped"] == {"document_bytes_mismatch": 1, "not_source": 2}
    # No CONTAINS edge points at a document: its nodes' ids are the core's.
    contains = {r.get("toId") for s in subs for r in s["relationships"] if r["type"] == "CONTAINS"}
    assert contains == {"code:file:proj/pkg/mod.py"}


@pytest.mark.parametrize("how", ["unset", "option"])
def test_no_documents_unless_the_pool_routes_them(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options: dict[str, Any] = {}
    if how == "unset":
        monkeypatch.delenv("CODE_DOCUMENT_FORMATS", raising=False)
    else:
        monkeypatch.setenv("CODE_DOCUMENT_FORMATS", "txt,md,pdf,csv")
        options["documents"] = False
    subs = _run(tmp_path, "proj.zip", zip_bytes(_DOCS_REPO), **options)
    assert _documents(subs) == {}
    repo = _repository(subs)
    assert "documents" not in repo
    assert repo["skipped"] == {"not_source": 7}


def test_a_document_over_its_limit_is_a_too_large_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODE_DOCUMENT_FORMATS", "pdf,md")
    files = {
        "a.py": b"x = 1\n",
        "big.pdf": b"%PDF-1.4\n" + b"%" * 5000,
        "mid.md": b"# M\n" + b"m" * 3000,
    }
    subs = _run(tmp_path, "r.tar.gz", tar_gz(files), max_file_bytes=1000, max_document_bytes=4000)
    docs = _documents(subs)
    big = docs["big.pdf"]
    assert big["format"] == "pdf"
    assert "contentB64" not in big
    assert big["name"] == "doc:r/big.pdf@5009-bytes"
    assert big["options"]["oversize"] == {
        "bytes": 5009,
        "limit": 4000,
        "what": "max_document_bytes",
    }
    # A document between max_file_bytes and max_document_bytes is read and routed whole.
    assert "contentB64" in docs["mid.md"]
    assert "oversize" not in docs["mid.md"].get("options", {})


_TS_APP = {
    "tsconfig.base.json": b"""{
  // Shared by the apps. A URL is not a comment: https://example.com/x
  "compilerOptions": {
    "baseUrl": ".",
    "paths": {
      "@/*": ["./src/*"],
      "@ui/*": ["./packages/ui/src/*", "./vendor/ui/*"],
      "config": ["./src/config/index.ts"],
    },
  },
}
""",
    "tsconfig.json": b'{"extends": "./tsconfig.base", /* the app */ "include": ["src"]}\n',
    "src/app.ts": (
        b"import { greet } from '@/lib/greet';\n"
        b"import { Button } from '@ui/button';\n"
        b"import { load } from 'config';\n"
        b"import React from 'react';\n"
        b"export function main() { greet(); Button(); load(); }\n"
    ),
    "src/lib/greet.ts": b"export function greet() { return 1; }\n",
    "packages/ui/src/button.tsx": b"export function Button() { return null; }\n",
    "src/config/index.ts": b"export function load() { return {}; }\n",
    # A project of its own, without paths: `@/` is a package there, as tsc would say.
    "tools/tsconfig.json": b'{"compilerOptions": {"strict": true}}\n',
    "tools/run.ts": b"import { greet } from '@/lib/greet';\nexport function run() { greet(); }\n",
}


def test_tsconfig_paths_aliases_resolve_and_their_calls_heal(tmp_path: Path) -> None:
    projected = _fan_out(tmp_path, "web.zip", _TS_APP)
    edges, ids = _cross(projected)
    expected = {
        ("main", "code:sym:web/src/lib/greet.ts#greet"),
        ("main", "code:sym:web/packages/ui/src/button.tsx#Button"),
        ("main", "code:sym:web/src/config/index.ts#load"),
    }
    assert edges == expected
    assert {target for _, target in edges} <= ids  # every one heals
    app = projected["src/app.ts"]["nodes"][0]["properties"]
    assert app["calls_cross_file"] == 3
    imports = {r.get("toId") for r in projected["src/app.ts"]["relationships"]}
    assert "code:file:web/src/lib/greet.ts" in imports
    tools = projected["tools/run.ts"]["nodes"][0]["properties"]
    assert (tools["calls_cross_file"], tools["calls_unresolved"]) == (0, 1)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (b'{"a": 1, // one\n "b": [1, 2,],}', {"a": 1, "b": [1, 2]}),
        (
            b'/* head */ {"u": "http://x//y", "c": "/* kept */"}',
            {"u": "http://x//y", "c": "/* kept */"},
        ),
        (b'\xef\xbb\xbf{"s": "a\\"//b"}', {"s": 'a"//b'}),
    ],
)
def test_tsconfig_is_read_as_json_with_comments(text: bytes, value: object) -> None:
    from code_worker.tsconfig import read_jsonc

    assert read_jsonc(text) == value


def test_a_broken_tsconfig_is_ignored(tmp_path: Path) -> None:
    files = dict(_TS_APP)
    files["tsconfig.base.json"] = b'{"compilerOptions": {"paths": {"@/*": ["./src/*"]}'  # cut
    edges, _ids = _cross(_fan_out(tmp_path, "web.zip", files))
    assert edges == set()  # nothing resolves through a config that cannot be read


def test_a_hostile_tsconfig_is_refused_in_linear_time() -> None:
    from code_worker.tsconfig import read_jsonc

    # 768 KB of comments never closed: each `/*` scanning to the end again would take
    # hours; one that runs to the end leaves nothing, and nothing is not JSON.
    with pytest.raises(ValueError, match="Expecting value"):
        read_jsonc(b"/* " * 256_000)
    with pytest.raises(ValueError, match="over"):
        read_jsonc(b'{"compilerOptions": {}}' + b" " * (1 << 20))
