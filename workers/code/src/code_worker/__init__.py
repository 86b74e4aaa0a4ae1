"""code_worker: source files and repository archives → FILE, symbols, IMPORTS, CALLS.

Modules, one role each:

- handler          formats `code` and `code-archive`; a file's root and path
- source           bytes → canonical text (binary refused, bad bytes counted)
- languages/       one module per language family: grammar, query file, import/call rules
- symbols          the engine: parse, definitions in scopes, calls resolved
- projection       a file's model → FILE, symbol nodes, DEFINES, IMPORTS, CALLS
- archive          reading zip/tar members safely into memory
- repository       an archive's files → filters, resolve tables, child jobs
- manifests        Cargo.toml, pyproject.toml, package.json, go.mod → PACKAGE nodes
- archive_handler  the `code-archive` job
- limits           caps and their options
"""

from .handler import FORMATS, HANDLERS, handle

__all__ = ["FORMATS", "HANDLERS", "handle"]
