"""What a reader sees of a portal page, and the raw values a program prints that a person
should never read (issue 27, item 3): used by the crawl of every page
(tests/integration/test_portal_raw_values.py) and by the Chromium layout test at both widths."""

from __future__ import annotations

import re
from html.parser import HTMLParser

# What a program prints and a person should never read.
RAW = [
    (re.compile(r"\bNone\b"), "None"),
    (re.compile(r"\b(?:nan|NaN|NAN)\b"), "nan"),
    (re.compile(r"\b(?:True|False)\b"), "a Python boolean"),
    (re.compile(r"\{'|'\}|\['"), "a Python dict or list"),
    (re.compile(r"\{\s*\}|\[\s*\]"), "an empty dict or list"),
    (re.compile(r"\b0 of 0\b"), "a count of nothing"),
    (re.compile(r"[–-]\s+UTC\b"), "a missing time"),
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d"), "an ISO time"),
    (re.compile(r"\b(?:for|of|by|on)\s+(?:yet|the)?[.,;:]"), "a name left out"),
]


# ------------------------------------------------------------------------------ reading a page
class VisibleText(HTMLParser):
    """The text a reader sees: the elements' text (the charts' SVG text included), without
    scripts, styles, hidden elements, an SVG's metadata and attribute values; each table cell
    apart."""

    VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.cells: list[str] = []
        self.links: list[str] = []
        self._skipping: list[str] = []  # the open elements whose content is not shown
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        if tag == "a" and names.get("href"):
            self.links.append(names["href"] or "")
        if tag in self.VOID:
            return
        if self._skipping or tag in ("script", "style", "template", "metadata") or "hidden" in names:
            self._skipping.append(tag)
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if self._skipping:
            if self._skipping[-1] == tag:
                self._skipping.pop()
            return
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        self.parts.append(data)
        if self._cell is not None:
            self._cell.append(data)

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.parts).split())


def read_page(html: str) -> VisibleText:
    parser = VisibleText()
    parser.feed(html)
    parser.close()
    return parser


def raw_values(html: str) -> list[str]:
    """What the page shows that is a raw value: each with a little of the text around it."""
    page = read_page(html)
    found = []
    for pattern, what in RAW:
        for m in pattern.finditer(page.text):
            found.append(f"{what}: …{page.text[max(0, m.start() - 60):m.end() + 40]}…")
    found += [f"a cell showing {cell!r}" for cell in page.cells if cell in ("[]", "{}", "()")]
    return found
