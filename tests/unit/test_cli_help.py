"""Issue 37, item 6: every option's help says its default (``registry.DefaultsShown``), on every
command and subcommand, and the ones the issue named print the value."""

from __future__ import annotations

import argparse
import re

import pytest

from service.cli.registry import build_parser, nothing


def parsers(parser: argparse.ArgumentParser, name: str = "cranfield"):  # type: ignore[no-untyped-def]
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child_name, child in action.choices.items():
                yield from parsers(child, f"{name} {child_name}")


def test_every_option_with_a_default_says_it() -> None:
    missing = []
    for name, parser in parsers(build_parser()):
        formatter = parser._get_formatter()
        for action in parser._actions:
            if not action.option_strings or action.help == argparse.SUPPRESS or nothing(action.default):
                continue
            text = formatter._expand_help(action) if action.help else ""
            if "default" not in text.lower():
                missing.append(f"{name} {action.option_strings[-1]}")
    assert not missing, missing


@pytest.mark.parametrize(("command", "options"), [
    ("serve", {"--host": "127.0.0.1", "--port": "8000"}),
    ("eval", {"--format": "tsv", "--order": "score", "--missing": "zero", "--no-relevant": "skip"}),
    ("compare", {"--test": "bootstrap", "--alpha": "0.05", "--correction": "none", "--seed": "0",
                 "--interval": "t", "--format": "tsv"}),
    ("metaeval", {"--alpha": "0.05", "--B": "1000", "--seed": "0"}),
    ("repro", {"--resamples": "10000", "--level": "0.95", "--seed": "0", "--ktu-depth": "1000"}),
])
def test_the_named_options_print_their_default(command: str, options: dict[str, str]) -> None:
    (parser,) = [p for name, p in parsers(build_parser()) if name == f"cranfield {command}"]
    text = re.sub(r"\s+", " ", parser.format_help())
    for option, default in options.items():
        block = text.split(f" {option} ", 1)[1].split(" --", 1)[0]
        assert re.search(rf"default:? {re.escape(default)}\b", block), (command, option, block)
