"""Every portal page's title is a line of text: a template whose title block swallowed markup
(an edit that lost its ``endblock``) put a heading, a table and a form into <title>."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "service" / "portal" / "templates"


def test_every_title_block_is_text_on_one_line() -> None:
    checked = 0
    for path in sorted(TEMPLATES.glob("*.html")):
        text = path.read_text()
        for m in re.finditer(r"\{% block title %\}(.*?)\{% endblock %\}", text, re.DOTALL):
            checked += 1
            assert "\n" not in m.group(1) and "<" not in m.group(1), (path.name, m.group(1)[:80])
        opened = len(re.findall(r"\{% block \w+ %\}", text))
        assert opened == text.count("{% endblock %}"), path.name
    assert checked > 20  # the pages' templates, not an empty folder
