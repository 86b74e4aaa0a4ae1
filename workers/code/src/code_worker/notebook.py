"""A Jupyter notebook (`.ipynb`) as the script it holds, in the "percent" format Jupytext,
VS Code and Spyder read: each cell opens with a `# %%` line (`# %% [markdown]` for a
Markdown cell, whose lines follow as comments), then its source. Outputs are left out.

The FILE's canonical text is that script, so spans and symbols point into it and a
notebook's functions, classes, imports and calls are projected as a module's are. The
FILE's `bytes` and `blake3` are the notebook file's own. Lines an IPython kernel reads
itself (`%matplotlib inline`, `%%time`, `!pip install x`) are not Python: they are written
commented out, as Jupytext writes them, so that they do not count as parse errors.

The language is the notebook's (`metadata.kernelspec.language`, else
`metadata.language_info.name`; Python when neither says): an R or Julia notebook is a
FILE over its script with no symbols, as an R or Julia file is. nbformat 4 and the
older 3 (cells under `worksheets`, code in `input`) are read; anything else is
invalid_input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workers_common import InvalidInput

__all__ = ["Notebook", "is_notebook", "notebook_script"]

_MAGIC_STARTS = ("%", "!")
_HASH_COMMENTS = frozenset({"python", "r", "julia", "ruby", "shell", "bash", "perl", "powershell"})


@dataclass(frozen=True, slots=True)
class Notebook:
    script: bytes
    """The cells as a percent-format script, UTF-8."""
    language: str
    cells: int
    code_cells: int


def is_notebook(path: str) -> bool:
    return path.lower().endswith(".ipynb")


def notebook_script(data: bytes) -> Notebook:
    """The notebook's script (see the module's notes); invalid_input when it is not one."""
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise InvalidInput(f"not a Jupyter notebook: {str(err)[:200]}") from None
    if not isinstance(document, dict):
        raise InvalidInput("not a Jupyter notebook: its JSON is not an object")
    cells = _cells(document)
    language = _language(document.get("metadata"))
    comment = "#" if language in _HASH_COMMENTS else "//"
    parts: list[str] = []
    code_cells = 0
    for cell in cells:
        kind = cell.get("cell_type")
        source = _text(cell.get("source", cell.get("input", "")))
        if kind == "code":
            code_cells += 1
            body = _quiet_magics(source, comment) if language == "python" else source
            parts.append(f"{comment} %%\n{body}")
        elif kind in ("markdown", "raw", "heading"):
            lines = [f"{comment} {line}".rstrip() for line in source.split("\n")]
            parts.append(f"{comment} %% [{kind}]\n" + "\n".join(lines))
    script = "\n\n".join(part.rstrip("\n") for part in parts)
    return Notebook(
        (script + "\n").encode("utf-8") if script else b"", language, len(cells), code_cells
    )


def _cells(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    cells = document.get("cells")
    if cells is None:  # nbformat 3: one worksheet (in practice) holding the cells
        sheets = document.get("worksheets")
        if isinstance(sheets, list):
            cells = [
                c for sheet in sheets if isinstance(sheet, dict) for c in sheet.get("cells", [])
            ]
    if not isinstance(cells, list):
        raise InvalidInput("not a Jupyter notebook: no list of cells")
    return [cell for cell in cells if isinstance(cell, dict)]


def _text(source: object) -> str:
    """A cell's source: one string, or the list of its lines (each with its newline)."""
    if isinstance(source, str):
        return source
    if isinstance(source, Sequence):
        return "".join(line for line in source if isinstance(line, str))
    return ""


def _language(metadata: object) -> str:
    if not isinstance(metadata, dict):
        return "python"
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        section = metadata.get(key)
        if isinstance(section, dict):
            value = section.get(field)
            if isinstance(value, str) and value.strip():
                return value.strip().lower()
    return "python"


def _quiet_magics(source: str, comment: str) -> str:
    lines = source.split("\n")
    if lines and lines[0].startswith("%%"):  # a cell magic: the whole cell is the kernel's
        return "\n".join(f"{comment} {line}".rstrip() for line in lines)
    # Only at the start of a line: an indented `%` may continue an expression (`a\n    % b`).
    return "\n".join(
        f"{comment} {line}" if line.startswith(_MAGIC_STARTS) else line for line in lines
    )
