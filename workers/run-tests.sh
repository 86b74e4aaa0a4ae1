#!/usr/bin/env bash
# Lints, type-checks and tests every worker package from the repo root's .venv
# (run workers/setup-venv.sh first). Extra arguments go to pytest, e.g. `-k builder`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bin=.venv/bin
[[ -x $bin/python ]] || { echo "run-tests: no .venv; run workers/setup-venv.sh" >&2; exit 1; }

$bin/ruff check workers
$bin/ruff format --check workers
$bin/mypy workers/common/src workers/example/src workers/email/src workers/tabular/src \
    workers/common/tests workers/example/tests workers/email/tests workers/tabular/tests \
    workers/docling/src workers/docling/tests workers/web/src workers/web/tests
$bin/python workers/gen_stubs.py --check
$bin/pytest "$@"
