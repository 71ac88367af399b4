"""Run files evaluated in worker processes give the floats one in-process call gives
(service/metrics/run_files.py), and a bad file is reported as the same error, naming it."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from service.errors import InvalidInput
from service.formats.readers import parse_qrels, read_run
from service.metrics.run_files import GROUP, evaluate_run_files
from service.metrics.scoring import DEFAULT_MEASURES, EvalSettings, evaluate
from service.sample import CollectionSpec, generate

MEASURES = (*DEFAULT_MEASURES, "bpref", "infAP", "AP(judged_only=true)", "ERR@20", "RBP(p=0.8)", "P@5")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    """Qrels and 11 runs of different depths (ties, missing topics, unjudged documents); one
    of them gzipped."""
    folder = tmp_path_factory.mktemp("runs")
    spec = CollectionSpec(topics=25, runs=11, depth=200, docs_per_topic=300, judged_per_topic=120, seed=17,
                          missing_topic_rate=0.15)
    qrels, runs = generate(spec)
    paths = []
    for i, (tag, text) in enumerate(runs.items()):
        keep = 30 + 17 * i
        lines = [line for line in text.splitlines() if int(line.split()[3]) <= keep]
        if i % 3 == 0:  # ties: a score repeated within a topic
            lines = [" ".join((*p[:4], "1.0", *p[5:])) if int(p[3]) % 4 == 0 else line
                     for line, p in ((line, line.split()) for line in lines)]
        data = ("\n".join(lines) + "\n").encode()
        path = folder / f"{tag}.run"
        if i == 4:
            path = folder / f"{tag}.run.gz"
            path.write_bytes(gzip.compress(data))
        else:
            path.write_bytes(data)
        paths.append(str(path))
    return qrels, paths


@pytest.mark.parametrize("processes", [1, 2, 3])
@pytest.mark.parametrize("missing", ["zero", "skip"])
def test_workers_give_the_floats_of_one_call(files: tuple[str, list[str]], processes: int, missing: str) -> None:
    qrels_text, paths = files
    assert len(paths) > 2 * GROUP  # several groups, the last one short
    qrels = parse_qrels(qrels_text.encode(), "qrels")
    settings = EvalSettings(missing=missing)  # type: ignore[arg-type]
    expected = evaluate(qrels, [read_run(p) for p in paths], MEASURES, settings)
    got = evaluate_run_files(qrels, paths, MEASURES, settings, processes=processes)
    assert got.runs == expected.runs and got.topics == expected.topics and got.measures == expected.measures
    for m in expected.measures:
        assert np.array_equal(got.per_topic(m), expected.per_topic(m), equal_nan=True), m
        assert np.array_equal(got.means(m), expected.means(m), equal_nan=True), m
    if missing == "skip":
        assert np.isnan(got.per_topic("AP")).any()  # the missing topics were there to be left out


def test_a_bad_file_in_a_worker_is_the_same_error_naming_it(files: tuple[str, list[str]], tmp_path: Path) -> None:
    qrels_text, paths = files
    bad = tmp_path / "broken.run"
    bad.write_text("0001 Q0 D1 1 1.0 broken\n0001 Q0 D2 2 abc broken\n")
    with pytest.raises(InvalidInput) as err:
        evaluate_run_files(parse_qrels(qrels_text.encode(), "qrels"), [*paths[:6], str(bad), *paths[6:]],
                           ["AP"], processes=2)
    assert err.value.source == str(bad) and err.value.line == 2 and str(bad) in str(err.value)


def test_no_runs_is_an_empty_evaluation(files: tuple[str, list[str]]) -> None:
    got = evaluate_run_files(parse_qrels(files[0].encode(), "qrels"), [], ["AP"], processes=2)
    assert got.runs == () and got.per_topic("AP").shape == (0, len(got.topics))
