"""The package surface the seed names: importable from the top level, and typed."""

from __future__ import annotations

from importlib import resources

import workers_common


def test_seed_names_are_top_level() -> None:
    for name in [
        "IngestionResultBuilder",
        "normalize_canonical",
        "WorkerConsumer",
        "WorkerFailure",
        "InvalidInput",
        "Unsupported",
        "TooLarge",
        "FetchFailed",
        "HEARTBEAT_INTERVAL_SECS",
    ]:
        assert name in workers_common.__all__
    for name in workers_common.__all__:
        assert getattr(workers_common, name) is not None


def test_ships_py_typed() -> None:
    assert resources.files("workers_common").joinpath("py.typed").is_file()
