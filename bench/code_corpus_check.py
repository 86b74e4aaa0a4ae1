"""The code worker's handler in-process over real code: counts, and the archive heal rate.

    .venv/bin/python bench/code_corpus_check.py DIR [LIMIT]
    .venv/bin/python bench/code_corpus_check.py --archive ARCHIVE [--unhealed N]

The first form runs the `code` handler on every source file under a folder (each file
alone, no resolve table) and prints the totals of the FILE nodes' counts (symbols, calls
by how they resolved, parse errors), the failures by kind, and files/s: a check that real
code (the CPython install, ~/.cargo/registry/src) projects without a crash and with sane
counts.

The second form is the archive's fan-out without the core: `code-archive` on the archive,
then `code` on every child it made (with the child's options and bytes), then the heal
rate: of the cross-file CALLS edges, how many name a symbol some child defines (what the
core heals once every file has landed). It prints the dangling ones by the kind of name
they aim at, and the FILE totals (calls resolved locally, across files, unresolved).
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from code_worker import handle
from code_worker.archive_handler import handle_archive
from code_worker.languages import extension_language
from workers_common.conformance import run_handler

_COUNTS = (
    "symbols",
    "calls",
    "calls_local",
    "calls_cross_file",
    "calls_unresolved",
    "parse_errors",
    "bytes",
)


def folder(root: Path, limit: int) -> None:
    files = sorted(p for p in root.rglob("*") if p.is_file() and extension_language(p.name))
    totals: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    started = time.perf_counter()
    for path in files[:limit]:
        options = {"root": "corpus", "path": str(path.relative_to(root))}
        try:
            [raw] = run_handler(handle, path, format="code", options=options)
        except Exception as err:
            failures[f"{type(err).__name__}: {str(err)[:80]}"] += 1
            continue
        props = json.loads(raw)["nodes"][0]["properties"]
        totals["files"] += 1
        totals.update({key: props.get(key, 0) for key in _COUNTS})
        totals["files_with_parse_errors"] += bool(props.get("parse_errors"))
    elapsed = time.perf_counter() - started
    print(json.dumps(dict(totals), indent=1))
    print("failures", failures.most_common(10))
    done = min(len(files), limit)
    print(f"{done} files in {elapsed:.1f}s = {done / elapsed:.0f} files/s")


def _kind(target: str) -> str:
    """What a dangling edge's member looks like (for the breakdown only)."""
    member = target.partition("#")[2]
    last = re.split(r"::|\.", member)[-1]
    owner = re.split(r"::|\.", member)[-2] if re.search(r"::|\.", member) else ""
    if owner[:1].isupper() and last[:1].isupper():
        return "Type::Variant-like (an enum variant, a nested type)"
    if owner[:1].isupper():
        return "Type::method-like (derived, trait-provided or generated)"
    if last[:1].isupper():
        return "Type-like (a tuple struct, a class)"
    return "function-like"


def archive(path: Path, show: int, dump: Path | None) -> None:
    started = time.perf_counter()
    subs = [json.loads(raw) for raw in run_handler(handle_archive, path, format="code-archive")]
    children = [c for s in subs for c in s.get("childJobs", [])]
    defined: set[str] = set()
    edges: list[tuple[str, str]] = []
    totals: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="heal-") as tmp:
        for i, child in enumerate(children):
            if "contentB64" not in child:
                failures["too_large (no content)"] += 1
                continue
            file = Path(tmp) / f"{i}"
            file.write_bytes(base64.b64decode(child["contentB64"]))
            try:
                [raw] = run_handler(
                    handle, file, format="code", name=child["name"], options=child["options"]
                )
            except Exception as err:
                failures[f"{type(err).__name__}: {str(err)[:60]}"] += 1
                continue
            sub: dict[str, Any] = json.loads(raw)
            nodes = sub["nodes"]
            defined.update(n["id"] for n in nodes if "id" in n)
            props = nodes[0]["properties"]
            totals.update({key: props.get(key, 0) for key in _COUNTS})
            totals["files"] += 1
            for edge in sub["relationships"]:
                if edge["type"] == "CALLS" and edge["properties"].get("cross_file"):
                    source = nodes[edge["fromRef"]]["id"] if "fromRef" in edge else "?"
                    edges.append((source, edge["toId"]))
    elapsed = time.perf_counter() - started
    if dump is not None:
        healed_edges = sorted({f"{s} -> {t}" for s, t in edges if t in defined})
        dump.write_text(json.dumps(healed_edges, indent=0))
    dangling = [(s, t) for s, t in edges if t not in defined]
    healed = len(edges) - len(dangling)
    print(json.dumps(dict(totals), indent=1))
    print("failures", failures.most_common(10))
    share = healed / len(edges) if edges else 1.0
    print(f"cross-file CALLS edges: {len(edges)}, healed {healed} ({share:.1%}), dangling "
          f"{len(dangling)}")
    by_kind = Counter(_kind(t) for _s, t in dangling)
    for kind, count in by_kind.most_common():
        print(f"  dangling {count:5}  {kind}")
    for source, target in sorted(dangling)[:show]:
        print(f"    {source.partition('#')[2] or source}  ->  {target}")
    print(f"{len(children)} children in {elapsed:.1f}s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dir", nargs="?")
    parser.add_argument("limit", nargs="?", type=int, default=10**9)
    parser.add_argument("--archive", type=Path)
    parser.add_argument("--unhealed", type=int, default=30, help="dangling edges to list")
    parser.add_argument("--dump", type=Path, help="write the healed edges here (JSON)")
    args = parser.parse_args()
    if args.archive is not None:
        archive(args.archive, args.unhealed, args.dump)
    elif args.dir:
        folder(Path(args.dir), args.limit)
    else:
        parser.error("give a folder or --archive")


if __name__ == "__main__":
    main()
