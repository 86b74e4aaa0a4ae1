#!/usr/bin/env bash
# Builds everything (the telha binary and the Python workers' .venv) and runs the
# main job: `telha run` over the bundled sample corpus, with the pools of
# supervisor.toml. Safe to run again: each run adds its jobs to ./data.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/system-deps.sh
workers/setup-venv.sh
cargo build --locked --quiet
exec target/debug/telha --config supervisor.toml run samples/
