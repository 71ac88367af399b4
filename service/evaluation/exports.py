"""Leaderboards as files: CSV and LaTeX, from the document :func:`boards.leaderboard_doc` returns.

CSV cells hold names chosen by participants (run tags, team names). A spreadsheet opening the
file would run a text cell that starts like a formula (``=``, ``+``, ``-``, ``@``, a tab or a
carriage return), so such a cell is written with a leading single quote, which spreadsheets
show as text (OWASP's advice on CSV injection). Numbers (a negative score) stay numbers.
"""

from __future__ import annotations

import csv
import io
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """A text cell that a spreadsheet would read as a formula, as text ('=1+2 for =1+2);
    anything else (numbers, booleans, empty cells, other text) unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def board_csv(doc: dict[str, Any]) -> str:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["rank", "run", "team", "mean", "ci_low", "ci_high", "n_topics", "baseline", "groups"])
    for r in doc["rows"]:
        w.writerow([spreadsheet_safe(cell) for cell in (
            r["rank"], r["run"], r["team"], r["mean"], r["ci_low"], r["ci_high"], r["n_topics"], r["baseline"],
            r.get("groups", ""))])
    return out.getvalue()


def board_latex(doc: dict[str, Any]) -> str:
    """A LaTeX table of the leaderboard; superscript letters mark statistically tied groups."""
    def esc(text: str) -> str:
        special = {"\\": "\\textbackslash{}", "^": "\\^{}", "~": "\\~{}"}
        return "".join(special.get(c) or ("\\" + c if c in "&%$#_{}" else c) for c in str(text))

    sig = doc.get("significance")
    lines = ["\\begin{tabular}{rllrr}", "\\hline",
             f"Rank & Run & Team & {esc(doc['metric'])} & 95\\% CI \\\\", "\\hline"]
    for r in doc["rows"]:
        mark = f"$^{{{r['groups']}}}$" if r.get("groups") else ""
        ci = "" if r["ci_low"] is None else f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}]"
        base = " (baseline)" if r["baseline"] else ""
        lines.append(f"{r['rank']} & {esc(r['run'])}{base} & {esc(r['team'])} & {r['mean']:.4f}{mark} & {ci} \\\\")
    lines += ["\\hline", "\\end{tabular}"]
    if sig:
        lines.append(f"% runs sharing a letter are not significantly different ({sig['test']}, "
                     f"alpha = {sig['alpha']}, correction {sig['correction']})")
    return "\n".join(lines) + "\n"
