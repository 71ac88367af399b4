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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cranfield", description="Cranfield: IR evaluation for shared tasks.")
    sub = parser.add_subparsers(dest="command", required=True)
    for cmd in _COMMANDS.values():
        cmd.setup(sub.add_parser(cmd.name, help=cmd.help, **cmd.parser_options))
    return parser
