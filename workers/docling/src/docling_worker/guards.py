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
"""

from __future__ import annotations

import re

from workers_common import TooLarge, Unsupported

__all__ = ["DEFAULT_MAX_DEPTH", "DEFAULT_MAX_ELEMENTS", "check_html", "check_markdown"]

DEFAULT_MAX_DEPTH = 250
DEFAULT_MAX_ELEMENTS = 200_000

_TAG = re.compile(rb"<(/?)([A-Za-z][A-Za-z0-9:-]{0,40})(?:\s[^<>]*?)?(/?)>")
_VOID = frozenset(b"area base br col embed hr img input link meta param source track wbr".split())
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


def check_html(data: bytes, *, max_depth: int, max_elements: int) -> None:
    depth, opened = html_depth(data, max_depth)
    if depth > max_depth:
        raise Unsupported(f"HTML nested more than {max_depth} elements deep (max_depth)")
    if opened > max_elements:
        raise TooLarge(f"HTML has {opened} elements, over max_elements={max_elements}")


def check_markdown(data: bytes, *, max_elements: int) -> None:
    blocks = len(_BLOCK_LINE.findall(data)) + len(_PARAGRAPH_START.findall(data))
    if blocks > max_elements:
        raise TooLarge(f"Markdown has about {blocks} blocks, over max_elements={max_elements}")
