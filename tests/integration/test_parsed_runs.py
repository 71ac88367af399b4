"""A worker keeps the runs it parsed for the next re-evaluation (issue 38: ``setup.parsed_run``):
a qrels correction scores every run again without decompressing and parsing it again, with the
figures of a fresh parse; a run whose file changed is parsed again; the cache keeps within its
size, least recently used out first."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select

from service.evaluation.common.work import Limits
from service.evaluation.computing.task_table import run_here
from service.evaluation.organising import setup
from service.evaluation.organising.planning import plan_job
from service.evaluation.organising.setup import ConfigSpec, add_qrels, add_run, ensure_collection
from service.sample import CollectionSpec, generate
from service.store.arrays import unpack
from service.store.db import session_factory, transaction
from service.store.migrate import upgrade
from service.store.models import QrelsVersion, Run, RunEvaluation

SPEC = CollectionSpec(topics=6, docs_per_topic=40, runs=4, depth=30, seed=7)


def _stored_scores(factory, version: int) -> dict[tuple[str, str], np.ndarray]:  # type: ignore[no-untyped-def]
    with factory() as s:
        qv = s.scalar(select(QrelsVersion).where(QrelsVersion.version == version))
        out = {}
        for ev in s.scalars(select(RunEvaluation).where(RunEvaluation.qrels_version_id == qv.id)):
            tag = s.get(Run, ev.run_id).tag
            out.update({(tag, sc.metric): unpack(sc.values) for sc in ev.scores})
        return out


def _collection(tmp: Path, name: str, limits: Limits, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, dict]:
    """Load a generated collection and correct its qrels in-process; (parses during the load,
    parses during the correction, the correction's stored scores)."""
    url = f"sqlite:///{tmp / (name + '.sqlite')}"
    upgrade(url)
    factory = session_factory(url)
    parses = [0]
    real = setup.load_run

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        parses[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr("service.evaluation.computing.evaluating.load_run", counting)
    qrels, runs = generate(SPEC)
    with transaction(factory) as s:
        coll = ensure_collection(s, "c", ConfigSpec(official_metric="AP", metrics=("AP", "nDCG@10", "P@5")), "t")
        add_qrels(s, coll, qrels.encode(), "v1", "t")
        for tag, text in runs.items():
            add_run(s, coll, text.encode(), f"{tag}.run")
        _, followups = plan_job(s, coll, "load")
    run_here(factory, followups, limits)
    loaded = parses[0]
    corrected = "".join(line.rsplit(" ", 1)[0] + " L1\n" if i % 4 == 0 else line + "\n"
                        for i, line in enumerate(qrels.splitlines()))
    with transaction(factory) as s:
        coll = ensure_collection(s, "c", None)
        previous = coll.current_qrels_id
        add_qrels(s, coll, corrected.encode(), "v2", "t")
        _, followups = plan_job(s, coll, "qrels", previous_qrels_id=previous)
    run_here(factory, followups, limits)
    return loaded, parses[0] - loaded, _stored_scores(factory, 2)


def test_a_reevaluation_scores_the_runs_parsed_before_with_the_figures_of_a_fresh_parse(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(setup, "_RUNS_CACHE", type(setup._RUNS_CACHE)())
    monkeypatch.setattr(setup, "_RUNS_CACHE_BYTES", [0])
    kept = _collection(tmp_path, "kept", Limits(), monkeypatch)
    assert kept[0] == SPEC.runs and kept[1] == 0  # the correction parsed nothing again
    fresh = _collection(tmp_path, "fresh", Limits(run_cache_mb=0), monkeypatch)
    assert fresh[0] == SPEC.runs and fresh[1] == SPEC.runs  # without the cache every run is parsed again
    assert kept[2].keys() == fresh[2].keys() and len(kept[2]) >= 3 * SPEC.runs
    for key, values in fresh[2].items():
        assert np.array_equal(kept[2][key], values, equal_nan=True), key


def test_the_parsed_runs_stay_within_their_size_and_a_changed_file_is_parsed_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(setup, "_RUNS_CACHE", type(setup._RUNS_CACHE)())
    monkeypatch.setattr(setup, "_RUNS_CACHE_BYTES", [0])
    _, runs = generate(SPEC)
    parsed = [setup.parse_run(text.encode(), tag, "score") for tag, text in runs.items()]
    size = setup._run_bytes(parsed[0])
    limit_mb = 2.5 * size / 2**20  # room for two runs
    keys = [("db", i, "checksum", "score") for i in range(len(parsed))]
    for key, run in zip(keys, parsed):
        setup.keep_parsed_run(key, run, limit_mb)
        assert setup._RUNS_CACHE_BYTES[0] <= limit_mb * 2**20
    assert setup.parsed_run(keys[0]) is None and setup.parsed_run(keys[1]) is None  # the oldest went first
    assert setup.parsed_run(keys[-1]) is parsed[-1]
    assert setup.parsed_run(("db", len(parsed) - 1, "another checksum", "score")) is None  # a new file
    with pytest.raises(ValueError, match="read-only"):  # shared by every reader: nobody writes into it
        parsed[-1].scores[0] = 1.0
    setup.keep_parsed_run(("db", 99, "c", "score"), parsed[0], 0)  # no room at all: nothing kept
    assert setup.parsed_run(("db", 99, "c", "score")) is None
