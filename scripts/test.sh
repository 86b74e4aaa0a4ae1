#!/usr/bin/env bash
# Builds everything and runs every test: the Rust unit and integration tests (real
# server processes, real gRPC, real redb files, real worker processes) and the Python
# suite (ruff, mypy, pytest, end-to-end against the real binary).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/system-deps.sh
workers/setup-venv.sh
cargo build --locked --all-targets
cargo test --locked --no-fail-fast
# The tabular worker's native xlsx scanner: its own crate and lock (a Python extension).
cargo test --locked --no-fail-fast --manifest-path workers/xlsx/Cargo.toml
TELHA_BIN="$root/target/debug/telha" TELHA_E2E_REQUIRED=1 workers/run-tests.sh
