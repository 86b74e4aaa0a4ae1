#!/usr/bin/env bash
# Lints, type-checks and tests every worker package (and lints the fault suite, bench/faults) from the repo root's .venv
# (run workers/setup-venv.sh first). Extra arguments go to pytest, e.g. `-k builder`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bin=.venv/bin
[[ -x $bin/python ]] || { echo "run-tests: no .venv; run workers/setup-venv.sh" >&2; exit 1; }

$bin/ruff check workers bench/faults
$bin/ruff format --check workers bench/faults
# workers/xlsx is a Rust crate (its src/ holds .rs files): its Python face is its stub.
typed=()
for dir in workers/*/src workers/*/tests; do
    [[ $dir == workers/xlsx/* ]] || typed+=("$dir")
done
$bin/mypy "${typed[@]}" workers/xlsx/telha_xlsx.pyi bench/faults
$bin/python workers/gen_stubs.py --check
$bin/pytest "$@"
