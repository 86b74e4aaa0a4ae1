"""Exit codes: read from the generated WorkerExit enum; what a real worker process exits with."""

from __future__ import annotations

import os
import subprocess
import sys

from workers_common import EXIT_CONFIG, EXIT_OK, EXIT_OOM
from workers_common._proto import telha_pb2
from workers_common.exits import exit_codes


def test_codes_come_from_the_generated_enum() -> None:
    assert (
        telha_pb2.WorkerExit.Value("WORKER_EXIT_OK"),
        telha_pb2.WorkerExit.Value("WORKER_EXIT_CONFIG"),
        telha_pb2.WorkerExit.Value("WORKER_EXIT_OOM"),
    ) == (EXIT_OK, EXIT_CONFIG, EXIT_OOM)


def test_every_row_of_the_table_has_a_constant() -> None:
    """A row added to the proto must get a constant here (and a real-process test)."""
    assert exit_codes() == {"OK": EXIT_OK, "CONFIG": EXIT_CONFIG, "OOM": EXIT_OOM}
    assert (EXIT_OK, EXIT_CONFIG, EXIT_OOM) == (0, 78, 86)


def _run_worker(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TELHA_")}
    return subprocess.run(
        [sys.executable, "-m", "example_worker"],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_missing_environment_exits_config_with_a_clear_message() -> None:
    done = _run_worker({})
    assert done.returncode == EXIT_CONFIG
    assert "TELHA_CORE_ADDR is not set" in done.stderr


def test_format_without_handler_exits_config() -> None:
    done = _run_worker(
        {
            "TELHA_CORE_ADDR": "127.0.0.1:1",
            "TELHA_WORKER_ID": "w1",
            "TELHA_TOKEN": "t",
            "TELHA_FORMATS": "txt,pdf",
        }
    )
    assert done.returncode == EXIT_CONFIG
    assert "pdf" in done.stderr
    assert "no handler" in done.stderr
