"""End to end through the real binary: `telha --config <tmp> run --json FILES` with a
tabular pool of real `python -m tabular_worker` processes, as an operator runs it.

What the core reports is checked against the conformance kit's run of the same file: the
job succeeded, its node count, and — for single-submission jobs, whose bytes do not depend
on ids the core assigns — the submission hash byte for byte. The binary is TELHA_BIN or
target/debug/telha; without it these tests skip (TELHA_E2E_REQUIRED=1 makes that a
failure).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from workers_common.conformance import run_handler, submission_hash

from tabular_corpus import BAD, CORPUS, Fixture, day_first_csv, many_rows_csv

REPO_ROOT = Path(__file__).resolve().parents[3]
TELHA_BIN = Path(os.environ.get("TELHA_BIN") or REPO_ROOT / "target" / "debug" / "telha")
_MISSING = not (TELHA_BIN.is_file() and os.access(TELHA_BIN, os.X_OK))
if _MISSING and os.environ.get("TELHA_E2E_REQUIRED") == "1":
    raise RuntimeError(f"TELHA_E2E_REQUIRED=1 but the core binary {TELHA_BIN} does not exist")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(300),
    pytest.mark.skipif(_MISSING, reason=f"core binary {TELHA_BIN} not built (cargo build)"),
]


def _config(root: Path, *, workers: int = 2) -> Path:
    config = root / "supervisor.toml"
    config.write_text(
        "[server]\n"
        'listen = "127.0.0.1:0"\n'
        f'data_dir = "{root / "data"}"\n'
        "[jobs]\n"
        "max_attempts = 2\n"
        "backoff_base_ms = 50\n"
        "backoff_max_ms = 100\n"
        "[pools.tabular]\n"
        'formats = ["csv", "tsv", "xlsx", "xlsb", "xls", "ods", "parquet"]\n'
        f"workers = {workers}\n"
        f'command = ["{sys.executable}", "-m", "tabular_worker"]\n'
        "job_timeout_secs = 240\n"
        "[pools.tabular.limits]\n"
        "memory_mb = 2048\n"
        "cpu_secs = 240\n"
        "open_files = 256\n"
    )
    return config


def telha_run(
    root: Path, files: list[Path], options: dict[str, Any], fmt: str | None = None
) -> list[dict[str, Any]]:
    """`telha run --json` over `files` (`--format fmt` when given: for the file names the
    core does not map to a format yet); the jobs in the order of `files`."""
    args = [str(TELHA_BIN), "--config", str(_config(root)), "run", "--json"]
    if fmt is not None:
        args += ["--format", fmt]
    for key, value in options.items():
        args += ["--option", f"{key}={json.dumps(value)}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TELHA_")}
    done = subprocess.run(
        [*args, *map(str, files)],
        capture_output=True,
        text=True,
        timeout=280,
        env=env,
        check=False,
    )
    try:
        summary = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"telha run exited {done.returncode}:\n{done.stderr[-4000:]}"
        ) from None
    by_name = {Path(job["name"]).name: job for job in summary["jobs"]}
    return [by_name[path.name] for path in files]


def _expected(fixture: Fixture, path: Path, name: str, options: dict[str, Any]) -> list[bytes]:
    return run_handler(
        "tabular_worker:handle", path, format=fixture.format, name=name, options=options
    )


def _groups(fixtures: dict[str, Fixture]) -> dict[tuple[str, str | None], list[str]]:
    """Fixture names by their options and, for names the core cannot map to a format,
    their format: one `telha run` per group."""
    groups: dict[tuple[str, str | None], list[str]] = defaultdict(list)
    for name, fixture in sorted(fixtures.items()):
        fmt = None if fixture.core_knows_format else fixture.format
        groups[json.dumps(fixture.options, sort_keys=True), fmt].append(name)
    return groups


def test_every_golden_file_through_telha_run(tmp_path: Path) -> None:
    """Each corpus file succeeds on its first attempt with the projection the conformance
    kit computes: same node count and the same submission hash (core ids hash as positions)."""
    for index, ((options_json, fmt), names) in enumerate(_groups(CORPUS).items()):
        options = json.loads(options_json)
        root = tmp_path / f"run{index}"
        (root / "in").mkdir(parents=True)
        paths = []
        for name in names:
            paths.append(root / "in" / CORPUS[name].filename)
            paths[-1].write_bytes(CORPUS[name].data)
        jobs = telha_run(root, paths, options, fmt)
        for name, path, job in zip(names, paths, jobs, strict=True):
            assert (job["state"], job["failures"], job["attempts"]) == ("succeeded", [], 0), job
            subs = _expected(CORPUS[name], path, job["name"], options)
            nodes = sum(len(json.loads(raw)["nodes"]) for raw in subs)
            assert job["node_count"] == nodes, name
            assert job["submission_hash"] == submission_hash(subs), name


def test_multi_partial_file_streams_rows_linked_to_one_table(tmp_path: Path) -> None:
    """25,000 rows at 2,000 per partial: thirteen submissions, one job, every row counted;
    the kit's run of the same file shows rows after partial 0 pointing at the TABLE's id."""
    path = tmp_path / "many.csv"
    path.write_bytes(many_rows_csv(25_000))
    options = {"chunk_rows": 2_000}
    [job] = telha_run(tmp_path, [path], options)
    assert (job["state"], job["failures"]) == ("succeeded", []), job
    assert job["node_count"] == 1 + 3 + 25_000
    raws = _expected(Fixture("many.csv", b""), path, job["name"], options)
    assert job["submission_hash"] == submission_hash(raws)  # whatever ids the core handed out
    subs = [json.loads(raw) for raw in raws]
    assert len(subs) == 13
    later = [r for s in subs[1:] for r in s["relationships"]]
    assert {r["fromId"] for r in later} == {"node-0-0"}  # the stand-in core's id of the TABLE


def test_day_first_file_flips_the_ambiguous_column(tmp_path: Path) -> None:
    """The day-first votes decide the ambiguous cells, ambiguities recorded with clarify:
    the core stores exactly the submission whose rows read 03/04/2026 as 3 April."""
    path = tmp_path / "contracts.csv"
    path.write_bytes(day_first_csv(10))
    options = {"clarify": True}
    [job] = telha_run(tmp_path, [path], options)
    assert (job["state"], job["failures"]) == ("succeeded", []), job
    [raw] = _expected(Fixture("contracts.csv", b""), path, job["name"], options)
    assert job["submission_hash"] == submission_hash([raw])
    body = json.loads(raw)
    rows = [n for n in body["nodes"] if n["labels"] == ["ROW"]]
    assert rows[3]["properties"]["effective date"] == "2026-04-03"
    assert len(body["ambiguities"]) == 7


def test_every_bad_input_dead_lettered_with_its_reason(tmp_path: Path) -> None:
    """Each bad input fails once, permanently, with its typed kind and a reason that says
    what was wrong: no retry, no hang, no crash of the worker."""
    bad = {name: fixture for name, (fixture, _, _) in BAD.items()}
    for index, ((options_json, fmt), names) in enumerate(_groups(bad).items()):
        root = tmp_path / f"run{index}"
        (root / "in").mkdir(parents=True)
        paths = []
        for name in names:
            paths.append(root / "in" / bad[name].filename)
            paths[-1].write_bytes(bad[name].data)
        jobs = telha_run(root, paths, json.loads(options_json), fmt)
        for name, job in zip(names, jobs, strict=True):
            _, kind, phrase = BAD[name]
            assert job["state"] == "dead", (name, job)
            [failure] = job["failures"]
            assert (failure["kind"], failure["permanent"]) == (kind, True), (name, failure)
            assert failure["reason"].startswith(f"{kind}: "), name
            assert phrase in failure["reason"], name
