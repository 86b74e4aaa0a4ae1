"""Part 1: the core crash loop. Real pools (text, tabular with partials, email with
attachments), a stream of `telha ingest --json` calls, SIGKILL of the core at random
moments, restart on the same data dir; then every acknowledged job is checked."""

from __future__ import annotations

import logging
import random
import re
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from . import inputs
from .core import Core, kill_tagged, real_pools, tagged_pids, telha_bin

log = logging.getLogger("faults.crash")

FINAL = ("succeeded", "dead", "cancelled")
GROUPS: dict[str, tuple[str, ...]] = {
    "txt": (),
    "csv": ("--option", "chunk_rows=40"),
    "eml": (),
}


@dataclass
class Client:
    """What the stream of CLI calls was told."""

    acknowledged: dict[str, str] = field(default_factory=dict)  # job id -> input name
    invocations: int = 0
    failed: int = 0
    failed_inputs: int = 0
    retries: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _ingest_stream(
    core: Core,
    files: dict[str, list[Path]],
    client: Client,
    stop: threading.Event,
    rng: random.Random,
) -> None:
    while not stop.is_set():
        group = rng.choice(list(GROUPS))
        paths = files[group]
        args = ["ingest", *GROUPS[group], *map(str, paths)]
        done = subprocess.run(
            [str(telha_bin()), "--config", str(core.config), "--json", *args],
            capture_output=True,
            timeout=120,
            check=False,
            env={"RUST_LOG": "warn", "PATH": "/usr/bin:/bin"},
        )
        retries = done.stderr.count(b"submitting again")
        with client.lock:
            client.invocations += 1
            client.retries += retries
            out = done.stdout.decode().strip()
            if done.returncode != 0 or not out:
                client.failed += 1
                client.failed_inputs += len(paths)
                client.errors[_first_error(done.stderr)] += 1
                time.sleep(0.1)
                continue
            docs = inputs.as_list(out)
            for doc in docs:
                client.acknowledged[str(doc["id"])] = str(doc["name"])


def _first_error(stderr: bytes) -> str:
    """The CLI's error line without its variable parts (paths, addresses)."""
    lines = [line for line in stderr.decode(errors="replace").splitlines() if "rror" in line]
    line = (lines or [stderr.decode(errors="replace").strip() or "no output"])[-1]
    return re.sub(r"/\S+", "<path>", line.split(": ")[-1])[:120]


@dataclass
class Idempotency:
    """gRPC submissions with fixed keys, sent again around crashes."""

    ids: dict[str, set[str]] = field(default_factory=dict)
    retries: int = 0

    def submit(self, core: Core, key: str) -> None:
        for _ in range(100):
            try:
                job = core.submit(
                    b"idempotent %s\n" % key.encode(), format="txt", name=f"idem-{key}", key=key
                )
                self.ids.setdefault(key, set()).add(job.id)
                return
            except grpc.RpcError:
                self.retries += 1
                time.sleep(0.2)

    def racing(self, core: Core, key: str, delay: float) -> threading.Thread:
        def go() -> None:
            time.sleep(delay)
            self.submit(core, key)

        thread = threading.Thread(target=go, daemon=True)
        thread.start()
        return thread


def clean_hashes(workdir: Path, files: dict[str, list[Path]], run_tag: str) -> dict[str, str]:
    """Submission hash per job name (children too) from one run without crashes."""
    core = Core(
        workdir / "clean", real_pools(), run_tag=f"{run_tag}-clean", jobs={"max_attempts": 10}
    )
    core.start()
    try:
        for group, paths in files.items():
            core.cli("ingest", *GROUPS[group], *map(str, paths))
        _wait_all(core, timeout=300)
        return {j.name: j.submission_hash for j in core.all_jobs() if j.state == "succeeded"}
    finally:
        core.stop()
        kill_tagged(f"{run_tag}-clean")


def _wait_all(core: Core, timeout: float) -> list[Any]:
    deadline = time.monotonic() + timeout
    while True:
        jobs = core.all_jobs()
        if all(j.state in FINAL for j in jobs) or time.monotonic() > deadline:
            return jobs
        time.sleep(0.3)


def run(workdir: Path, rounds: int, rng: random.Random, run_tag: str) -> dict[str, Any]:
    started = time.monotonic()
    files = inputs.crash_inputs(workdir / "inputs")
    clean = clean_hashes(workdir, files, run_tag)
    core = Core(workdir / "crash", real_pools(), run_tag=run_tag, jobs={"max_attempts": 10})
    client = Client()
    idem = Idempotency()
    orphans = 0
    core.start()
    for r in range(rounds):
        stop = threading.Event()
        stream = threading.Thread(
            target=_ingest_stream,
            args=(core, files, client, stop, random.Random(rng.random())),
            daemon=True,
        )
        stream.start()
        for key in list(idem.ids):
            idem.submit(core, key)
        delay = rng.uniform(0.3, 3.0)
        racer = idem.racing(core, f"r{r}", rng.uniform(0, delay))
        time.sleep(delay)
        killed = core.generation
        core.kill9()
        time.sleep(1.0)
        left = tagged_pids(core.tag(killed))
        orphans += len(left)
        if left:
            log.warning("round %d: %d worker processes outlived the core: %s", r, len(left), left)
            kill_tagged(core.tag(killed))
        core.start()
        racer.join(timeout=60)
        stop.set()
        stream.join(timeout=150)
        log.info(
            "round %d/%d: killed after %.2fs; %d acknowledged so far",
            r + 1,
            rounds,
            delay,
            len(client.acknowledged),
        )
    for key in list(idem.ids):
        idem.submit(core, key)
    jobs = _wait_all(core, timeout=600)
    figures = _figures(core, jobs, client, idem, clean, orphans)
    rc = core.stop()
    time.sleep(0.5)
    figures["orphans_after_stop"] = len(tagged_pids(run_tag))
    kill_tagged(run_tag)
    figures["rounds"] = rounds
    figures["serve_exit_on_sigterm"] = rc
    figures["seconds"] = round(time.monotonic() - started, 1)
    return figures


def _figures(
    core: Core,
    jobs: Sequence[Any],
    client: Client,
    idem: Idempotency,
    clean: dict[str, str],
    orphans: int,
) -> dict[str, Any]:
    by_id = {j.id: j for j in jobs}
    acked = client.acknowledged
    lost = [i for i in acked if i not in by_id]
    stuck = [j.id for j in jobs if j.state not in FINAL]
    dead = [j.id for j in jobs if j.state != "succeeded"]
    hashes_equal = sum(
        1 for j in jobs if j.state == "succeeded" and clean.get(j.name) == j.submission_hash
    )
    hashes_compared = sum(1 for j in jobs if j.state == "succeeded" and j.name in clean)
    # A child name is deduplicated per tenant: one job per attachment, however often
    # its parent message is ingested again.
    children = Counter(j.name for j in jobs if j.parents)
    dup_children = sum(n - 1 for n in children.values() if n > 1)
    dup_projection = _duplicated_projections(core, jobs, clean)
    top = [j for j in jobs if not j.parents and not j.name.startswith("idem-")]
    extra = len(top) - len([i for i in acked if i in by_id])
    idem_dups = sum(len(v) - 1 for v in idem.ids.values())
    idem_names = Counter(j.name for j in jobs if j.name.startswith("idem-"))
    return {
        "acknowledged": len(acked),
        "lost": len(lost),
        "stuck": len(stuck),
        "not_succeeded": len(dead),
        "hashes_equal_clean": f"{hashes_equal}/{hashes_compared}",
        "duplicated_projections": dup_projection,
        "duplicated_child_jobs": dup_children,
        "orphan_workers": orphans,
        "cli_invocations": client.invocations,
        "cli_failed_invocations": client.failed,
        "cli_retries_on_unavailable": client.retries,
        "cli_errors": dict(client.errors.most_common(4)),
        "jobs_no_client_was_told_of": extra,
        "inputs_of_failed_invocations": client.failed_inputs,
        "keyed_submissions": len(idem.ids),
        "keyed_retries": idem.retries,
        "keyed_duplicate_jobs": idem_dups + sum(n - 1 for n in idem_names.values() if n > 1),
        "examples": {"lost": lost[:3], "stuck": stuck[:3], "not_succeeded": dead[:3]},
    }


def _duplicated_projections(core: Core, jobs: Sequence[Any], clean: dict[str, str]) -> int:
    """Succeeded jobs whose node count differs from a job of the same input that
    matched the clean hash (a partial applied twice shows up here)."""
    reference: dict[str, int] = {}
    for j in jobs:
        if j.state == "succeeded" and clean.get(j.name) == j.submission_hash:
            reference.setdefault(j.name, j.node_count)
    return sum(
        1
        for j in jobs
        if j.state == "succeeded" and j.name in reference and j.node_count != reference[j.name]
    )
