"""Quoted reply blocks in a body: where the text is someone else's earlier message.

Two shapes cover nearly all mail: `>`-prefixed lines (with the attribution line above
them, "On Mon, 2 Mar 2026, Alice wrote:", possibly wrapped over two lines), and the
Outlook style, where a separator ("-----Original Message-----", or a line of
underscores followed by "From:") starts a copy of the earlier message that runs to the
end of the body. Ranges are character offsets into the body, end exclusive, without the
final newline.
"""

from __future__ import annotations

import re

__all__ = ["quote_ranges"]

_QUOTED = re.compile(r"^[ \t]*>")
_ATTRIBUTION = re.compile(
    r"(wrote|schrieb|a écrit|escribió|scrisse|skrev|napisał|schreef|kirjoitti|написал)\s*:\s*$",
    re.IGNORECASE,
)
_SEPARATOR = re.compile(
    r"^[ \t]*-{2,}[ \t]*(original message|forwarded message|ursprüngliche nachricht|"
    r"message d'origine|mensaje original|messaggio originale|oorspronkelijk bericht)"
    r"[ \t]*-{2,}[ \t]*$",
    re.IGNORECASE,
)
_RULE = re.compile(r"^[ \t]*_{10,}[ \t]*$")
_FROM = re.compile(r"^[ \t]*(from|von|de|van|da)[ \t]*:", re.IGNORECASE)


def _lines(body: str) -> list[tuple[int, int]]:
    """(start, end) of every line, end before its newline."""
    out = []
    position = 0
    for line in body.split("\n"):
        out.append((position, position + len(line)))
        position += len(line) + 1
    return out


def _attribution_start(body: str, lines: list[tuple[int, int]], first: int) -> int:
    """The index of the first line of the attribution above quoted line `first`."""
    index = first - 1
    if index >= 0 and not body[slice(*lines[index])].strip():
        index -= 1  # one blank line may sit between the attribution and the quote
    if index < 0 or not _ATTRIBUTION.search(body[slice(*lines[index])]):
        return first
    previous = index - 1
    wrapped = previous >= 0 and body[slice(*lines[previous])].lstrip().lower().startswith("on ")
    if wrapped and not body[slice(*lines[index])].lstrip().lower().startswith("on "):
        return previous
    return index


def quote_ranges(body: str) -> list[tuple[int, int]]:
    """Character ranges of the quoted blocks of `body`, in order, not overlapping."""
    lines = _lines(body)
    texts = [body[start:end] for start, end in lines]
    ranges: list[tuple[int, int]] = []
    index = 0
    while index < len(lines):
        text = texts[index]
        outlook = _SEPARATOR.match(text) or (
            _RULE.match(text) and index + 1 < len(lines) and _FROM.match(texts[index + 1])
        )
        if outlook:
            last = max(i for i in range(index, len(lines)) if texts[i].strip() or i == index)
            ranges.append((lines[index][0], lines[last][1]))
            break
        if not _QUOTED.match(text):
            index += 1
            continue
        first = _attribution_start(body, lines, index)
        last = index
        probe = index + 1
        while probe < len(lines):
            if _QUOTED.match(texts[probe]):
                last = probe
            elif texts[probe].strip():
                break
            probe += 1
        start = lines[first][0]
        if ranges and start < ranges[-1][1]:
            start = ranges[-1][1]
        ranges.append((start, lines[last][1]))
        index = last + 1
    return ranges
