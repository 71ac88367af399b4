"""``cranfield load --task-kind answers``: a collection of generated answers (issue 35) loaded
from files, as ``cranfield load`` loads ranked lists: its judgments (nuggets, assignments,
support files, retrieval qrels) as one version of its official judgment set, and its answer
runs, every file validated (file, line and field) before anything is stored, in one
transaction; then the workers score them."""

from __future__ import annotations

import argparse
import hashlib
from typing import Any, TextIO

from service.cli.common import database_url, read_bytes, read_teams, run_files, send, sessions
from service.errors import InvalidMeasure


def add_arguments(load: argparse.ArgumentParser) -> None:
    load.add_argument("--task-kind", choices=("ranked", "answers"), default="ranked",
                      help="answers: a collection of generated answers (TREC RAG; docs/rag.md); --runs are answer "
                           "files, the judgments --assignments, --nuggets, --support and --qrels (retrieval)")
    load.add_argument("--assignments", metavar="FILE", help="answers: nugget assignments (NIST's / nuggetizer's)")
    load.add_argument("--nuggets", metavar="FILE", help="answers: each topic's nuggets (nuggetizer's create output)")
    load.add_argument("--support", action="append", default=[], metavar="FILE",
                      help="answers: a citation-support file (NIST's); repeatable")
    load.add_argument("--answer-format", choices=("auto", "rag24", "rag25", "rag26"), default="auto",
                      help="answers: the answer files' format (a new collection's setting; default auto)")


def load_answers(args: argparse.Namespace, out: TextIO) -> int:
    from sqlalchemy import select

    from service.evaluation.judging.answer_judgments import store_version
    from service.evaluation.organising import answer_bundle, answers
    from service.evaluation.organising.collections import lock
    from service.evaluation.organising.planning import plan_job
    from service.evaluation.organising.setup import ConfigSpec, ensure_collection, official_set
    from service.store.db import transaction
    from service.store.models import Collection, QrelsVersion

    parts = answer_bundle.empty()
    for part, path in (("nuggets", args.nuggets), ("assignments", args.assignments), ("qrels", args.qrels)):
        if path:
            parts = answer_bundle.replaced(parts, part, bytes(read_bytes(path)), path)
    for path in args.support:
        parts = answer_bundle.replaced(parts, "support", bytes(read_bytes(path)), path, append=True)
    judged = answer_bundle.read(parts)  # every judgment file checked before anything is stored
    if judged.assignments is None and not judged.support and not judged.qrels.topics:
        raise InvalidMeasure("--task-kind answers: give the judgments (--assignments, --support or --qrels)")
    url = database_url()
    with sessions(url)() as s:
        existing = s.scalar(select(Collection).where(Collection.name == args.collection))
        if existing is not None and (existing.task_kind or "ranked") != "answers":
            raise InvalidMeasure(f"collection {args.collection!r} takes ranked lists, not answers")
        settings = dict(existing.answer_settings) if existing is not None else {"format": args.answer_format}
    topics = set(judged.topics())
    loaded = [(str(f), data, answers.parse(data, str(f), settings, topics))
              for f in run_files(args.runs) for data in [bytes(read_bytes(f))]]
    team_of = _teams(args)
    spec = ConfigSpec(official_metric=args.official_metric or answers.DEFAULT_OFFICIAL,
                      metrics=tuple(args.metrics or answers.DEFAULT_METRICS))
    data = answer_bundle.encode(parts)
    with transaction(sessions(url)) as s:  # all or nothing
        coll = lock(s, ensure_collection(s, args.collection, spec if existing is None else None, args.actor,
                                         task_kind="answers").id)
        if existing is None:
            coll.answer_settings = answers.normalise_settings(settings)
        target = official_set(s, coll)
        current = s.get(QrelsVersion, target.current_version_id) if target.current_version_id else None
        followups: tuple[Any, ...] = ()
        if current is None or current.checksum != hashlib.sha256(data).hexdigest():
            current, _, followups = store_version(s, coll, target, data, judged, "cranfield load", args.actor)
        runs = [answers.add_answer_run(s, coll, blob, name, parsed, team=team_of.get(parsed.run_id) or args.team
                                       or parsed.run_id, actor=args.actor)
                for name, blob, parsed in loaded]
        job, planned = plan_job(s, coll, "load")
        summary = (f"collection {coll.name!r} (answers): judgments version {current.version}, {len(runs)} answer "
                   f"runs stored; job {job.id} queued ({job.total} runs to evaluate)")
    send([*followups, *planned])
    out.write(summary + "\n")
    return 0


def _teams(args: argparse.Namespace) -> dict[str, str]:
    return read_teams(args.teams) if getattr(args, "teams", None) else {}
