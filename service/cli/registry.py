"""The one registry of ``cranfield`` commands.

Each command module declares its commands with :func:`command`: the name, the help line,
a function that adds the command's arguments to its parser, and the handler. :func:`build_parser`
turns the registry into argparse parsers (in registration order) and :func:`handler_for` finds
the function that runs a parsed command. Nothing else lists command names.

Command modules keep their top level light (the standard library and ``service.errors``)
and import what a command needs inside its handler, so that ``cranfield eval`` never loads
the service stack.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

Handler = Callable[[argparse.Namespace, TextIO], int]
Setup = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Command:
    """A ``cranfield`` subcommand: ``setup`` adds its arguments, ``handler`` runs it and
    returns the exit code (domain errors are mapped to exit codes by ``service.cli.main``)."""

    name: str
    help: str
    setup: Setup
    handler: Handler
    parser_options: dict[str, Any] = field(default_factory=dict)  # e.g. description=...


_COMMANDS: dict[str, Command] = {}


def command(name: str, help: str, setup: Setup | None = None, **parser_options: Any) -> Callable[[Handler], Handler]:  # noqa: A002
    """Register the decorated function as the handler of ``cranfield NAME``.

    ``setup(parser)`` adds the command's arguments (none if omitted); ``parser_options`` go to
    ``add_parser`` (``description``...).
    """

    def register(handler: Handler) -> Handler:
        if name in _COMMANDS:
            raise ValueError(f"the command {name!r} is registered twice")
        _COMMANDS[name] = Command(name, help, setup or (lambda _: None), handler, dict(parser_options))
        return handler

    return register


def commands() -> tuple[Command, ...]:
    """Every registered command, in registration order."""
    return tuple(_COMMANDS.values())


def handler_for(name: str) -> Handler:
    return _COMMANDS[name].handler


def nothing(default: object) -> bool:
    """A default not worth stating: None, False (a flag), an empty list, or suppressed (0 is stated)."""
    return default is None or default is False or default is argparse.SUPPRESS or (
        isinstance(default, (list, tuple)) and not default)


class DefaultsShown(argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default (issue 37, item 6), unless it states one
    already or has none to state (None, False, an empty list); descriptions keep their lines."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if text == argparse.SUPPRESS or "default" in text.lower() or not action.option_strings or nothing(default):
            return action.help
        shown = ", ".join(map(str, default)) if isinstance(default, (list, tuple)) else "%(default)s"
        return f"{text} (default: {shown})" if text else f"default: {shown}"


def shown_with_defaults(parser: argparse.ArgumentParser) -> None:
    """``parser`` and every subcommand's parser under it format their help with :class:`DefaultsShown`."""
    parser.formatter_class = DefaultsShown
    for action in parser._actions:  # noqa: SLF001  (argparse keeps its subparsers there)
        if action.help is None and action.option_strings and not nothing(action.default):
            action.help = ""  # (argparse formats no help string for an option without one)
            action.help = DefaultsShown("")._get_help_string(action) or None
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for child in action.choices.values():
                shown_with_defaults(child)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cranfield", description="Cranfield: IR evaluation for shared tasks.")
    sub = parser.add_subparsers(dest="command", required=True)
    for cmd in _COMMANDS.values():
        cmd.setup(sub.add_parser(cmd.name, help=cmd.help, **cmd.parser_options))
    shown_with_defaults(parser)
    return parser
