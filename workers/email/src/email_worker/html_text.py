"""HTML bodies rendered to plain text, with the standard library's tokenizer.

A mail body needs readable text, not layout: block elements become line breaks, list
items get a "- ", table cells a tab, and <blockquote> lines a "> " prefix so a quoted
reply in an HTML-only mail is found by the same quote detection as a plain-text one.
Scripts, styles and the head are dropped. `html.parser` is lenient with broken markup,
has no dependencies and no global state, so the same HTML always gives the same text
(a reason to prefer it over a third-party parser whose heuristics change by version).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["html_to_text"]

# Blocks that end a paragraph (a blank line) and blocks that only end a line.
_PARAGRAPH = frozenset(
    {"blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "ol", "p", "pre", "table", "ul"}
)
_LINE = frozenset(
    {
        "address", "article", "aside", "dd", "div", "dl", "dt", "fieldset", "figcaption",
        "figure", "footer", "form", "header", "li", "main", "nav", "section", "tr",
    }
)  # fmt: skip
_SKIP = frozenset({"head", "script", "style", "template", "title", "noscript"})
_VOID = frozenset({"br", "hr", "img", "meta", "link", "input", "wbr", "col", "area", "base"})
_SPACES = re.compile(r"[ \t\f\v\r\n\u00a0\u200b]+")


def _blank(line: str) -> bool:
    return not line.strip("> ")


class _Renderer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.current: list[str] = []
        self.skip_depth = 0
        self.quote_depth = 0
        self.pre_depth = 0

    @property
    def _prefix(self) -> str:
        return "> " * self.quote_depth

    def _end_line(self) -> None:
        text = "".join(self.current)
        self.current = []
        text = text.rstrip() if self.pre_depth else text.strip(" ")
        if text.strip():
            self.lines.append(self._prefix + text)

    def _paragraph_break(self) -> None:
        self._end_line()
        if self.lines and not _blank(self.lines[-1]):
            self.lines.append(self._prefix.rstrip())

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip_depth += 1
        elif tag == "br":
            if "".join(self.current).strip():
                self._end_line()
            else:
                self.lines.append(self._prefix.rstrip())  # <br><br> is a blank line
        elif tag == "blockquote":
            self._paragraph_break()
            self.quote_depth += 1
        elif tag in _PARAGRAPH:
            self._paragraph_break()
            self.pre_depth += tag == "pre"
        elif tag in _LINE:
            self._end_line()
            if tag == "li":
                self.current.append("- ")
        elif tag in {"td", "th"} and "".join(self.current).strip():
            self.current.append("\t")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip_depth = max(0, self.skip_depth - 1)
        elif tag == "blockquote":
            self._end_line()
            self.quote_depth = max(0, self.quote_depth - 1)
            if self.lines and _blank(self.lines[-1]):
                self.lines[-1] = self._prefix.rstrip()  # the quote ends with its last line
            self._paragraph_break()
        elif tag in _PARAGRAPH:
            self._paragraph_break()
            if tag == "pre":
                self.pre_depth = max(0, self.pre_depth - 1)
        elif tag in _LINE:
            self._end_line()

    def handle_data(self, data: str) -> None:
        if self.skip_depth:
            return
        if self.pre_depth:
            head, *rest = data.replace("\r\n", "\n").split("\n")
            self.current.append(head)
            for line in rest:
                self._end_line()
                self.current.append(line)
            return
        text = _SPACES.sub(" ", data)
        if not "".join(self.current).strip(" ") or "".join(self.current).endswith((" ", "\t")):
            text = text.lstrip(" ")
        self.current.append(text)


def html_to_text(html: str) -> str:
    """Readable text of an HTML document: one line per block, blank lines collapsed."""
    renderer = _Renderer()
    renderer.feed(html)
    renderer.close()
    renderer._end_line()
    out: list[str] = []
    for line in renderer.lines:
        if _blank(line) and (not out or _blank(out[-1])):
            continue  # one blank line at most, none at the start
        out.append(line.rstrip())
    while out and _blank(out[-1]):
        out.pop()
    return "\n".join(out)
