"""MHTML (`.mht`, `.mhtml`): a web page saved as one file (a browser's "Webpage, single file",
Word's "Single File Web Page"), a MIME message whose root part is the page's HTML and whose
other parts are its images and styles.

The root page is taken out here and read as any HTML file is (same guards, same reader):
the `multipart/related` part's `start` (by Content-ID), else its first part, else a bare
`text/html` message; a `multipart/alternative` root gives its HTML. The part's transfer
encoding is undone; a part that names its charset is decoded with it and handed on as
UTF-8 behind a byte-order mark, which outranks the page's own `<meta charset>` (docling's
MHTML reader re-encodes without one, so a page declaring another charset is decoded twice).
Resources are not read: the projection keeps no pixels.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from email import policy
from email.message import Message
from email.parser import BytesParser

from workers_common import InvalidInput
from workers_common.text import codec_name

__all__ = ["MhtmlPage", "mhtml_page"]

_HEADER_SCAN = 16 * 1024


@dataclass(frozen=True, slots=True)
class MhtmlPage:
    """The archive's root page (bytes for the HTML reader) and where it was saved from."""

    html: bytes
    url: str | None


def mhtml_page(data: bytes) -> MhtmlPage:
    """The root HTML page of an MHTML archive; invalid_input when there is none."""
    head = data[:_HEADER_SCAN].lower().replace(b"\r\n", b"\n")
    if b"content-type:" not in head or b"\n\n" not in head:
        raise InvalidInput("not an MHTML archive: no MIME header")
    message = BytesParser(policy=policy.compat32).parsebytes(data)
    root = _root(message)
    if root is None:
        raise InvalidInput("not an MHTML archive: no HTML page among its parts")
    payload = root.get_payload(decode=True)
    html = payload if isinstance(payload, bytes) else b""
    codec = codec_name(root.get_content_charset())
    if codec is not None and not html.startswith((codecs.BOM_UTF8, b"\xff\xfe", b"\xfe\xff")):
        html = codecs.BOM_UTF8 + html.decode(codec, errors="replace").encode("utf-8")
    return MhtmlPage(html, _saved_from(message, root))


def _root(message: Message) -> Message | None:
    related = next(
        (part for part in message.walk() if part.get_content_type() == "multipart/related"),
        None,
    )
    if related is None:
        return _html_in(message)
    payload = related.get_payload()
    children = [c for c in payload if isinstance(c, Message)] if isinstance(payload, list) else []
    if not children:
        return None
    start = related.get_param("start")
    if isinstance(start, str):
        wanted = start.strip().strip("<>")
        for child in children:
            if str(child.get("Content-ID", "")).strip().strip("<>") == wanted:
                return _html_in(child)
        return None
    return _html_in(children[0])


def _html_in(part: Message) -> Message | None:
    """The text/html of a part: itself, or the HTML one of an alternative."""
    if part.get_content_type() == "text/html":
        return part
    if part.get_content_type() == "multipart/alternative":
        payload = part.get_payload()
        for child in payload if isinstance(payload, list) else []:
            if isinstance(child, Message) and child.get_content_type() == "text/html":
                return child
    return None


def _saved_from(message: Message, root: Message) -> str | None:
    """The page's address: Chrome's Snapshot-Content-Location, else the root's
    Content-Location, when it is a web address."""
    for value in (message.get("Snapshot-Content-Location"), root.get("Content-Location")):
        text = str(value or "").strip()
        if text.lower().startswith(("http://", "https://")):
            return text
    return None
