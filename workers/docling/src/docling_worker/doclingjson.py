"""JSON files (format `docling`): a DoclingDocument, else any JSON as a document.

A file whose top-level object says `"schema_name": "DoclingDocument"` is validated by
docling-core itself: any schema version its model loads is accepted (it migrates older
layouts on load), and one it refuses is `invalid_input` naming the first few fields the
schema refuses, by path. Its JSON text is parsed by pydantic's Rust parser, whose depth
limit turns a document nested a million deep into a validation error, not a crash.

Any other JSON (another tool's export, a configuration, an API response) is laid out as
a document by `jsondoc`. Text that is not JSON is `invalid_input`.
"""

from __future__ import annotations

import re

from docling_core.types.doc import DoclingDocument
from pydantic import ValidationError

from workers_common import InvalidInput

from .jsondoc import json_document, parse_json
from .model import Converted, SourceMeta

__all__ = ["load_docling_json"]

_SCHEMA_NAME = "DoclingDocument"
_SHOWN_ERRORS = 3
_NAMED = re.compile(r'^\{\s*"schema_name"\s*:\s*"DoclingDocument"')


def _describe(err: ValidationError) -> str:
    parts = []
    for error in err.errors()[:_SHOWN_ERRORS]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "document"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    more = err.error_count() - _SHOWN_ERRORS
    suffix = f" (and {more} more)" if more > 0 else ""
    return "; ".join(parts) + suffix


def _head(data: bytes) -> str:
    return data[:4096].decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")


def load_docling_json(data: bytes, *, name: str, max_elements: int) -> Converted:
    """A DoclingDocument from JSON bytes: validated when the file is one, else laid out."""
    head = _head(data)
    if not head:
        raise InvalidInput("not JSON: the file is empty")
    # docling-core writes schema_name first: such a file goes straight to pydantic's
    # parser (whose depth limit also guards what json.loads would recurse into).
    if _NAMED.match(head):
        return _docling_document(data)
    value = parse_json(data)
    if isinstance(value, dict) and value.get("schema_name") == _SCHEMA_NAME:
        return _docling_document(data)
    return json_document(value, name=name, max_elements=max_elements)


def _docling_document(data: bytes) -> Converted:
    try:
        document = DoclingDocument.model_validate_json(data)
    except ValidationError as err:
        if err.errors() and err.errors()[0].get("type") == "json_invalid":
            raise InvalidInput(f"not valid JSON: {_describe(err)}") from err
        raise InvalidInput(f"DoclingDocument does not validate: {_describe(err)}") from err
    except (IndexError, KeyError, TypeError, AttributeError, RecursionError) as err:
        # docling-core's tree check resolves every reference while validating.
        detail = f"{type(err).__name__}: {str(err)[:200]}"
        raise InvalidInput(f"DoclingDocument has a broken tree ({detail})") from err
    return Converted(document, SourceMeta(page_count=len(document.pages) or None))
