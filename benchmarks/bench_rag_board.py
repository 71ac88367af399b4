"""A board of answers after an assignment upload (issue 35): 45 answer runs x 56 topics x 20
nuggets a topic, scored, tested and stored by the workers' use cases.

    python benchmarks/bench_rag_board.py [--runs 45 --topics 56 --nuggets 20] [--repeat 3] [--database URL]

A collection of answers (task kind answers, the default configuration: Vital strict official,
the six nugget scores, support precision and recall, the references' nDCG@20 and Recall@20;
the default significance settings: the paired bootstrap, B = 10,000 settled sequentially) is
made in a fresh database (SQLite in a temporary folder unless ``--database``), with generated
answer runs (2024 format, 3 sentences and 5 references an answer) and a first assignments
version, all scored. What is timed: an upload of a new assignments version through the upload
use case, then every piece of work it plans run in this process, as one worker runs them
(``run_here``: each run's evaluation, then the pairwise tests of every stored metric), until the
board of the new version is stored and tested; then the board read through the API's use case.
Two kinds of new version, each timed ``--repeat`` times:

* ``redrawn``: another assessor's labels, every (run, topic) row drawn again: every run and
  every nugget metric's test computed again (the worst case);
* ``corrected``: an assessor's correction, the labels of 3 runs on one topic changed: those runs
  re-scored and the nugget metrics re-tested; the other runs' results and the tests of the
  metrics whose scores did not move (support, the references' nDCG and recall) carried.

Printed per kind: the upload (validation and storage), the scoring and storing of the runs, the
tests, the whole, and for scale ``cranfield rag eval``'s computation of the same scores in file
mode (``evaluate_rag``, in process). Goal (the issue): within seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def assignments(runs: int, topics: int, nuggets: int, seed: int) -> bytes:
    """NIST's format: a row per (run, topic), the topic's nuggets (a third vital) each assigned."""
    import numpy as np

    rng = np.random.default_rng(seed)
    labels = np.array(["support", "partial_support", "not_support"])
    lines = []
    for r in range(runs):
        quality = 0.2 + 0.6 * r / max(runs - 1, 1)
        for t in range(topics):
            drawn = rng.choice(3, size=nuggets, p=[quality * 0.7, quality * 0.3, 1 - quality])
            lines.append(json.dumps({"qid": f"T{t:03d}", "query": f"question {t}", "run_id": f"run{r:02d}",
                                     "nuggets": [{"text": f"fact {t}.{k}", "importance": "vital" if k % 3 == 0
                                                  else "okay", "assignment": str(labels[drawn[k]])}
                                                 for k in range(nuggets)]}))
    return ("\n".join(lines) + "\n").encode()


def corrected(body: bytes, runs: int, seed: int) -> bytes:
    """``body`` with one assessor's correction: on one topic, 3 runs' labels moved one grade."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = [json.loads(line) for line in body.splitlines()]
    topic = rows[int(rng.integers(len(rows)))]["qid"]
    fixed = {f"run{int(r):02d}" for r in rng.choice(runs, size=min(3, runs), replace=False)}
    step = {"support": "partial_support", "partial_support": "not_support", "not_support": "support"}
    for row in rows:
        if row["qid"] == topic and row["run_id"] in fixed:
            for nugget in row["nuggets"]:
                nugget["assignment"] = step[nugget["assignment"]]
    return ("\n".join(json.dumps(row) for row in rows) + "\n").encode()


def answer_run(r: int, topics: int) -> bytes:
    lines = []
    for t in range(topics):
        refs = [f"doc{t}_{(r + k) % 40}" for k in range(5)]
        answer = [{"text": f"Sentence {s} of run {r} on topic {t}.", "citations": [s % 5]} for s in range(3)]
        lines.append(json.dumps({"run_id": f"run{r:02d}", "topic_id": f"T{t:03d}", "topic": f"question {t}",
                                 "references": refs, "response_length": 24, "answer": answer}))
    return ("\n".join(lines) + "\n").encode()


def qrels(topics: int) -> bytes:
    return "".join(f"T{t:03d} 0 doc{t}_{d} {d % 4}\n" for t in range(topics) for d in range(0, 40, 3)).encode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=45)
    ap.add_argument("--topics", type=int, default=56)
    ap.add_argument("--nuggets", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--database", help="a database URL (default: SQLite in a temporary folder)")
    args = ap.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="bench-rag-"))
    url = args.database or f"sqlite:///{folder / 'bench.sqlite'}"
    os.environ["CRANFIELD_DATABASE_URL"] = url
    from service.config import settings

    settings.cache_clear()
    from sqlalchemy import select

    from service.evaluation.common.work import TaskName
    from service.evaluation.computing.task_table import Limits, run_here, use_case
    from service.evaluation.judging import answer_judgments
    from service.evaluation.organising import answer_bundle, answers
    from service.evaluation.organising.setup import ensure_collection, official_set
    from service.evaluation.permissions.access import Principal
    from service.evaluation.publishing import boards
    from service.formats.rag_judgments import read_assignments
    from service.metrics.rag_scoring import evaluate_rag
    from service.store.db import session_factory, transaction
    from service.store.migrate import upgrade
    from service.store.models import Collection, Significance

    upgrade(url, "head")
    factory = session_factory(url)
    first = assignments(args.runs, args.topics, args.nuggets, args.seed)
    parts = answer_bundle.replaced(answer_bundle.replaced(answer_bundle.empty(), "assignments", first, "a1.jl"),
                                   "qrels", qrels(args.topics), "qrels.txt")
    judged = answer_bundle.read(parts)
    with transaction(factory) as s:
        coll = ensure_collection(s, "rag", None, "bench", task_kind="answers")
        from service.evaluation.organising.setup import ConfigSpec, set_config

        set_config(s, coll, ConfigSpec(official_metric=answers.DEFAULT_OFFICIAL, metrics=answers.DEFAULT_METRICS))
        coll.answer_settings = {"format": "rag24"}
        _, _, followups = answer_judgments.store_version(s, coll, official_set(s, coll),
                                                         answer_bundle.encode(parts), judged, "a1.jl", "bench")
        for r in range(args.runs):
            data = answer_run(r, args.topics)
            parsed = answers.parse(data, f"run{r}.jsonl", coll.answer_settings, set(judged.topics()))
            answers.add_answer_run(s, coll, data, f"run{r}.jsonl", parsed, team=f"team{r % 15}", actor="bench")
        from service.evaluation.organising.planning import plan_job

        _, followups = plan_job(s, coll, "load")
        cid = coll.id
    run_here(factory, list(followups))
    admin = Principal(name="bench", role="admin")
    print(f"{args.runs} answer runs x {args.topics} topics x {args.nuggets} nuggets; {url.split(':')[0]}; "
          f"load before: {os.getloadavg()[0]:.2f}", flush=True)

    kinds = ("redrawn", "corrected")
    phases: dict[str, dict[str, list[float]]] = {
        kind: {"upload": [], "score and store": [], "tests": [], "whole": [], "file mode": []} for kind in kinds}
    body = first
    for i in range(2 * args.repeat):
        kind = kinds[i % 2]
        body = assignments(args.runs, args.topics, args.nuggets, args.seed + 1 + i) if kind == "redrawn" \
            else corrected(body, args.runs, args.seed + 1 + i)
        started = time.perf_counter()
        outcome = answer_judgments.upload(factory, lambda _s: admin, cid, "assignments", body, f"a{i + 2}.jl")
        uploaded = time.perf_counter()
        # each run's evaluation (what the workers' items do), collecting what they plan next: the tests
        planned = []
        for f in outcome.followups:
            planned += use_case(f.task)(factory, f.id, Limits())
        scored = time.perf_counter()
        run_here(factory, planned)
        done = time.perf_counter()
        with factory() as s:
            coll = s.get(Collection, cid)
            board = boards.leaderboard_doc(s, coll, admin)
            stored = s.scalars(select(Significance.metric).where(
                Significance.qrels_version_id == coll.current_qrels_id)).all()
        assert answers.DEFAULT_OFFICIAL in stored, "the official metric's test is stored"
        assert len(board["rows"]) == args.runs and board["qrels_version"] == outcome.result["version"]
        t0 = time.perf_counter()
        evaluate_rag(answers.DEFAULT_METRICS[:6], read_assignments(body, "a.jl"), [])
        file_mode = time.perf_counter() - t0
        for name, value in (("upload", uploaded - started), ("score and store", scored - uploaded),
                            ("tests", done - scored), ("whole", done - started), ("file mode", file_mode)):
            phases[kind][name].append(value)
        print(f"  {kind} {i // 2 + 1}/{args.repeat}: whole {done - started:.2f} s (upload {uploaded - started:.2f}, "
              f"scored {scored - uploaded:.2f} for {sum(f.task == TaskName.EVALUATE_ITEM for f in outcome.followups)} runs re-scored, tests "
              f"{done - scored:.2f}); file mode {file_mode:.2f} s", flush=True)
    for kind in kinds:
        print(f"{kind}:")
        for name, values in phases[kind].items():
            print(f"  {name:16s}: {statistics.median(values):.2f} s (median of {args.repeat})")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
