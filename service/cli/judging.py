"""Pooling and assessment commands: pool, judgments add, reusability."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TextIO

from service.cli.common import cli_principal, database_url, read_bytes, send, sessions
from service.cli.registry import command


def _pool_arguments(pl: argparse.ArgumentParser) -> None:
    pl.add_argument("--collection", required=True)
    kind = pl.add_mutually_exclusive_group(required=True)
    kind.add_argument("--depth", type=int, help="a depth-k pool: the union of the runs' top K, less what is judged")
    kind.add_argument("--strata", metavar="FIRST-LAST:RATE,...",
                      help="a stratified-sampling pool, e.g. 1-10:1,11-100:0.1 (ranks 1-10 judged in full, "
                           "11-100 sampled at 10%%); only the sampled documents are written")
    pl.add_argument("--seed", type=int, help="with --strata: the seed of the draw (default: random, printed)")
    pick = pl.add_mutually_exclusive_group()
    pick.add_argument("--primary-only", action="store_true", help="only each team's primary runs")
    pick.add_argument("--max-priority", type=int, help="only runs within this judging priority (TREC)")
    pl.add_argument("--out", required=True, help="folder for the per-topic files (documents in a seeded random order)")


@command("pool", "build a depth-k pool (less what is judged) or a stratified-sampling pool of the submitted runs "
                 "and write one file per topic for the assessors", _pool_arguments)
def cmd_pool(args: argparse.Namespace, out: TextIO) -> int:
    from service.errors import BadRequest
    from service.evaluation.judging import assessments, pools
    from service.evaluation.organising.setup import get_collection
    from service.store.models import Pool

    url = database_url()
    me = cli_principal()
    selection = "primary" if args.primary_only else "priority" if args.max_priority is not None else "all"
    if args.seed is not None and args.strata is None:
        raise BadRequest("--seed is for a stratified pool (--strata)")
    strata = pools.parse_strata(args.strata) if args.strata is not None else None
    with sessions(url)() as s:
        cid = get_collection(s, args.collection).id
    pid = pools.create_pool(sessions(url), lambda s: me, cid, args.depth, selection, args.max_priority,
                              kind="stratified" if strata else "depth", strata=strata, seed=args.seed)
    with sessions(url)() as s:
        pool = s.get(Pool, pid)
        doc = pools.pool_doc(s, pool, me)
        folder = Path(args.out) / f"pool-{pool.number}"
        folder.mkdir(parents=True, exist_ok=True)
        for topic, counts in pool.counts.items():
            if counts["new"]:
                (folder / f"{topic}.txt").write_text(assessments.assessment_file(s, pool.id, me, topic))
        (folder / "pool.json").write_text(json.dumps(doc, indent=2, default=str))
    if doc["kind"] == "stratified":
        layers = ", ".join(f"{st['first_rank']}-{st['last_rank']} at {st['rate']:g}: {st['sampled']} of "
                           f"{st['pooled']}" for st in doc["strata"])
        out.write(f"stratified pool {doc['number']} (id {doc['id']}) of {args.collection}: seed {doc['seed']}, "
                  f"{len(doc['runs'])} runs ({selection}), strata {layers}; {doc['size']} sampled documents to "
                  f"judge over {sum(1 for c in doc['counts'].values() if c['new'])} topics\nfiles: {folder}\n")
        return 0
    out.write(f"pool {doc['number']} (id {doc['id']}) of {args.collection}: depth {doc['depth']}, "
              f"{len(doc['runs'])} runs ({selection}), {doc['size']} documents to judge over "
              f"{sum(1 for c in doc['counts'].values() if c['new'])} topics")
    if doc["excludes_judged_in_qrels_version"]:
        out.write(f", leaving out what qrels version {doc['excludes_judged_in_qrels_version']} judges")
    out.write(f"\nfiles: {folder}\n")
    return 0


def _judgments_arguments(jd: argparse.ArgumentParser) -> None:
    jsub = jd.add_subparsers(dest="judgments_command", required=True)
    ja = jsub.add_parser("add", help="check judgments against a pool; they become a new qrels version")
    ja.add_argument("--pool", type=int, required=True, help="the pool's id")
    ja.add_argument("file")


@command("judgments", "judgments of a pool", _judgments_arguments)
def cmd_judgments_add(args: argparse.Namespace, out: TextIO) -> int:
    from service.evaluation.judging import judgments

    outcome = judgments.submit_judgments(sessions(database_url()), lambda s: cli_principal(), args.pool,
                                       read_bytes(args.file), source=args.file)
    doc = outcome.result
    send(outcome.followups)
    out.write(f"qrels version {doc['qrels_version']}: {doc['judgments']} judgments of {len(doc['topics'])} topics "
              f"accepted; job {doc['job']} re-evaluates the runs\n")
    return 0


def _reusability_arguments(ru: argparse.ArgumentParser) -> None:
    ru.add_argument("--collection", required=True)
    ru.add_argument("--metric", help="default: the official metric")
    ru.add_argument("--depth", type=int, help="default: the newest pool's depth (or 100)")
    ru.add_argument("--wait", type=float, default=0, metavar="SECONDS", help="wait for the result and print it")


@command("reusability", "pool statistics and leave-one-team-out (computed by the workers)", _reusability_arguments)
def cmd_reusability(args: argparse.Namespace, out: TextIO) -> int:
    from service.evaluation.analysing import analyses
    from service.evaluation.organising.setup import get_collection
    from service.store.db import transaction
    from service.store.models import Analysis

    url = database_url()
    me = cli_principal()
    with transaction(sessions(url)) as s:
        outcome = analyses.request(s, get_collection(s, args.collection), me, args.metric, None, args.depth)
        analysis_id = outcome.result.id
    send(outcome.followups)
    deadline = time.monotonic() + args.wait
    while True:
        with sessions(url)() as s:
            row = s.get(Analysis, analysis_id)
            doc = analyses.doc(s, row, me)
        if doc["status"] in ("done", "failed") or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    out.write(json.dumps(doc, indent=2) + "\n" if args.wait else f"analysis {analysis_id} queued\n")
    return 0 if doc["status"] != "failed" else 1
