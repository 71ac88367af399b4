"""The ``cranfield`` command line.

One registry (:mod:`service.cli.registry`) holds every command; each module below registers
its own, and :func:`main` builds argparse from the registry and runs the chosen handler.

  evaluate.py    eval, metrics             (the computation core on files)
  stats.py       compare, metaeval         (significance tests, meta-evaluation)
  topicsize.py   topicsize                 (Sakai's topic set size design)
  repro.py       repro                     (reproducibility measures, Breuer et al. 2020)
  processes.py   db, worker, beat, serve, demo
  organising.py  load, qrels add, reevaluate, leaderboard, jobs, token create
  judging.py     pool, judgments add, reusability
  judges.py      judges compare            (two qrels versions or files: agreement)
  remote.py      remote login/logout/collections/runs/submit/wait/board/scores (the HTTP API's client)
  rag.py         rag eval, rag validate    (generated answers: nuggets, citation support; file mode)
  common.py      what the service commands share (database, queue, files, the CLI's caller)
  arguments.py   argument types (gains, positive integers)
  output.py      printing: documents (--format json), every line made safe for a terminal

Every module's top level imports only the standard library, ``service.errors``, the free-text
rule (``service.formats.text``) and (stats) numpy; a handler imports what it needs, so
``cranfield eval`` never loads the service stack. Every command prints through
:class:`~service.cli.output.SafeOutput`: control characters and bidirectional overrides in
stored text are shown escaped, never sent to the terminal as they are.
The modules are imported in the order ``cranfield --help`` lists their commands.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

# Importing a command module registers its commands (in this order in --help).
from service.cli import evaluate, stats, processes, organising, judging  # noqa: F401  isort: skip
from service.cli import judges  # noqa: F401  isort: skip
from service.cli import topicsize  # noqa: F401  isort: skip
from service.cli import repro  # noqa: F401  isort: skip
from service.cli import remote  # noqa: F401  isort: skip
from service.cli import rag  # noqa: F401  isort: skip
from service.cli.output import SafeOutput, say
from service.cli.registry import handler_for
from service.cli.registry import build_parser as _build_parser
from service.errors import CranfieldError, InvalidMeasure


def build_parser() -> argparse.ArgumentParser:
    """The ``cranfield`` parser: one subcommand per registered command."""
    return _build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``cranfield ARGV``; returns the exit code: 0, 1 for an error (a message on stderr),
    2 for a usage error (a bad metric name, a bad option)."""
    args = build_parser().parse_args(argv)
    from service.runtime import tune_allocator

    tune_allocator()
    try:
        from service.config import max_upload
        from service.formats.compressed import set_local_limit

        set_local_limit(max_upload())  # a gzipped file read here is bounded as an upload is
        # every command prints through the one sanitiser: stored text is shown, never run
        return handler_for(args.command)(args, SafeOutput(sys.stdout))  # type: ignore[arg-type]
    except InvalidMeasure as exc:
        say(f"cranfield: {exc}")
        return 2
    except CranfieldError as exc:
        say(f"cranfield: error: {exc}")
        return 1
    except BrokenPipeError:
        return 0
