"""bench/code_archive_identity: the `code-archive` handler's output, pinned byte for byte.

    .venv/bin/python bench/code_archive_identity.py record [--out FILE] [--only NAME …]
    .venv/bin/python bench/code_archive_identity.py check  [--out FILE] [--only NAME …]
    .venv/bin/python bench/code_archive_identity.py time   [--runs 3]  [--only NAME …]

A speed-up of the archive handler must not change what it submits. This builds a few
archives in a temporary folder (the CPython stdlib's .py files and the .rs files under
~/.cargo/registry/src as bench/code.py builds them; `git archive HEAD` of this repository;
the JavaScript of /usr/lib/node_modules when present), runs the handler in-process on
each through the conformance kit's `run_handler`, and hashes every submission's bytes.
`record` writes the hashes (and one hash per child's options, to point at what changed)
to a JSON file outside the repository; `check` recomputes them and compares; `time`
prints the handler's seconds per archive (the median of `--runs`).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import blake3

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = Path(tempfile.gettempdir()) / "archfast-baseline.json"
CARGO_CAP = 6000
"""The .rs files at most from the cargo registry (sorted by path)."""
JS_ROOTS = (Path("/usr/lib/node_modules"), Path("/usr/share/nodejs"))
JS_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".mts", ".cts")


def load_bench(name: str) -> ModuleType:
    """bench/<name>.py as a module (bench/code.py's name is the stdlib's `code` too)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "bench" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stdlib(out: Path) -> bool:
    code = load_bench("code")
    base, files = code.corpus_files("stdlib", 1_000_000)
    code.build_archive(base, files, out)
    return True


def _cargo(out: Path) -> bool:
    if not (Path.home() / ".cargo" / "registry" / "src").is_dir():
        return False
    code = load_bench("code")
    base, files = code.corpus_files("cargo", CARGO_CAP)
    if not files:
        return False
    code.build_archive(base, files, out)
    return True


GIT_REF = "HEAD"
"""The commit `git archive` takes: `record` resolves HEAD and keeps it, `check` reuses it."""


def _git(out: Path) -> bool:
    subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", "-o", str(out), GIT_REF], check=True
    )
    return True


def _js(out: Path) -> bool:
    for base in JS_ROOTS:
        if not base.is_dir():
            continue
        files = sorted(
            p
            for p in base.rglob("*")
            if p.suffix in JS_SUFFIXES and p.is_file() and not p.is_symlink()
        )
        if files:
            with tarfile.open(out, "w:gz", compresslevel=1) as archive:
                for path in files:
                    data = path.read_bytes()
                    # Renamed: the handler skips node_modules/ by default.
                    relative = str(path.relative_to(base)).replace("node_modules", "nm")
                    info = tarfile.TarInfo("js/" + relative)
                    info.size = len(data)
                    archive.addfile(info, io.BytesIO(data))
            return True
    return False


CORPORA: dict[str, tuple[str, Callable[[Path], bool]]] = {
    "stdlib": ("stdlib.tar.gz", _stdlib),
    "cargo": ("cargo.tar.gz", _cargo),
    "git": ("telha.tar", _git),
    "js": ("js.tar.gz", _js),
}


def build(folder: Path, only: list[str] | None, reuse: bool) -> dict[str, Path]:
    """The archives this machine has, by corpus name (`reuse`: one already built in
    `folder` is taken as it is)."""
    built = {}
    for name, (file, make) in CORPORA.items():
        if only and name not in only:
            continue
        path = folder / file
        if (reuse and path.is_file()) or make(path):
            built[name] = path
        else:
            print(f"{name}: not on this machine, skipped", file=sys.stderr)
    return built


def run(path: Path) -> list[bytes]:
    from code_worker.archive_handler import handle_archive
    from workers_common.conformance import run_handler

    return run_handler(handle_archive, path, format="code-archive", options={})


def fingerprint(submissions: list[bytes]) -> dict[str, object]:
    """The hash of every submission, of them all, and of each child's options."""
    children: dict[str, str] = {}
    for raw in submissions:
        for child in json.loads(raw).get("childJobs", []):
            options = json.dumps(child.get("options", {}), sort_keys=True).encode()
            children[child["name"]] = blake3.blake3(options).hexdigest()
    total = blake3.blake3()
    for raw in submissions:
        total.update(len(raw).to_bytes(8, "little"))
        total.update(raw)
    return {
        "all": total.hexdigest(),
        "submissions": [blake3.blake3(raw).hexdigest() for raw in submissions],
        "children": children,
    }


def _compare(name: str, want: dict[str, object], got: dict[str, object]) -> bool:
    if want["all"] == got["all"]:
        print(f"{name}: identical ({len(got['submissions'])} submissions)")  # type: ignore[arg-type]
        return True
    print(f"{name}: DIFFERENT")
    want_children = want["children"]
    got_children = got["children"]
    assert isinstance(want_children, dict)
    assert isinstance(got_children, dict)
    if list(want_children) != list(got_children):
        print(f"  children differ in names or order ({len(want_children)} → {len(got_children)})")
    changed = [c for c, h in want_children.items() if got_children.get(c, h) != h]
    for child in changed[:20]:
        print(f"  options changed: {child}")
    if not changed:
        print(f"  submissions: {want['submissions']} → {got['submissions']}")
    return False


def check_recorded(
    want: dict[str, Any], got: dict[str, Any], out: Path, compare: Callable[[str, Any, Any], bool]
) -> bool:
    """Compares each corpus found now with the one recorded in `out` (`compare` prints
    what differs); True when every one is recorded and the same."""
    ok = True
    for name, found in got.items():
        if name not in want:
            print(f"{name}: not recorded in {out}")
            ok = False
        else:
            ok = compare(name, want[name], found) and ok
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("record", "check", "time"))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--only", nargs="*", choices=list(CORPORA))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--keep", type=Path, help="build the archives here and keep them (reused when there)"
    )
    args = parser.parse_args()
    global GIT_REF
    want = json.loads(args.out.read_text()) if args.command == "check" else {}
    GIT_REF = (
        want.get("git_commit")
        or subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    with tempfile.TemporaryDirectory(prefix="archfast-") as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        archives = build(folder, args.only, args.keep is not None)
        if args.command == "time":
            for name, path in archives.items():
                seconds, cpu = [], []
                for _ in range(args.runs):
                    started, started_cpu = time.perf_counter(), time.process_time()
                    run(path)
                    seconds.append(time.perf_counter() - started)
                    cpu.append(time.process_time() - started_cpu)
                runs = " ".join(f"{s:.2f}" for s in seconds)
                # The CPU time is the steadier number on a shared machine.
                print(
                    f"{name}: {statistics.median(seconds):.2f} s wall, "
                    f"{statistics.median(cpu):.2f} s CPU (median of {args.runs}: {runs})"
                )
            return 0
        got = {name: fingerprint(run(path)) for name, path in archives.items()}
        if args.command == "record":
            args.out.write_text(json.dumps({"git_commit": GIT_REF, **got}, indent=1))
            for name, found in got.items():
                print(f"{name}: {found['all']} ({len(found['children'])} children)")  # type: ignore[arg-type]
            print(f"recorded in {args.out}")
            return 0
        return 0 if check_recorded(want, got, args.out, _compare) else 1


if __name__ == "__main__":
    sys.exit(main())
