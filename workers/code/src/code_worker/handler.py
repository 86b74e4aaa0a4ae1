"""The code worker's entry: formats `code` (one source file) and `code-archive`.

Job options of a `code` job (all optional; an archive sets the first four on its
children):

- `root`            the repository name in ids (default: the folder the file is in)
- `path`            the file's path in the repository (default: its file name)
- `resolve`         import → repository path table, computed by the archive worker
- `module`, `crate`, `go_modules`  layout facts the archive worker knows (see README)
- `language`        overrides the language the file name (or a `.h` header's bytes) says
- `max_file_bytes`  refuse a larger file (a notebook: a larger script) as too_large
                    (default 4 MiB)
- `max_notebook_bytes`  refuse a larger Jupyter notebook file as too_large (default 32 MiB)
- `max_parse_ms`    CPU time tree-sitter may spend parsing the file (default 10,000);
                    past it the job fails too_large (permanent)

An archive's options are in archive_handler.py.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from workers_common import Handler, InvalidInput, Job, TooLarge

from .archive_handler import handle_archive
from .languages import content_language, grammar_for, language_for
from .limits import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_NOTEBOOK_BYTES, int_option
from .notebook import is_notebook, notebook_script
from .projection import FileIdentity, project_file
from .source import decode_source

__all__ = ["FORMATS", "HANDLERS", "handle", "identity"]

FORMATS = ("code", "code-archive")


def clean_path(value: str, what: str) -> str:
    """A repository-relative POSIX path; `..` or emptiness is the input's fault."""
    normalized = posixpath.normpath("/" + value.replace("\\", "/")).lstrip("/")
    if not normalized or normalized == "." or ".." in value.replace("\\", "/").split("/"):
        raise InvalidInput(f"{what} {value!r} is not a relative path inside the repository")
    return normalized


def identity(job: Job) -> FileIdentity:
    """Root and path from the options, else from the job's name (an ingested file's path)."""
    name = job.name.replace("\\", "/")
    path_option = job.options.get("path")
    root_option = job.options.get("root")
    path = path_option if isinstance(path_option, str) and path_option else posixpath.basename(name)
    if isinstance(root_option, str) and root_option.strip("/"):
        root = root_option.strip("/")
    else:
        root = posixpath.basename(posixpath.dirname(name)) or "local"
    path = clean_path(path or "unnamed", "path")
    language, _spec = language_for(path, job.options.get("language"))
    return FileIdentity(root, path, language)


def handle(job: Job) -> bytes:
    """Projects one source file (typed failures: too_large, unsupported for binary)."""
    limit = int_option(job.options, "max_file_bytes", DEFAULT_MAX_FILE_BYTES)
    ident = identity(job)
    # A notebook's outputs (plots as base64) are most of its bytes and are not read: the file
    # has its own cap, its script the source file's.
    notebook_file = is_notebook(ident.path)
    what = "max_notebook_bytes" if notebook_file else "max_file_bytes"
    file_limit = (
        int_option(job.options, what, DEFAULT_MAX_NOTEBOOK_BYTES) if notebook_file else limit
    )
    if job.content is not None and job.content.size > file_limit:
        raise TooLarge(f"source file of {job.content.size} bytes is over {what}={file_limit}")
    raw = job.read_bytes()
    given = job.options.get("language")
    chosen = isinstance(given, str) and bool(given.strip())  # the option wins over the bytes
    text, extra = raw, {}
    if notebook_file:
        notebook = notebook_script(raw)
        text = notebook.script
        if len(text) > limit:
            raise TooLarge(
                f"the notebook's script of {len(text)} bytes is over max_file_bytes={limit}"
            )
        extra = {"notebook": {"cells": notebook.cells, "code_cells": notebook.code_cells}}
        if not chosen:
            given = notebook.language
            ident = FileIdentity(ident.root, ident.path, notebook.language)
    elif not chosen:
        given = content_language(ident.path, ident.language, raw)
        ident = FileIdentity(ident.root, ident.path, given)
    source = decode_source(text, python=ident.language == "python")
    _name, spec = language_for(ident.path, given)
    return project_file(grammar_for(spec, text), ident, source, raw, job.options, extra)


HANDLERS: Mapping[str, Handler] = {"code": handle, "code-archive": handle_archive}
