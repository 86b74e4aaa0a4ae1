"""Conformance kit: run a worker's handler without a core and check what it would submit.

For a worker package's tests:

    subs = run_handler(handle, path, format="txt")   # the result_json bytes, in seq order
    check_submissions(subs)                          # shape, canonical bytes, spans in bounds
    assert_golden(subs, golden_dir / "x.json")       # TELHA_UPDATE_GOLDEN=1 rewrites it
    check_determinism("pkg.handler:handle", path, format="txt")

`run_handler` goes through the same driver as the consumer, with a stand-in for the core
that accepts everything and hands out node ids in submission order (a node's own `id` when
it has one), so streaming handlers see the same `send()` protocol as in production.
`check_determinism` runs the handler in fresh interpreters under different PYTHONHASHSEED,
TZ and LC_ALL: set iteration order, local time and locale must not leak into the output.

`python -m workers_common.conformance run MODULE:HANDLER FILE --format F` prints a run's
submissions, one base64 line each (what check_determinism reads).
"""

from __future__ import annotations

import argparse
import base64
import difflib
import importlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._proto import wire_rules
from .driver import Handler, drive
from .job import Job
from .rpc import Submitted
from .wire import WIRE_VERSION, canonical_json

__all__ = [
    "DETERMINISM_ENVIRONMENTS",
    "UPDATE_GOLDEN_ENV",
    "assert_golden",
    "check_canonical",
    "check_determinism",
    "check_spans",
    "check_submissions",
    "load_handler",
    "render_golden",
    "run_handler",
    "submission_hash",
]

UPDATE_GOLDEN_ENV = "TELHA_UPDATE_GOLDEN"
"""Set to 1 to (re)write golden files instead of comparing with them."""

DETERMINISM_ENVIRONMENTS: tuple[Mapping[str, str], ...] = (
    {"PYTHONHASHSEED": "0", "TZ": "UTC", "LC_ALL": "C.UTF-8"},
    # +12:45 with daylight saving, a random hash seed and the C locale: as far from the
    # first run as a machine gets.
    {"PYTHONHASHSEED": "2718281828", "TZ": "Pacific/Chatham", "LC_ALL": "C"},
)


def load_handler(spec: str) -> Handler:
    """Imports a handler named `package.module:function`."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"handler spec {spec!r}: want 'package.module:function'")
    handler = getattr(importlib.import_module(module_name), attr)
    if not callable(handler):
        raise TypeError(f"{spec} is not callable")
    handler_fn: Handler = handler
    return handler_fn


def run_handler(
    handler: Handler | str,
    path: str | os.PathLike[str],
    *,
    format: str,
    name: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> list[bytes]:
    """Runs a handler on a file as one job; returns the result_json of every submission.

    Exceptions the handler raises propagate unchanged, so tests can expect typed failures
    with pytest.raises.
    """
    fn = load_handler(handler) if isinstance(handler, str) else handler
    job = Job.for_file(path, format=format, name=name, options=options)
    submitted: list[bytes] = []

    def accept(result_json: bytes) -> Submitted:
        seq = len(submitted)
        submitted.append(result_json)
        nodes = json.loads(result_json).get("nodes", [])
        ids = [node.get("id") or f"node-{seq}-{i}" for i, node in enumerate(nodes)]
        return Submitted(accepted=True, node_ids=ids, reason="")

    drive(fn, job, accept)
    return submitted


# -- checks ----------------------------------------------------------------------------------


def check_canonical(submissions: Sequence[bytes]) -> None:
    """Each submission is exactly the canonical encoding of itself (sorted, compact, UTF-8)."""
    for seq, raw in enumerate(submissions):
        again = canonical_json(json.loads(raw))
        if again != raw:
            raise AssertionError(f"submission {seq} is not canonical JSON (use to_json())")


def _on_boundary(encoded: bytes, local: int) -> bool:
    return local == len(encoded) or (0 <= local < len(encoded) and encoded[local] & 0xC0 != 0x80)


def _check_span(where: str, span: Mapping[str, Any], base: int, encoded: bytes) -> None:
    start, end = span.get("start"), span.get("end")
    where = f"{where} [{start}, {end})"
    if not (isinstance(start, int) and isinstance(end, int) and start < end):
        raise AssertionError(f"{where}: offsets must be ints with start < end")
    if not (base <= start and end <= base + len(encoded)):
        raise AssertionError(f"{where}: outside the text [{base}, {base + len(encoded)}]")
    if not (_on_boundary(encoded, start - base) and _on_boundary(encoded, end - base)):
        raise AssertionError(f"{where}: not on a UTF-8 character boundary")


def check_spans(submissions: Sequence[bytes]) -> None:
    """Every span of every node lies inside the canonical text, on UTF-8 boundaries.

    Offsets are global across partials: partial k's text starts where the texts of
    partials 0..k-1 end, so a span is checked against its own partial's slice.
    """
    base = 0
    for seq, raw in enumerate(submissions):
        sub = json.loads(raw)
        text = sub.get("canonicalText")
        if not isinstance(text, str):
            raise AssertionError(f"submission {seq}: canonicalText is missing")
        if "\r" in text:
            raise AssertionError(f"submission {seq}: canonicalText contains CR (not normalized)")
        encoded = text.encode("utf-8")
        spans = sub.get("spans", [])
        for index, span in enumerate(spans):
            _check_span(f"submission {seq} span {index}", span, base, encoded)
        for index, node in enumerate(sub.get("nodes", [])):
            for ref in node.get("spanRefs", []):
                if not (isinstance(ref, int) and 0 <= ref < len(spans)):
                    raise AssertionError(f"submission {seq} node {index}: span ref {ref!r} missing")
        base += len(encoded)


def _check_refs(seq: int, sub: Mapping[str, Any]) -> None:
    count = len(sub.get("nodes", []))
    refs = [
        (f"relationship {i} {end}", rel.get(f"{end}Ref"))
        for i, rel in enumerate(sub.get("relationships", []))
        for end in ("from", "to")
    ]
    refs += [
        (f"ambiguity {i}", amb.get("nodeRef")) for i, amb in enumerate(sub.get("ambiguities", []))
    ]
    for where, ref in refs:
        if ref is not None and not (isinstance(ref, int) and 0 <= ref < count):
            raise AssertionError(f"submission {seq} {where}: node ref {ref!r} missing")


def check_submissions(submissions: Sequence[bytes]) -> None:
    """All checks: wire version, seq/partial chain, canonical bytes, spans and refs."""
    if not submissions:
        raise AssertionError("the handler submitted nothing")
    check_canonical(submissions)
    check_spans(submissions)
    last = len(submissions) - 1
    for seq, raw in enumerate(submissions):
        sub = json.loads(raw)
        if sub.get("v") != WIRE_VERSION:
            raise AssertionError(f"submission {seq}: v is {sub.get('v')!r}, not {WIRE_VERSION}")
        if sub.get("seq", 0) != seq:
            raise AssertionError(f"submission {seq}: seq is {sub.get('seq')!r}")
        final = not sub.get("partial", False)
        if final != (seq == last):
            raise AssertionError(f"submission {seq}: only the last submission may be final")
        _check_refs(seq, sub)
        _check_caps(seq, sub, len(raw))


# The core's per-submission caps ([graph] defaults, proto/telha/v1/rules.json): a
# submission over one fails its attempt as `protocol`.
_CAPPED_LISTS = {
    "spans": "max_spans",
    "nodes": "max_nodes",
    "relationships": "max_relationships",
    "childJobs": "max_child_jobs",
    "ambiguities": "max_ambiguities",
}


def _check_caps(seq: int, sub: Mapping[str, Any], size: int) -> None:
    text = sub.get("canonicalText", "")
    if isinstance(text, str) and len(text.encode()) > wire_rules.CAPS["max_text_bytes"]:
        raise AssertionError(f"submission {seq}: canonicalText is over [graph].max_text_bytes")
    for key, cap in _CAPPED_LISTS.items():
        if len(sub.get(key, [])) > wire_rules.CAPS[cap]:
            raise AssertionError(f"submission {seq}: {key} is over [graph].{cap}")
    for i, node in enumerate(sub.get("nodes", [])):
        if len(node.get("labels", [])) > wire_rules.CAPS["max_labels_per_node"]:
            raise AssertionError(f"submission {seq}: nodes[{i}] is over max_labels_per_node")
        if len(node.get("spanRefs", [])) > wire_rules.CAPS["max_span_refs_per_node"]:
            raise AssertionError(f"submission {seq}: nodes[{i}] is over max_span_refs_per_node")


# -- golden files ----------------------------------------------------------------------------


def render_golden(submissions: Sequence[bytes]) -> str:
    """The golden-file form: the submissions as one indented JSON array, keys sorted.

    Parsing and re-encoding canonical JSON is lossless, so equal renderings mean equal
    bytes (check_canonical covers the byte form itself)."""
    parsed = [json.loads(raw) for raw in submissions]
    return json.dumps(parsed, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def assert_golden(submissions: Sequence[bytes], golden: str | os.PathLike[str]) -> None:
    """Compares with a golden file, or writes it when TELHA_UPDATE_GOLDEN=1."""
    path = Path(golden)
    rendered = render_golden(submissions)
    if os.environ.get(UPDATE_GOLDEN_ENV) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rendered, encoding="utf-8")
        return
    if not path.exists():
        raise AssertionError(f"golden file {path} is missing; run with {UPDATE_GOLDEN_ENV}=1")
    expected = path.read_text(encoding="utf-8")
    if expected != rendered:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                rendered.splitlines(keepends=True),
                fromfile=str(path),
                tofile="actual",
            )
        )
        raise AssertionError(
            f"output differs from {path} (rerun with {UPDATE_GOLDEN_ENV}=1 if intended):\n{diff}"
        )


# -- determinism -----------------------------------------------------------------------------


def _run_in_subprocess(argv: list[str], env_overrides: Mapping[str, str]) -> list[bytes]:
    env = {**os.environ, **env_overrides}
    env.pop("LANG", None)
    done = subprocess.run(
        [sys.executable, "-m", "workers_common.conformance", "run", *argv],
        env=env,
        capture_output=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"handler run under {dict(env_overrides)} exited {done.returncode}:\n"
            + done.stderr.decode(errors="replace")
        )
    return [base64.b64decode(line) for line in done.stdout.split()]


def check_determinism(
    handler_spec: str,
    path: str | os.PathLike[str],
    *,
    format: str,
    name: str | None = None,
    options: Mapping[str, Any] | None = None,
    environments: Sequence[Mapping[str, str]] = DETERMINISM_ENVIRONMENTS,
) -> list[bytes]:
    """Runs the handler once per environment, each in a fresh interpreter; the bytes must
    match. `handler_spec` must be importable there (`package.module:function`). Returns
    the submissions."""
    argv = [handler_spec, str(Path(path).resolve()), "--format", format]
    if name is not None:
        argv += ["--name", name]
    if options:
        argv += ["--options", json.dumps(dict(options))]
    runs = [_run_in_subprocess(argv, env) for env in environments]
    first = runs[0]
    for env, other in zip(environments[1:], runs[1:], strict=True):
        if other != first:
            diff = "".join(
                difflib.unified_diff(
                    render_golden(first).splitlines(keepends=True),
                    render_golden(other).splitlines(keepends=True),
                    fromfile=str(dict(environments[0])),
                    tofile=str(dict(env)),
                )
            )
            raise AssertionError(f"{handler_spec} is not deterministic:\n{diff}")
    return first


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers_common.conformance")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a handler on a file; print its submissions")
    run.add_argument("handler", help="package.module:function")
    run.add_argument("file", type=Path)
    run.add_argument("--format", required=True)
    run.add_argument("--name")
    run.add_argument("--options", type=json.loads, default=None, help="a JSON object")
    args = parser.parse_args(argv)
    submissions = run_handler(
        args.handler, args.file, format=args.format, name=args.name, options=args.options
    )
    for raw in submissions:
        sys.stdout.write(base64.b64encode(raw).decode("ascii") + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())


def submission_hash(submissions: Sequence[bytes]) -> str:
    """The core's `submission_hash` of a job that sent `submissions` (in `seq` order), as
    the README defines it: blake3 over the hex blake3 of each submission, where every JSON
    string token that is an id the core assigned earlier in the job is replaced by that
    node's position `@<seq>.<index>`. Here the ids are the stand-in core's (`node-S-I`,
    see `run_handler`); the core does the same with its `n<number>` ids, so the hash
    depends on the input bytes only. blake3 is a test dependency, so it is imported here
    rather than by the module."""
    import blake3

    assigned: dict[bytes, bytes] = {}
    digests = []
    for seq, raw in enumerate(submissions):
        digests.append(blake3.blake3(_as_positions(raw, assigned)).hexdigest().encode())
        for index, node in enumerate(json.loads(raw).get("nodes", [])):
            if not node.get("id"):
                assigned[f"node-{seq}-{index}".encode()] = f"@{seq}.{index}".encode()
    return str(blake3.blake3(b"".join(digests)).hexdigest())


def _as_positions(raw: bytes, assigned: Mapping[bytes, bytes]) -> bytes:
    """`raw` with every string token whose text is a key of `assigned` replaced by its value
    (the same scan as the core's `graph::positions::core_refs`: escapes are skipped)."""
    if not assigned:
        return raw
    out, copied, i = bytearray(), 0, 0
    while (i := raw.find(b'"', i)) >= 0:
        j = i + 1
        while j < len(raw) and raw[j] != 0x22:
            j += 2 if raw[j] == 0x5C else 1
        position = assigned.get(raw[i + 1 : j])
        if position is not None:
            out += raw[copied : i + 1] + position
            copied = j
        i = j + 1
    return bytes(out + raw[copied:]) if copied else raw
