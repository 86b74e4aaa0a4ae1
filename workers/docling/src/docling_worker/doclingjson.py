"""DoclingDocument JSON (format `docling`): validated by docling-core itself.

Any schema version docling-core's model loads is accepted (it migrates older layouts on
load). Anything else is `invalid_input` that says what is wrong: not JSON, not an object,
another tool's JSON (no `schema_name: DoclingDocument`), or the first few fields the
schema refuses, by path. The JSON text is parsed by pydantic's Rust parser, whose depth
limit turns a document nested a million deep into a validation error, not a crash.
"""

from __future__ import annotations

import json
import re

from docling_core.types.doc import DoclingDocument
from pydantic import ValidationError

from workers_common import InvalidInput

from .model import Converted, SourceMeta

__all__ = ["load_docling_json"]

_SCHEMA_NAME = "DoclingDocument"
_SHOWN_ERRORS = 3
_NAMED = re.compile(r'"schema_name"\s*:\s*"DoclingDocument"')


def _describe(err: ValidationError) -> str:
    parts = []
    for error in err.errors()[:_SHOWN_ERRORS]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "document"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    more = err.error_count() - _SHOWN_ERRORS
    suffix = f" (and {more} more)" if more > 0 else ""
    return "; ".join(parts) + suffix


def _head(data: bytes) -> str:
    # The schema name is among the first keys docling-core writes; a prefix decides
    # "another tool's JSON" without parsing a huge file twice.
    return data[:4096].decode("utf-8", errors="replace").lstrip()


def load_docling_json(data: bytes) -> Converted:
    """Parses and validates DoclingDocument JSON bytes."""
    head = _head(data)
    if not head.startswith("{"):
        what = "empty" if not head else "not a JSON object"
        raise InvalidInput(f"not a DoclingDocument: the file is {what}")
    try:
        document = DoclingDocument.model_validate_json(data)
    except ValidationError as err:
        if err.errors() and err.errors()[0].get("type") == "json_invalid":
            raise InvalidInput(f"not valid JSON: {_describe(err)}") from err
        name = _schema_name(data)
        if name != _SCHEMA_NAME:
            found = "no schema_name" if name is None else f"schema_name {name!r}"
            raise InvalidInput(
                f"not a DoclingDocument ({found}; want {_SCHEMA_NAME!r}): {_describe(err)}"
            ) from err
        raise InvalidInput(f"DoclingDocument does not validate: {_describe(err)}") from err
    except (IndexError, KeyError, TypeError, AttributeError, RecursionError) as err:
        # docling-core's tree check resolves every reference while validating.
        detail = f"{type(err).__name__}: {str(err)[:200]}"
        raise InvalidInput(f"DoclingDocument has a broken tree ({detail})") from err
    if not _NAMED.search(head) and _schema_name(data) != _SCHEMA_NAME:
        # The model has defaults for almost everything: {"name": "x"} from another tool
        # would validate as an empty document. docling-core always writes the name.
        raise InvalidInput("not a DoclingDocument: no schema_name 'DoclingDocument'")
    return Converted(document, SourceMeta(page_count=len(document.pages) or None))


def _schema_name(data: bytes) -> str | None:
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    name = value.get("schema_name")
    return name if isinstance(name, str) else None
