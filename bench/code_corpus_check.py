"""The code worker's handler in-process over every source file under a folder.

    .venv/bin/python bench/code_corpus_check.py DIR [LIMIT]

Prints the totals of the FILE nodes' counts (symbols, calls by how they resolved, parse
errors), the failures by kind, and files/s: a check that real code (the CPython install,
~/.cargo/registry/src) projects without a crash and with sane counts.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

from code_worker import handle
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


def main() -> None:
    root = Path(sys.argv[1])
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 10**9
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


if __name__ == "__main__":
    main()
