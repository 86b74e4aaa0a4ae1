"""The text of an RTF message body: Outlook's PR_RTF_COMPRESSED, when a .msg has no plain
or HTML body beside it.

Outlook keeps a body in one of three shapes, and a .msg may carry only the RTF one:

- HTML wrapped in RTF (`\\fromhtml1`): the HTML is taken back out with RTFDE (the
  reader extract-msg uses) and read as any HTML body;
- plain text wrapped in RTF (`\\fromtext`): the text is taken back out the same way;
- native rich text (a message written in Outlook's RTF editor, WordPad, Word): its text
  is read with striprtf, which honours code pages, `\\uN` characters and skips the
  destinations that hold no text (font and colour tables, pictures, fields' codes).

RTFDE parses with a full grammar at roughly 100 KB/s here; wrapped bodies past
`DEENCAPSULATE_MAX_BYTES` are read with striprtf instead, which keeps their text (the
HTML's tags are an ignorable destination) at some cost in structure.
"""

from __future__ import annotations

import logging
import re

from RTFDE.deencapsulate import DeEncapsulator
from striprtf.striprtf import rtf_to_text

from .charsets import clean_text
from .html_text import html_to_text

__all__ = ["DEENCAPSULATE_MAX_BYTES", "rtf_body"]

DEENCAPSULATE_MAX_BYTES = 512 * 1024
"""Wrapped (HTML or text) RTF up to this size is unwrapped exactly; larger is stripped."""

# RTFDE logs every construct it does not know at WARNING; the outcome is on the MESSAGE.
logging.getLogger("RTFDE").setLevel(logging.CRITICAL)

_WRAPPED = re.compile(rb"\\from(?:html|text)")
_CODE_PAGE = re.compile(rb"\\ansicpg(\d{3,5})")


def _code_page(head: bytes) -> str:
    """The RTF's `\\ansicpgN` as a codec name (windows-1252 when absent or unknown)."""
    found = _CODE_PAGE.search(head)
    name = f"cp{int(found.group(1))}" if found else "cp1252"
    try:
        "".encode(name)
    except LookupError:
        return "cp1252"
    return name


def rtf_body(rtf: bytes) -> tuple[str, str, list[str]]:
    """(text, where the text came from, defects) for an uncompressed RTF body.

    Where: `text/html` or `text/plain` for a wrapped body taken back out, `text/rtf` for
    native rich text (or a wrapped body read as such). Never raises on bad input: a body
    that cannot be unwrapped is stripped, with a defect naming why.
    """
    defects: list[str] = []
    head = rtf[:4096]
    if _WRAPPED.search(head):
        if len(rtf) <= DEENCAPSULATE_MAX_BYTES:
            try:
                unwrapped = DeEncapsulator(rtf)
                unwrapped.deencapsulate()
                if unwrapped.content_type == "html" and isinstance(unwrapped.html, bytes):
                    html = unwrapped.html.decode("utf-8", errors="replace")
                    return html_to_text(clean_text(html)), "text/html", defects
                if unwrapped.content_type == "text" and isinstance(unwrapped.text, bytes):
                    text = unwrapped.text.decode("utf-8", errors="replace")
                    return clean_text(text).strip("\n"), "text/plain", defects
            except Exception as err:  # RTFDE raises ValueError/TypeError subclasses and more
                defects.append(f"rtf:unwrap_failed:{type(err).__name__}")
        else:
            defects.append("rtf:unwrap_over_budget")
    code_page = _code_page(head)
    try:
        # Bytes past 7 bits (some writers put them raw instead of as \'xx) are in the
        # document's code page too.
        source = rtf.decode(code_page, errors="replace")
        # striprtf's function is not annotated: str in, str out.
        text = rtf_to_text(source, encoding=code_page, errors="replace")  # type: ignore[no-untyped-call]
    except Exception as err:  # striprtf on a damaged group structure
        defects.append(f"rtf:unreadable:{type(err).__name__}")
        return "", "none", defects
    return _tidy(clean_text(str(text))), "text/rtf", defects


def _tidy(text: str) -> str:
    """striprtf's output with trailing blanks cut and runs of blank lines made one."""
    lines = [line.rstrip() for line in text.split("\n")]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip("\n")
