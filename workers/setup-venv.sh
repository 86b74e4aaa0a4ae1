#!/usr/bin/env bash
# Creates (or brings up to date) .venv/ at the repo root with every worker package of the
# uv workspace installed editable, plus the dev tools (pytest, hypothesis, ruff, mypy,
# grpcio-tools), bytecode compiled; then regenerates the gRPC stubs from proto/.
# Idempotent: a second run changes nothing and takes well under a second.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

python="${PYTHON:-python3}"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "setup-venv: $python is older than 3.11" >&2
    exit 1
}

# uv comes from the Python registry when it is not installed yet.
if command -v uv >/dev/null 2>&1; then
    uv=(uv)
elif "$python" -m uv --version >/dev/null 2>&1; then
    uv=("$python" -m uv)
else
    echo "setup-venv: installing uv with pip" >&2
    "$python" -m pip install --quiet uv
    uv=("$python" -m uv)
fi

# Use this interpreter, never a downloaded one (there is no network for that here), and
# compile bytecode at install: this environment sets PYTHONDONTWRITEBYTECODE, so without
# it every worker start would compile its imports again (NOTES.md).
export UV_PYTHON_DOWNLOADS=never
interpreter="$("$python" -c 'import sys; print(sys.executable)')"
"${uv[@]}" sync --quiet --all-packages --locked --compile-bytecode --python "$interpreter"

# The stubs are committed; this rewrites only the files that differ from proto/.
.venv/bin/python workers/gen_stubs.py
