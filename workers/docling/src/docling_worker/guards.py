"""Cheap checks that run before a converter, for inputs docling's backends would take
minutes or unbounded recursion over (a timeout would be retried; these are permanent).

- HTML nesting: docling's HTML backend walks the tree recursively, and a document nested
  a few hundred elements deep exhausts Python's recursion (slowly: 100,000 levels ran for
  more than five minutes). Depth is measured by a tag scan (void elements and
  self-closing tags do not nest; a closing tag closes back to its opening one).
- Element counts: the Markdown and HTML backends convert about 1,700 blocks a second, so a
  million list items would run for ten minutes. Markdown counts block starts (a non-blank
  line after a blank one, or a list item / heading / quote / table line); HTML counts
  opening tags.
- Text size: a submission's canonical text is capped (the core's `max_text_bytes`), and
  docling's HTML backend takes minutes over tens of megabytes. When the file is larger than
  the cap, its visible text is bounded from below without parsing (non-blank bytes outside
  tags, comments, scripts and styles, an entity counted as one byte); over the cap, the
  document is refused before the conversion, as the submission would be after it.
"""

from __future__ import annotations

import re

from workers_common import SUBMISSION_CAPS, TooLarge, Unsupported

__all__ = ["DEFAULT_MAX_DEPTH", "DEFAULT_MAX_ELEMENTS", "check_html", "check_markdown"]

DEFAULT_MAX_DEPTH = 250
DEFAULT_MAX_ELEMENTS = 200_000

_TAG = re.compile(rb"<(/?)([A-Za-z][A-Za-z0-9:-]{0,40})(?:\s[^<>]*?)?(/?)>")
_VOID = frozenset(b"area base br col embed hr img input link meta param source track wbr".split())
_HIDDEN = re.compile(rb"<!--.*?-->|<(script|style|template)\b.*?</\1\s*>", re.S | re.I)
_ENTITY = re.compile(rb"&#?[A-Za-z0-9]{1,32};")
_BLANK = b" \t\r\n\f\v"
_BLOCK_LINE = re.compile(rb"^[ \t]{0,3}(?:[-*+]|\d{1,9}[.)]|#{1,6}|>|\|)(?:[ \t]|$)", re.M)
_PARAGRAPH_START = re.compile(rb"(?:^|\n)[ \t]*\n[ \t]*\S")


def html_depth(data: bytes, stop_at: int) -> tuple[int, int]:
    """(deepest nesting, opening tags), scanning no further than depth `stop_at`."""
    stack: list[bytes] = []
    deepest = 0
    opened = 0
    for match in _TAG.finditer(data):
        closing, name, self_closing = match.group(1), match.group(2).lower(), match.group(3)
        if closing:
            if name in stack:
                while stack and stack.pop() != name:
                    pass
            continue
        opened += 1
        if self_closing or name in _VOID:
            continue
        stack.append(name)
        deepest = max(deepest, len(stack))
        if deepest > stop_at:
            break
    return deepest, opened


def html_text_floor(data: bytes) -> int:
    """A lower bound on the bytes of visible text in `data` (see the module's notes)."""
    text = _ENTITY.sub(b"&", _TAG.sub(b"", _HIDDEN.sub(b"", data)))
    return len(text) - sum(text.count(bytes([c])) for c in _BLANK)


def check_html(data: bytes, *, max_depth: int, max_elements: int) -> None:
    max_text = SUBMISSION_CAPS["max_text_bytes"]
    # The byte scan reads ASCII-compatible encodings only (UTF-16 has a NUL in every ASCII char).
    ascii_compatible = b"\x00" not in data[:4096]
    if len(data) > max_text and ascii_compatible and (floor := html_text_floor(data)) > max_text:
        raise TooLarge(
            f"HTML has at least {floor} bytes of text, over the core's max_text_bytes={max_text}"
        )
    depth, opened = html_depth(data, max_depth)
    if depth > max_depth:
        raise Unsupported(f"HTML nested more than {max_depth} elements deep (max_depth)")
    if opened > max_elements:
        raise TooLarge(f"HTML has {opened} elements, over max_elements={max_elements}")


def check_markdown(data: bytes, *, max_elements: int) -> None:
    blocks = len(_BLOCK_LINE.findall(data)) + len(_PARAGRAPH_START.findall(data))
    if blocks > max_elements:
        raise TooLarge(f"Markdown has about {blocks} blocks, over max_elements={max_elements}")
