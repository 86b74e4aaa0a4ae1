"""The languages this worker projects, and which one a file name is.

One module per family, each a `Spec` (base.py): its tree-sitter grammar wheel, its query
file (queries/<name>.scm) and its import and call rules.
"""

from __future__ import annotations

from collections.abc import Mapping

from .base import Spec
from .cfamily import CPP, C
from .ecmascript import JAVASCRIPT, TSX, TYPESCRIPT
from .golang import SPEC as GO
from .java import SPEC as JAVA
from .python import SPEC as PYTHON
from .rust import SPEC as RUST

__all__ = ["BY_EXTENSION", "LANGUAGES", "Spec", "language_for"]

LANGUAGES: Mapping[str, Spec] = {
    spec.name: spec for spec in (PYTHON, RUST, JAVASCRIPT, TYPESCRIPT, TSX, GO, JAVA, C, CPP)
}

BY_EXTENSION: Mapping[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".rs": "rust",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
}

_ALIASES = {"py": "python", "js": "javascript", "ts": "typescript", "golang": "go", "c++": "cpp"}


def extension_language(path: str) -> str | None:
    """The language a file name says (None: not a language this worker parses)."""
    name = path.rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    return None if dot <= 0 else BY_EXTENSION.get(name[dot:])


def language_for(path: str, override: object = None) -> tuple[str, Spec | None]:
    """(language name, its spec): the option `language` wins over the file name; a name
    this worker has no grammar for is kept (a FILE node without symbols)."""
    if isinstance(override, str) and override.strip():
        name = override.strip().lower()
        name = _ALIASES.get(name, name)
        return name, LANGUAGES.get(name)
    known = extension_language(path)
    if known is None:
        dot = path.rsplit("/", 1)[-1].rfind(".")
        return (path.rsplit(".", 1)[-1].lower() if dot > 0 else "unknown"), None
    return known, LANGUAGES[known]
