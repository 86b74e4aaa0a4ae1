"""The committed gRPC stubs are exactly what proto/ generates today (stale stubs fail here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parents[3]


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_stubs", REPO_ROOT / "workers" / "gen_stubs.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_stubs", module)
    spec.loader.exec_module(module)
    return module


def test_committed_stubs_match_a_fresh_generation() -> None:
    gen = load_generator()
    fresh: dict[str, bytes] = gen.generate()
    committed: dict[str, bytes] = gen.committed()
    assert sorted(committed) == sorted(fresh)
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"stale stubs {stale}: run .venv/bin/python workers/gen_stubs.py"


def test_stubs_import_package_relative() -> None:
    text = (REPO_ROOT / "workers/common/src/workers_common/_proto/telha_pb2_grpc.py").read_text()
    assert "from . import telha_pb2" in text
    assert "from telha.v1" not in text
