"""An organiser's commands on the database: load, qrels add, reevaluate, leaderboard, jobs, token."""

from __future__ import annotations

import argparse
import hashlib
import sys
from typing import Any, TextIO

from service.cli.common import cli_principal, database_url, read_bytes, read_teams, run_files, send, sessions
from service.cli.output import write_json
from service.cli.rag_load import add_arguments as add_answer_arguments
from service.cli.rag_load import load_answers
from service.cli.registry import command
from service.errors import InvalidMeasure


def _send_and_report(followups: Any, text: str, out: TextIO) -> int:
    """After the commit: hand the planned work to the workers, then say what was done."""
    send(followups)
    out.write(text + "\n")
    return 0


QRELS_FORMATS = ("adhoc", "diversity-trec", "diversity-ntcir", "sampled")  # setup.UPLOAD_FORMATS


def _format_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=QRELS_FORMATS, default="adhoc", dest="qrels_format",
                        help="the qrels' format: adhoc (TREC or NTCIR ad hoc qrels; default), diversity-trec "
                             "(topic subtopic docno rel), diversity-ntcir (topic intent docno Lk) or sampled "
                             "(NIST's topic 0 docno stratum rel)")
    parser.add_argument("--probabilities", metavar="FILE",
                        help="diversity-ntcir: the intent probability file (topic intent probability); "
                             "without it the intents of a topic weigh alike")


def _read_qrels(path: str, fmt: str, probabilities: str | None) -> tuple[bytes, Any]:
    """The qrels file's bytes and the file read in its format (every line validated)."""
    from service.evaluation.organising.setup import parse_upload

    data = read_bytes(path)
    probs = read_bytes(probabilities) if probabilities else None
    return data, parse_upload(data, path, fmt, probs, probabilities or "intent probabilities")


def _load_arguments(load: argparse.ArgumentParser) -> None:
    load.add_argument("--collection", required=True)
    load.add_argument("--qrels", help="the qrels (required for ranked lists; with --task-kind answers: the "
                                      "retrieval qrels the answers' references are scored against, optional)")
    _format_arguments(load)
    load.add_argument("--runs", nargs="+", required=True, metavar="PATH", help="run files or folders of run files")
    load.add_argument("--team", help="team of every run (default: each run's tag names its team)")
    load.add_argument("--teams", metavar="FILE",
                      help="a run tag<TAB>team line per run (# comments): each run's team (default: --team)")
    load.add_argument("--official-metric", help="the leaderboard's metric (default AP)")
    load.add_argument("--metric", action="append", dest="metrics", help="metrics to compute (default: the default set)")
    load.add_argument("--actor", default="cli")
    add_answer_arguments(load)  # collections of answers (issue 35)


@command("load", "register a collection, a qrels version and runs; enqueue their evaluation", _load_arguments)
def cmd_load(args: argparse.Namespace, out: TextIO) -> int:
    from sqlalchemy import select

    from service.evaluation.organising.collections import lock
    from service.evaluation.organising.planning import plan_job
    from service.evaluation.organising.setup import ConfigSpec, add_qrels, add_run, ensure_collection, set_config
    from service.formats.readers import parse_run
    from service.metrics.scoring import DEFAULT_MEASURES
    from service.store.db import transaction
    from service.store.models import Collection

    if getattr(args, "task_kind", "ranked") == "answers":
        return load_answers(args, out)
    if not args.qrels:
        raise InvalidMeasure("cranfield load: --qrels is required (but with --task-kind answers)")
    url = database_url()
    spec = None
    if args.official_metric or args.metrics:
        spec = ConfigSpec(official_metric=args.official_metric or "AP",
                          metrics=tuple(args.metrics or DEFAULT_MEASURES))
    with sessions(url)() as s:  # the collection's rank order, if it exists already
        existing = s.scalar(select(Collection).where(Collection.name == args.collection))
        config = existing.current_config if existing is not None else None
        order = config.evaluation.get("order", "score") if config is not None else "score"
    # Validate every file before the write transaction: errors name file and line, and the
    # database's write lock is held only while storing.
    qrels_data, qrels = _read_qrels(args.qrels, getattr(args, "qrels_format", "adhoc"),
                                    getattr(args, "probabilities", None))  # (demo, serve --sample: defaults)
    uploads = [(str(f), data, parse_run(data, str(f), order)) for f in run_files(args.runs) for data in [read_bytes(f)]]
    team_of = read_teams(args.teams) if getattr(args, "teams", None) else {}
    with transaction(sessions(url)) as s:  # all or nothing: a bad file stores nothing
        # an existing collection's new configuration is checked against the qrels loaded with it
        coll = lock(s, ensure_collection(s, args.collection, spec if existing is None else None, args.actor).id)
        current = coll.current_qrels
        same = current is not None and current.checksum == hashlib.sha256(qrels_data).hexdigest() \
            and current.format == qrels.format and not (qrels.probabilities or current.intent_probabilities)
        if not same:
            previous = coll.current_qrels_id
            version = add_qrels(s, coll, qrels_data, args.qrels, args.actor, parsed=qrels)
        else:
            previous, version = None, current
        if existing is not None and spec is not None:
            set_config(s, coll, spec, args.actor)
        runs = [add_run(s, coll, data, name, team=team_of.get(parsed.tag, args.team), actor=args.actor, parsed=parsed)
                for name, data, parsed in uploads]
        job, followups = plan_job(s, coll, "load", previous_qrels_id=previous)
        job_id = job.id
        summary = (f"collection {coll.name!r}: qrels version {version.version} ({version.n_judgments} judgments), "
                   f"{len(runs)} runs stored; job {job_id} queued ({job.total} runs to evaluate)")
    return _send_and_report(followups, summary, out)


def _qrels_arguments(q: argparse.ArgumentParser) -> None:
    qsub = q.add_subparsers(dest="qrels_command", required=True)
    qa = qsub.add_parser("add", help="add a qrels version and enqueue the re-evaluation")
    qa.add_argument("--collection", required=True)
    qa.add_argument("file")
    _format_arguments(qa)
    qa.add_argument("--actor", default="cli")


@command("qrels", "qrels versions", _qrels_arguments)
def cmd_qrels_add(args: argparse.Namespace, out: TextIO) -> int:
    from service.evaluation.organising.collections import lock
    from service.evaluation.organising.planning import plan_job
    from service.evaluation.organising.setup import add_qrels, get_collection
    from service.store.db import transaction

    data, parsed = _read_qrels(args.file, args.qrels_format, args.probabilities)
    with transaction(sessions(database_url())) as s:
        coll = lock(s, get_collection(s, args.collection).id)  # the lock order of collection writes
        previous = coll.current_qrels_id
        version = add_qrels(s, coll, data, args.file, args.actor, parsed=parsed)
        job, followups = plan_job(s, coll, "qrels", previous_qrels_id=previous)
        text = (f"qrels version {version.version} of {coll.name!r} ({version.format}); "
                f"job {job.id} re-evaluates {job.total} runs")
    return _send_and_report(followups, text, out)


def _reevaluate_arguments(re: argparse.ArgumentParser) -> None:
    re.add_argument("--collection", required=True)


@command("reevaluate", "enqueue the evaluation of every run lacking current results", _reevaluate_arguments)
def cmd_reevaluate(args: argparse.Namespace, out: TextIO) -> int:
    from service.evaluation.organising.setup import get_collection
    from service.evaluation.publishing import console
    from service.store.db import transaction

    # The console's use case: the collection's lock, the same job, an audit entry
    with transaction(sessions(database_url())) as s:
        outcome = console.reevaluate(s, get_collection(s, args.collection), cli_principal())
        text = f"job {outcome.result['job']}: {outcome.result['runs']} runs to evaluate"
    return _send_and_report(outcome.followups, text, out)


def _leaderboard_arguments(lb: argparse.ArgumentParser) -> None:
    lb.add_argument("--collection", required=True)
    lb.add_argument("-m", "--metric")
    lb.add_argument("--format", choices=("tsv", "json"), default="tsv")


@command("leaderboard", "the stored leaderboard (never computed here)", _leaderboard_arguments)
def cmd_leaderboard(args: argparse.Namespace, out: TextIO) -> int:
    from service.evaluation.publishing.board_intervals import bounds_of, interval_fields, interval_view, truncated_ends
    from service.evaluation.publishing.reading import leaderboard

    with sessions(database_url())() as s:
        metric, rows = leaderboard(s, args.collection, args.metric)
    if args.format == "json":
        return write_json({"collection": args.collection, "metric": metric,
                           "rows": [{**r.__dict__, **interval_fields(r.__dict__)} for r in rows]}, out)
    # As the board's CSV (the same names): t_ci_* the t interval with an end beyond the metric's
    # range shown at the bound (t_ci_truncated says which); boot_ci_* the stored bootstrap interval,
    # its method and B. The JSON keeps the raw figures.
    out.write("rank\trun\tteam\tmean\tt_ci_low\tt_ci_high\tn_topics\tqrels_version\tt_ci_truncated\t"
              "boot_ci_low\tboot_ci_high\tboot_ci_method\tboot_ci_resamples\n")

    def num(v: float | None) -> str:
        return "" if v is None else f"{v:.6f}"

    limits = bounds_of(metric)
    for r in rows:
        v = interval_view(r.__dict__, limits)
        boot = v["kind"] == "bootstrap"
        out.write(f"{r.rank}\t{r.run}\t{r.team}\t{num(r.mean)}\t{num(v['t_low'])}\t{num(v['t_high'])}\t"
                  f"{r.n_topics}\t{r.qrels_version}\t{truncated_ends(v)}\t{num(v['low'] if boot else None)}\t"
                  f"{num(v['high'] if boot else None)}\t{r.boot_method if boot else ''}\t"
                  f"{r.boot_resamples if boot else ''}\n")
    return 0


def _jobs_arguments(jb: argparse.ArgumentParser) -> None:
    jb.add_argument("--collection")
    jb.add_argument("--format", choices=("tsv", "json"), default="tsv")


@command("jobs", "evaluation jobs with status and progress", _jobs_arguments)
def cmd_jobs(args: argparse.Namespace, out: TextIO) -> int:
    from service.evaluation.publishing.reading import jobs

    with sessions(database_url())() as s:
        rows = jobs(s, args.collection)
    if args.format == "json":
        return write_json(rows, out)
    out.write("job\tkind\tstatus\tprogress\tfailed\tqrels_version\tcreated_at\tfinished_at\terror\n")
    for j in rows:
        out.write(f"{j['id']}\t{j['kind']}\t{j['status']}\t{j['done']}/{j['total']}\t{j['failed']}\t"
                  f"{j['qrels_version']}\t{j['created_at']}\t{j['finished_at'] or ''}\t{j['error']}\n")
    return 0


def _token_arguments(tok: argparse.ArgumentParser) -> None:
    tsub = tok.add_subparsers(dest="token_command", required=True)
    tc = tsub.add_parser("create", help="create a token (printed once; only its hash is stored)")
    tc.add_argument("--role", required=True, choices=("admin", "organiser", "participant", "assessor"))
    tc.add_argument("--name", default="")
    tc.add_argument("--team", help="participant tokens: the team")
    tc.add_argument("--collection", action="append", dest="collections", default=[],
                    help="organiser and assessor tokens: a collection they organise or judge; participant "
                         "tokens: the only collections they reach (none given: wherever the team is enrolled) "
                         "(repeatable)")
    tc.add_argument("--topic", action="append", dest="topics", default=[],
                    help="assessor tokens: a topic they judge (repeatable)")


@command("token", "API tokens", _token_arguments)
def cmd_token_create(args: argparse.Namespace, out: TextIO) -> int:
    from sqlalchemy import select

    from service.evaluation.permissions.access import create_token
    from service.store import migrate
    from service.store.db import transaction
    from service.store.models import Collection

    url = database_url()
    migrate.upgrade(url)  # the first admin token is often the first command on a new database
    with transaction(sessions(url)) as s:
        ids = []
        for name in args.collections:
            cid = s.scalar(select(Collection.id).where(Collection.name == name))
            if cid is None:
                raise InvalidMeasure(f"no collection named {name!r}")
            ids.append(cid)
        secret, token = create_token(s, args.role, name=args.name, team=args.team, collections=ids,
                                     topics=args.topics or None, actor="cli")
    out.write(f"{secret}\n")
    print(f"{args.role} token {token.prefix}... created; it is shown only this once", file=sys.stderr)
    return 0
