"""Cheap checks that run before a converter, for inputs docling's backends would take
minutes or unbounded recursion over (a timeout would be retried; these are permanent).

- HTML nesting: docling's HTML backend walks the tree recursively, and a document nested
  a few hundred elements deep exhausts Python's recursion (slowly: 100,000 levels ran for
  more than five minutes). Depth is measured by a tag scan (void elements and
  self-closing tags do not nest; a closing tag closes back to its opening one; an opening
  `li`, `dt`, `dd`, `td`, `th` or `tr` closes the one its end tag was left out of, as
  docling's backend does before it walks the tree).
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
from dataclasses import dataclass

from workers_common import SUBMISSION_CAPS, TooLarge, Unsupported

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_ELEMENTS",
    "HtmlShape",
    "check_html",
    "check_markdown",
    "html_shape",
]

DEFAULT_MAX_DEPTH = 250
DEFAULT_MAX_ELEMENTS = 200_000

_TAG = re.compile(rb"<(/?)([A-Za-z][A-Za-z0-9:-]{0,40})(?:\s[^<>]*?)?(/?)>")
# Word's downlevel-revealed conditionals (`<![if !vml]>`, `<![endif]>`): bogus comments in
# HTML's rules, markers around content that is read.
_REVEALED = rb"<!\[(?:if\b[^>]{0,200}|endif\s*)\]>"
_MARK = re.compile(b"<!--|" + _REVEALED + b"|" + _TAG.pattern, re.I)
_RAW_TEXT = {
    # Elements whose content is text up to their own end tag, whatever `<` it holds.
    name: re.compile(rb"</" + name + rb"\s*>", re.I)
    for name in (b"script", b"style", b"textarea", b"title", b"xmp")
}
_VOID = frozenset(b"area base br col embed hr img input link meta param source track wbr".split())
_IMPLIED: dict[bytes, tuple[frozenset[bytes], frozenset[bytes]]] = {
    # An opening tag → (the open elements it closes, the ones that stop the search): the
    # optional end tags docling's HTML backend closes after parsing, as a browser does
    # (`<li>a<li>b` is two items, not one inside the other). Generated reports and older
    # pages leave them out by the thousand.
    b"li": (frozenset({b"li"}), frozenset({b"ul", b"ol", b"menu"})),
    b"dt": (frozenset({b"dt", b"dd"}), frozenset({b"dl"})),
    b"dd": (frozenset({b"dt", b"dd"}), frozenset({b"dl"})),
    b"td": (frozenset({b"td", b"th"}), frozenset({b"tr", b"table"})),
    b"th": (frozenset({b"td", b"th"}), frozenset({b"tr", b"table"})),
    b"tr": (
        frozenset({b"tr", b"td", b"th"}),
        frozenset({b"table", b"thead", b"tbody", b"tfoot"}),
    ),
}
_HIDDEN = re.compile(rb"<!--.*?-->|<(script|style|template)\b.*?</\1\s*>", re.S | re.I)
_ENTITY = re.compile(rb"&#?[A-Za-z0-9]{1,32};")
_BLANK = b" \t\r\n\f\v"
_BLOCK_LINE = re.compile(rb"^[ \t]{0,3}(?:[-*+]|\d{1,9}[.)]|#{1,6}|>|\|)(?:[ \t]|$)", re.M)
_PARAGRAPH_START = re.compile(rb"(?:^|\n)[ \t]*\n[ \t]*\S")


def _close_implied(stack: list[bytes], name: bytes) -> list[bytes]:
    """Pops what an opening `name` closes by HTML's optional end tags (`_IMPLIED`): the
    elements closed, innermost first (none when a list, table or `dl` boundary comes first).
    The stack is at most `max_depth` deep: each tag costs at most that."""
    closes, stops = _IMPLIED[name]
    outermost = len(stack)
    for index in range(len(stack) - 1, -1, -1):
        if stack[index] in stops:
            break
        if stack[index] in closes:  # `<tr>` closes the open `td` and the `tr` around it
            outermost = index
    closed = stack[outermost:]
    del stack[outermost:]
    return closed[::-1]


@dataclass(frozen=True, slots=True)
class HtmlShape:
    depth: int
    """The deepest nesting (the scan stops past `stop_at`)."""
    opened: int
    """Opening tags seen."""
    edits: list[tuple[int, int, bytes]]
    """What to change before docling reads the page, in order: end tags left out
    (`<li>a<li>b`: at the tag that closes them, the end tags a browser would have closed
    there) written in, and comments and conditional markers cut out (start, end, b"")."""


def _comment_end(data: bytes, match: re.Match[bytes]) -> int | None:
    """Where a comment (to its `-->`, else the end of the page) or a conditional marker
    that `match` starts ends; None when `match` is a tag."""
    mark = match.group(0)
    if mark == b"<!--":
        end = data.find(b"-->", match.end())
        return len(data) if end < 0 else end + 3
    return match.end() if mark.startswith(b"<![") else None


def html_shape(data: bytes, stop_at: int) -> HtmlShape:
    """A tag scan of `data` (linear): comments and the text of raw-text elements
    (`script`, `style`, `textarea`, ...) are passed over, not read as tags.

    Comments are cut out of what docling reads. A browser shows none, and docling's HTML
    reader turns one into text when it splits a paragraph that holds a block (a `<p>`
    around a table or a list): Word's "Web Page" and MHTML files put VML drawings in
    conditional comments inside such paragraphs, which came out as pages of markup and
    base64."""
    stack: list[bytes] = []
    deepest = opened = pos = 0
    edits: list[tuple[int, int, bytes]] = []
    while (match := _MARK.search(data, pos)) is not None:
        if (cut := _comment_end(data, match)) is not None:
            edits.append((match.start(), cut, b""))
            pos = cut
            continue
        pos = match.end()
        closing, name, self_closing = match.group(1), match.group(2).lower(), match.group(3)
        if closing:
            if name in stack:
                while stack and stack.pop() != name:
                    pass
            continue
        opened += 1
        if name in _RAW_TEXT:
            end_tag = _RAW_TEXT[name].search(data, pos)
            pos = len(data) if end_tag is None else end_tag.end()
            continue
        if self_closing or name in _VOID:
            continue
        if name in _IMPLIED and (closed := _close_implied(stack, name)):
            at = match.start()
            edits.append((at, at, b"".join(b"</" + n + b">" for n in closed)))
        stack.append(name)
        deepest = max(deepest, len(stack))
        if deepest > stop_at:
            break
    return HtmlShape(deepest, opened, edits)


def _edited(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    parts: list[bytes] = []
    last = 0
    for start, end, replacement in edits:
        parts += (data[last:start], replacement)
        last = end
    parts.append(data[last:])
    return b"".join(parts)


def html_text_floor(data: bytes) -> int:
    """A lower bound on the bytes of visible text in `data` (see the module's notes)."""
    text = _ENTITY.sub(b"&", _TAG.sub(b"", _HIDDEN.sub(b"", data)))
    return len(text) - sum(text.count(bytes([c])) for c in _BLANK)


def check_html(data: bytes, *, max_depth: int, max_elements: int) -> bytes:
    """Refuses what the guards above refuse; returns the document to convert: `data` with
    the end tags it left out written in (see `_IMPLIED`) and its comments cut out, else
    `data` itself."""
    max_text = SUBMISSION_CAPS["max_text_bytes"]
    # The byte scan reads ASCII-compatible encodings only (UTF-16 has a NUL in every ASCII char).
    ascii_compatible = b"\x00" not in data[:4096]
    if len(data) > max_text and ascii_compatible and (floor := html_text_floor(data)) > max_text:
        raise TooLarge(
            f"HTML has at least {floor} bytes of text, over the core's max_text_bytes={max_text}"
        )
    shape = html_shape(data, max_depth)
    if shape.depth > max_depth:
        raise Unsupported(f"HTML nested more than {max_depth} elements deep (max_depth)")
    if shape.opened > max_elements:
        raise TooLarge(f"HTML has {shape.opened} elements, over max_elements={max_elements}")
    return _edited(data, shape.edits) if shape.edits else data


def check_markdown(data: bytes, *, max_elements: int) -> None:
    blocks = len(_BLOCK_LINE.findall(data)) + len(_PARAGRAPH_START.findall(data))
    if blocks > max_elements:
        raise TooLarge(f"Markdown has about {blocks} blocks, over max_elements={max_elements}")
