"""Runs the code handler in-process over every file of a folder: crashes, counts, time."""
import collections, json, sys, time
from pathlib import Path
from workers_common.conformance import run_handler
from code_worker import handle
from code_worker.languages import extension_language
root = Path(sys.argv[1]); limit = int(sys.argv[2]) if len(sys.argv) > 2 else 10**9
files = sorted(p for p in root.rglob("*") if p.is_file() and extension_language(p.name))[:limit]
totals = collections.Counter(); failures = collections.Counter(); start = time.perf_counter()
for f in files:
    try:
        [raw] = run_handler(handle, f, format="code", options={"root": "r", "path": str(f.relative_to(root))})
    except Exception as err:
        failures[type(err).__name__ + ": " + str(err)[:80]] += 1; continue
    props = json.loads(raw)["nodes"][0]["properties"]
    totals["files"] += 1
    for k in ("symbols", "calls", "calls_local", "calls_cross_file", "calls_unresolved", "parse_errors", "bytes"):
        totals[k] += props.get(k, 0)
    totals["files_with_parse_errors"] += bool(props.get("parse_errors"))
el = time.perf_counter() - start
print(json.dumps(dict(totals), indent=1)); print("failures", failures.most_common(10)); print(f"{len(files)} files in {el:.1f}s = {len(files)/el:.0f} files/s")
