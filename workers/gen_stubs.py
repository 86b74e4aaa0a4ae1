"""Regenerates the Python gRPC stubs of `proto/` into workers_common/_proto/, and
`wire_rules.py` from `proto/telha/v1/rules.json` (the rules both sides of the wire enforce;
the core's build.rs reads the same file).

`proto/` is the one source of truth for the wire; the stubs are committed so a worker
installs without grpcio-tools, and `test_stubs_fresh.py` regenerates them into a temp dir
and fails when the committed ones differ. Run from the repo's venv:

    .venv/bin/python workers/gen_stubs.py          # rewrite the committed stubs if stale
    .venv/bin/python workers/gen_stubs.py --check  # exit 1 if they are stale
"""

from __future__ import annotations

import argparse
import importlib.resources
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = REPO_ROOT / "proto"
PROTO_FILE = "telha/v1/telha.proto"
RULES_FILE = PROTO_ROOT / "telha" / "v1" / "rules.json"
STUB_DIR = REPO_ROOT / "workers" / "common" / "src" / "workers_common" / "_proto"

INIT_TEXT = '''"""Generated gRPC stubs of proto/telha/v1/telha.proto: do not edit.

Regenerate with `.venv/bin/python workers/gen_stubs.py` (setup-venv.sh does it).
"""
'''

# protoc writes an absolute import of the sibling module; the stubs live inside
# workers_common, so it must be package-relative.
ABSOLUTE_IMPORT = "from telha.v1 import telha_pb2 as"
RELATIVE_IMPORT = "from . import telha_pb2 as"


def generate() -> dict[str, bytes]:
    """Returns the stub files (name -> bytes) generated from proto/ right now."""
    from grpc_tools import protoc  # dev-only dependency: imported here, not at module level

    well_known = importlib.resources.files("grpc_tools") / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        argv = [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"-I{well_known}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            f"--grpc_python_out={out}",
            str(PROTO_ROOT / PROTO_FILE),
        ]
        if protoc.main(argv) != 0:
            raise RuntimeError(f"protoc failed on {PROTO_FILE}")
        generated = out / Path(PROTO_FILE).parent
        files = {p.name: p.read_bytes() for p in sorted(generated.iterdir()) if p.is_file()}
    grpc_name = "telha_pb2_grpc.py"
    text = files[grpc_name].decode()
    if ABSOLUTE_IMPORT not in text:
        raise RuntimeError(f"{grpc_name}: expected import {ABSOLUTE_IMPORT!r} not found")
    files[grpc_name] = text.replace(ABSOLUTE_IMPORT, RELATIVE_IMPORT).encode()
    files["__init__.py"] = INIT_TEXT.encode()
    files["wire_rules.py"] = wire_rules().encode()
    return files


def wire_rules() -> str:
    """The Python form of rules.json: one constant per rule."""
    import json

    rules = json.loads(RULES_FILE.read_text(encoding="utf-8"))
    lines = [
        '"""Generated from proto/telha/v1/rules.json by workers/gen_stubs.py: do not edit.',
        "",
        "The rules a wire v1 submission must pass, enforced by the core's validator and by",
        "workers_common (the builder, the failure taxonomy, the conformance kit).",
        '"""',
        "",
        "FAILURE_KINDS: tuple[tuple[str, bool, str], ...] = (",
    ]
    for k in rules["failure_kinds"]:
        lines.append(f"    ({k['kind']!r}, {k['permanent']!r}, {k['raised_by']!r}),")
    lines.append(')\n"""(kind, permanent by default, raised by), in the taxonomy\'s order."""')
    for key, value in rules.items():
        if key in {"_doc", "failure_kinds", "caps"}:
            continue
        lines.append(f"{key.upper()} = {value!r}")
    lines.append("CAPS: dict[str, int] = {")
    lines.extend(f"    {k!r}: {v!r}," for k, v in rules["caps"].items())
    lines.append("}")
    lines.append('"""Per-submission caps by `[graph]` key (the core\'s defaults)."""')
    return "\n".join(lines) + "\n"


def committed() -> dict[str, bytes]:
    """Returns the stub files as they are in the work tree."""
    if not STUB_DIR.is_dir():
        return {}
    return {
        p.name: p.read_bytes()
        for p in sorted(STUB_DIR.iterdir())
        if p.is_file() and p.suffix in {".py", ".pyi"}
    }


def write(files: dict[str, bytes]) -> list[str]:
    """Writes the files that differ (only those, so mtimes stay put); returns their names."""
    STUB_DIR.mkdir(parents=True, exist_ok=True)
    current = committed()
    changed = [name for name, data in files.items() if current.get(name) != data]
    for name in changed:
        (STUB_DIR / name).write_bytes(files[name])
    for name in sorted(set(current) - set(files)):
        (STUB_DIR / name).unlink()
        changed.append(name)
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].lstrip("/ "))
    parser.add_argument("--check", action="store_true", help="only report whether stale")
    args = parser.parse_args()
    files = generate()
    if args.check:
        current = committed()
        stale = sorted(n for n in set(files) | set(current) if files.get(n) != current.get(n))
        if stale:
            print(f"stale gRPC stubs: {', '.join(stale)}", file=sys.stderr)
            return 1
        return 0
    for name in write(files):
        print(f"regenerated {STUB_DIR.relative_to(REPO_ROOT) / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
