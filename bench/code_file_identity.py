"""bench/code_file_identity: the per-file `code` handler's output, pinned byte for byte.

    .venv/bin/python bench/code_file_identity.py record [--out FILE] [--only NAME …]
    .venv/bin/python bench/code_file_identity.py check  [--out FILE] [--only NAME …]
    .venv/bin/python bench/code_file_identity.py time   [--runs 3]  [--only NAME …]

The per-file twin of bench/code_archive_identity.py: a speed-up of the `code` handler
must not change what it submits. It runs the handler in-process (the conformance kit's
`run_handler`, as bench/code.py's in_process does) on each file of a few corpora this
machine has, sorted by path: the CPython install's .py files (all of them), the first
CARGO_CAP .rs files of ~/.cargo/registry/src, the JavaScript (and node-gyp's C++) of
/usr/lib/node_modules, the first C_CAP C headers of /usr/include, its C++ headers
(/usr/include/c++ has no suffixes: they run with `language: cpp`), the Go and C of
/usr/share, and the `children` of a few real archives (this repository at CHILDREN_REF,
pip, the tokio crate, npm: the archive handler's child jobs, each run with the options
the archive gave it, `resolve` tables included). Each file's result is the blake3 of its
submissions, or the name of the exception it failed with. `record` writes them to a
JSON file outside the repository; `check` recomputes them and names the files that
differ; `time` prints the handler's CPU seconds per corpus (the median of `--runs`; CPU
time, as the machine is shared), timing `handle` alone as the worker's consumer calls it
(the conformance kit's own work, a JSON parse of every submission, left out).
"""

from __future__ import annotations

import argparse
import base64
import importlib
import json
import statistics
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import blake3

REPO = Path(__file__).resolve().parents[1]
# The archive twin of this bench: its loader of bench/ modules and its check of a record.
sys.path.insert(0, str(REPO / "bench"))
archive_identity = importlib.import_module("code_archive_identity")
DEFAULT_OUT = Path(tempfile.gettempdir()) / "codefast-file-baseline.json"
CARGO_CAP = 4000
"""The .rs files at most from the cargo registry (sorted by path)."""
C_CAP = 3000
"""The C headers at most from /usr/include (sorted by path): all 7,000 add little."""
NODE = Path("/usr/lib/node_modules")
NODE_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".cc", ".cpp", ".h")
CHILDREN_REF = "ba7faf23b02829f495cf751d8c1482f0eb238f05"
"""The commit of this repository whose `git archive` gives the `children` corpus."""
SITE = Path(sysconfig.get_paths()["stdlib"]) / "site-packages"
"""The CPython install's site-packages (this script runs in a venv: not its purelib)."""
Corpus = list[tuple[Path, dict[str, object]]]
"""Each file with the options its job gets (root, path, and maybe language or the
archive's `resolve` table)."""


def _files(base: Path, pattern: str, suffixes: tuple[str, ...] = ()) -> list[Path]:
    if not base.is_dir():
        return []
    found = base.rglob(pattern)
    return sorted(
        p
        for p in found
        if (not suffixes or p.suffix in suffixes) and p.is_file() and not p.is_symlink()
    )


def _jobs(base: Path, files: list[Path], **extra: str) -> Corpus:
    return [(p, {"root": "corpus", "path": str(p.relative_to(base)), **extra}) for p in files]


def _code_corpus(name: str, limit: int) -> Corpus:
    base, files = archive_identity.load_bench("code").corpus_files(name, limit)
    return _jobs(base, files) if base.is_dir() else []


def _cpp() -> Corpus:
    base = Path("/usr/include")
    headers = _files(base, "*", (".hpp", ".hh", ".hxx"))
    library = [p for p in _files(base / "c++", "*") if not p.suffix]
    return _jobs(base, headers) + [
        (p, {"root": "corpus", "path": str(p.relative_to(base)), "language": "cpp"})
        for p in library
    ]


_SCRATCH = tempfile.TemporaryDirectory(prefix="codeperf-children-")
"""Where the archives and their children's bytes are written (removed at exit)."""


def _tar_folder(base: Path, out: Path) -> bool:
    """`base`'s files as a plain tar (node_modules/ renamed: the handler skips it)."""
    if not base.is_dir():
        return False
    with tarfile.open(out, "w") as archive:
        for path in _files(base, "*"):
            relative = str(path.relative_to(base)).replace("node_modules", "nm")
            archive.add(path, arcname=f"{base.name}/{relative}", recursive=False)
    return True


def _git_archive(out: Path) -> bool:
    command = ["git", "-C", str(REPO), "archive", "--format=tar", "-o", str(out), CHILDREN_REF]
    return subprocess.run(command, capture_output=True).returncode == 0


def _children() -> Corpus:
    """The `code` child jobs of a few real archives, with the options each archive gave
    its children (root, path, the `resolve` table and layout facts)."""
    from code_worker.archive_handler import handle_archive
    from workers_common.conformance import run_handler

    scratch = Path(_SCRATCH.name)
    makers: dict[str, Callable[[Path], bool]] = {
        "telha": _git_archive,
        "pip": lambda out: _tar_folder(SITE / "pip", out),
        "tokio": lambda out: any(
            _tar_folder(crate, out)
            for crate in sorted((Path.home() / ".cargo/registry/src").glob("*/tokio-1.54.1"))
        ),
        "npm": lambda out: _tar_folder(NODE / "npm", out),
    }
    corpus: Corpus = []
    for name, make in makers.items():
        archive = scratch / f"{name}.tar"
        if not make(archive):
            print(f"children: no {name} archive on this machine", file=sys.stderr)
            continue
        for raw in run_handler(handle_archive, archive, format="code-archive", options={}):
            for child in json.loads(raw).get("childJobs", []):
                if child["format"] != "code" or "contentB64" not in child:
                    continue
                options = child["options"]
                content = scratch / name / str(options["path"])
                content.parent.mkdir(parents=True, exist_ok=True)
                content.write_bytes(base64.b64decode(child["contentB64"]))
                corpus.append((content, options))
    return corpus


CORPORA: dict[str, Callable[[], Corpus]] = {
    "stdlib": lambda: _code_corpus("stdlib", 1_000_000),
    "cargo": lambda: _code_corpus("cargo", CARGO_CAP),
    "node": lambda: _jobs(NODE, _files(NODE, "*", NODE_SUFFIXES)),
    "c": lambda: _jobs(Path("/usr/include"), _files(Path("/usr/include"), "*.h")[:C_CAP]),
    "cpp": _cpp,
    "share": lambda: _jobs(Path("/usr/share"), _files(Path("/usr/share"), "*", (".go", ".c"))),
    "children": _children,
}


def run_one(path: Path, options: dict[str, object]) -> str:
    """The blake3 of the file's submissions, or `!` and the type of its failure."""
    from code_worker import handle
    from workers_common.conformance import run_handler

    try:
        submissions = run_handler(handle, path, format="code", options=options)
    except Exception as error:  # a typed failure is an outcome to pin too
        return "!" + type(error).__name__
    total = blake3.blake3()
    for raw in submissions:
        total.update(len(raw).to_bytes(8, "little"))
        total.update(raw)
    return total.hexdigest()


def run(corpus: Corpus) -> dict[str, str]:
    return {f"{options['root']}/{options['path']}": run_one(p, options) for p, options in corpus}


def cpu_seconds(corpus: Corpus) -> float:
    """The CPU time of `handle` on every file of `corpus`, called as the worker's consumer
    calls it (a typed failure is work done too)."""
    from code_worker import handle
    from workers_common import Job

    jobs = [Job.for_file(path, format="code", options=options) for path, options in corpus]
    started = time.process_time()
    for job in jobs:
        try:
            handle(job)
        except Exception:  # a typed failure is timed like a success
            continue
    return time.process_time() - started


def _compare(name: str, want: dict[str, str], got: dict[str, str]) -> bool:
    differ = [p for p in sorted(set(want) | set(got)) if want.get(p) != got.get(p)]
    if not differ:
        print(f"{name}: identical ({len(got)} files)")
        return True
    print(f"{name}: {len(differ)} of {len(got)} files DIFFERENT")
    for path in differ[:30]:
        print(f"  {path}: {want.get(path)} → {got.get(path)}")
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("record", "check", "time"))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--only", nargs="*", choices=list(CORPORA))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    corpora = {name: make() for name, make in CORPORA.items() if not args.only or name in args.only}
    for name, corpus in list(corpora.items()):
        if not corpus:
            print(f"{name}: not on this machine, skipped", file=sys.stderr)
            del corpora[name]
    if args.command == "time":
        for name, corpus in corpora.items():
            cpu = [cpu_seconds(corpus) for _ in range(args.runs)]
            runs = " ".join(f"{s:.2f}" for s in cpu)
            per_file = statistics.median(cpu) / len(corpus) * 1000
            print(
                f"{name}: {len(corpus)} files, {statistics.median(cpu):.2f} s CPU, "
                f"{per_file:.3f} ms/file (median of {args.runs}: {runs})"
            )
        return 0
    got = {name: run(corpus) for name, corpus in corpora.items()}
    if args.command == "record":
        args.out.write_text(json.dumps(got, indent=0, sort_keys=True))
        for name, found in got.items():
            failed = sum(1 for h in found.values() if h.startswith("!"))
            print(f"{name}: {len(found)} files ({failed} failed typed)")
        print(f"recorded in {args.out}")
        return 0
    want = json.loads(args.out.read_text())
    return 0 if archive_identity.check_recorded(want, got, args.out, _compare) else 1


if __name__ == "__main__":
    sys.exit(main())
