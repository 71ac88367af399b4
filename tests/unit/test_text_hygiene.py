"""Text that comes back out (issue 24, items 6 and 9): the free-text rule (control characters
and bidirectional overrides refused at input, escaped on a terminal), what `cranfield remote`
prints of stored text, and CSV exports (every one through ``exports.spreadsheet_safe``).

The HTTP side (every body, form and upload field refusing them with a 400 naming the field) is
tests/integration/test_input_hygiene.py.
"""

from __future__ import annotations

import ast
import io
from pathlib import Path
from typing import Any

import pytest

from service.cli import main
from service.cli import remote as remote_cli
from service.cli.output import SafeOutput
from service.errors import BadRequest, InvalidInput, NotFound
from service.evaluation.publishing.exports import FORMULA_STARTS, disagreeing_topics_csv
from service.formats import ir_metadata
from service.formats.text import check_text, check_tree, terminal_safe

REPO = Path(__file__).resolve().parents[2]

# What a hostile name or description carries: an OSC (retitles the window, or an OSC 8 link), a
# CSI (clears the screen), a C1 CSI (U+009B), DEL, a right-to-left override.
OSC_TITLE = "\x1b]0;owned\x07"
OSC_LINK = "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07"
CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b31m"
RLO = "\u202e"
REFUSED = [chr(c) for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F),
                            *range(0x2066, 0x206A))]
ALLOWED = ["a", " ", "é", "日", "\u200f", "\u2028", "\U0001f600", "\u00a0"]  # text, marks, emoji stay


# --------------------------------------------------------------------------- the rule at input
@pytest.mark.parametrize("char", REFUSED, ids=lambda c: f"U+{ord(c):04X}")
def test_every_control_character_and_bidi_override_is_refused_naming_the_field(char: str) -> None:
    with pytest.raises(BadRequest) as err:
        check_text("model", f"gpt{char}x")
    message = str(err.value)
    assert message.startswith("model: ") and f"U+{ord(char):04X}" in message and "character 4" in message


def test_tab_and_line_ends_only_in_multi_line_fields() -> None:
    text = "first line\r\nsecond\tline\n"
    for field in ("description", "prompt", "notes", "levels[0].description"):
        assert check_text(field, text) == text
    for field in ("name", "model", "judged_on", "label", "title", "reason"):
        with pytest.raises(BadRequest, match=f"^{field}: U\\+000D"):
            check_text(field, text)
    with pytest.raises(BadRequest, match="^description: U\\+001B"):
        check_text("description", f"ok\n{CLEAR}")
    for text in ALLOWED:
        assert check_text("name", f"x{text}y") == f"x{text}y"


def test_nested_values_name_their_path() -> None:
    check_tree("metadata", {"a": ["x", 1, None, {"b": "line\nbreak"}], "description": "two\nlines"}, multiline=True)
    with pytest.raises(BadRequest, match=r"^topics\[2\]: "):
        check_tree("topics", ["1", "2", f"3{RLO}"])
    with pytest.raises(BadRequest, match=r"^levels\[1\]\.label: "):
        check_tree("levels", [{"label": "ok"}, {"label": f"L{C1_CSI}"}])
    with pytest.raises(BadRequest, match=r"^metadata key: "):
        check_tree("metadata", {f"k{OSC_TITLE}": 1})
    check_tree("n", 5)  # numbers, booleans, None: nothing to check


def test_an_ir_metadata_file_with_a_bidi_override_is_refused_on_its_line() -> None:
    with pytest.raises(InvalidInput) as err:
        ir_metadata.read(f"tag: a\nmethod:\n  automatic: true\nactor:\n  team: al{RLO}pha\n".encode(), "meta.yaml")
    assert (err.value.source, err.value.line) == ("meta.yaml", 5) and "U+202E" in err.value.reason


# --------------------------------------------------------------------------- the terminal
def test_terminal_safe_escapes_what_a_terminal_would_run_and_keeps_the_layout() -> None:
    assert terminal_safe(f"a\tb\n{OSC_TITLE}{C1_CSI}{RLO}\x7f\r") == \
        "a\tb\n\\x1b]0;owned\\x07\\x9b31m\\u202e\\x7f\\x0d"
    assert terminal_safe("plain ✓ text\n") == "plain ✓ text\n"
    for char in REFUSED:
        if char not in "\t\n":
            assert char not in terminal_safe(f"x{char}y")
    out = io.StringIO()
    SafeOutput(out).writelines(["one\x1b[2J\n", "two\n"])
    assert out.getvalue() == "one\\x1b[2J\ntwo\n"


class StoredText:
    """A server whose stored names, descriptions and provenance carry terminal escapes (the data
    of a judges track and a run listing as the API returns them)."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail

    def find_collection(self, ref: str) -> dict[str, Any]:
        if self.fail is not None:
            raise self.fail
        return {"id": 1, "name": f"task{OSC_TITLE}"}

    def collections(self) -> list[dict[str, Any]]:
        return [self.find_collection("task")]

    def runs(self, cid: int) -> dict[str, Any]:
        return {"items": [{"id": 7, "tag": "r1", "team": f"al{RLO}pha", "status": "evaluated", "run_type": "automatic",
                           "primary": True, "priority": None, "submitted_at": "2025-01-01",
                           "description": f"best run{CLEAR}{C1_CSI}"}],
                "quota": {"used_today": 1, "per_day": 5, "resets_at": f"midnight{CLEAR}"}}

    def judge_board(self, cid: int) -> dict[str, Any]:
        return {"measure": "kendall", "metric": f"nDCG@10{C1_CSI}", "level": 0.95, "stale": False,
                "rows": [{"rank": 1, "judgment_set": "llm", "team": "alpha", "model": f"gpt-x{OSC_LINK}",
                          "value": 0.9, "low": 0.8, "high": 1.0, "bias": 0.1}]}

    def reproducibility_board(self, cid: int, metric: str | None = None) -> dict[str, Any]:
        return {"metric": f"RR{C1_CSI}{RLO}", "stale": True, "rows": [
            {"id": 1, "run": {"team": f"al{RLO}pha", "tag": "r1"}, "advanced_run": None,
             "original": {"run": {"tag": f"orig{CLEAR}"}, "advanced_run": None}, "same_collection": True,
             "verdict": "reproduced", "withheld": False}]}

    def close(self) -> None:
        pass


def _remote(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], client: StoredText,
            *argv: str) -> tuple[int, str, str]:
    monkeypatch.setattr(remote_cli, "_remote", lambda: remote_cli.Remote("https://c.example.org", "cf_x", "test"))
    monkeypatch.setattr(remote_cli.Remote, "client", lambda self: client)
    code = main(["remote", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _shown_not_run(text: str) -> None:
    assert not any(char in text for char in REFUSED if char not in "\t\n"), repr(text)


def test_remote_judge_board_and_runs_show_stored_escapes_without_running_them(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _remote(monkeypatch, capsys, StoredText(), "judge-board", "task")
    assert code == 0
    _shown_not_run(out + err)
    assert "gpt-x\\x1b]8;;https://evil.example\\x07click" in out and "nDCG@10\\x9b31m" in err
    code, out, err = _remote(monkeypatch, capsys, StoredText(), "runs")
    assert code == 0
    _shown_not_run(out + err)
    assert "best run\\x1b[2J\\x1b[H\\x9b31m" in out and "al\\u202epha" in out and "midnight\\x1b[2J" in err
    # the server's refusal, echoing a stored name, is shown the same way
    code, out, err = _remote(monkeypatch, capsys, StoredText(NotFound(f"no collection {CLEAR}x")), "runs", "x")
    assert code == 1
    _shown_not_run(out + err)
    assert "no collection \\x1b[2J" in err


def test_remote_repro_board_shows_the_collections_name_and_metric_escaped(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34, item 6: the board's heading on stderr (the collection's name and the metric, the
    server's text) was a bare ``sys.stderr.write``: ESC, C1 CSI and RLO reached the terminal."""
    code, out, err = _remote(monkeypatch, capsys, StoredText(), "repro-board", "task")
    assert code == 0
    _shown_not_run(out + err)
    assert err.startswith("# task\\x1b]0;owned\\x07: RR\\x9b31m\\u202e (stale")
    assert "al\\u202epha" in out and "orig\\x1b[2J\\x1b[H" in out


# What the commands may write to sys.stdout/sys.stderr themselves (not through ``out`` or ``say``,
# which escape): the formatted values of such a line, each a local value, never the server's text.
LOCAL_VALUES = {"args.role", "token.prefix", "code", "pause"}


def _unsafe_pieces(node: ast.AST) -> list[str]:
    """The parts of a written expression that are neither literal text nor ``terminal_safe(...)``
    nor a known local value."""
    if isinstance(node, ast.Constant):
        return []
    if isinstance(node, ast.JoinedStr):
        return [p for v in node.values for p in _unsafe_pieces(v)]
    if isinstance(node, ast.FormattedValue):
        return _unsafe_pieces(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "terminal_safe":
        return []
    text = ast.unparse(node)
    return [] if text in LOCAL_VALUES else [text]


def test_no_command_writes_the_servers_text_to_a_terminal_unescaped() -> None:
    """Every ``sys.stdout.write``/``sys.stderr.write`` and ``print(..., file=sys.std*)`` of the
    commands writes literal text, ``terminal_safe(...)`` or a local value: a bare write of a
    name, a metric or a message from a server or a database is refused here."""
    found = []
    for path in sorted((REPO / "service" / "cli").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = ast.unparse(node.func)
            to_std = any(k.arg == "file" and ast.unparse(k.value) in ("sys.stderr", "sys.stdout")
                         for k in node.keywords)
            if func in ("sys.stderr.write", "sys.stdout.write") or (func == "print" and to_std):
                found += [f"{path.name}:{node.lineno}: {p}" for a in node.args for p in _unsafe_pieces(a)]
    assert found == []


# --------------------------------------------------------------------------- CSV exports
def test_every_csv_export_is_written_by_exports() -> None:
    """One writer: a CSV written elsewhere would bypass ``spreadsheet_safe`` (the qrels
    comparison's CSV once did)."""
    writers = []
    for path in sorted((REPO / "service").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("writer", "DictWriter") and \
                    isinstance(node.value, ast.Name) and node.value.id == "csv":
                writers.append(str(path.relative_to(REPO)))
    assert writers and set(writers) == {"service/evaluation/publishing/exports.py"}, writers


def test_the_qrels_comparison_csv_neutralises_formula_topic_ids() -> None:
    topics = ["=1+1", "+SUM(1,2)", "-2+3", "@SUM(A1)", "0001"]
    doc = {"labels": {"topics": [{"topic": t, "kappa": 0.5, "documents": 3} for t in topics]},
           "topics": {"disagreeing": [{"topic": t, "tau": -0.25, "disagreement": 0.625, "mean_a": 0.5, "mean_b": 0.25,
                                       "mean_difference": -0.25, "added": 1, "removed": 0, "changed": 2}
                                      for t in topics]}}
    rows = disagreeing_topics_csv(doc).splitlines()
    assert rows[0].startswith("topic,tau,disagreement")
    assert [r.split(",")[0] for r in rows[1:]] == ["'=1+1", '"\'+SUM(1', "'-2+3", "'@SUM(A1)", "0001"]
    assert rows[1].split(",")[1:] == ["-0.25", "0.625", "0.5", "0.25", "-0.25", "1", "0", "2", "0.5", "3"]
    assert not any(r.startswith(FORMULA_STARTS) for r in rows)
