"""NIST's own trec_eval test files (../shared/conformance/trec_eval): Cranfield reproduces
what trec_eval 10.0 prints, per topic and on average, for every measure they share.

The expected values are the `out.*` files, made by the trec_eval command lines listed
in that folder's README (e.g. `out.test.aqc` = `trec_eval -m all_trec -q -c qrels.test
results.trunc`). trec_eval prints four decimals, so values agree to within half a unit
of the fourth decimal.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from service.formats.readers import read_qrels, read_run
from service.metrics import EvalSettings, evaluate

from tests.conftest import require_shared, shared_dir

CONFORMANCE = shared_dir() / "conformance" / "trec_eval"


@pytest.fixture(autouse=True)
def _conformance_data() -> None:
    require_shared("conformance/trec_eval")

# trec_eval measure -> Cranfield metric (trec_eval's -l sets `rel` on the binary metrics).
CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
MAPPING: dict[str, str] = {
    "map": "AP",
    "bpref": "bpref",
    "recip_rank": "RR",
    "Rprec": "Rprec",
    "ndcg": "MSnDCG",
    "num_ret": "NumRet",
    "num_rel": "NumRel",
    "num_rel_ret": "NumRelRet",
    # trec_eval 10's rbp uses p = 0.9 and divides each level by the highest level judged
    # *for the topic*; Cranfield's default divides by the collection's top level H.
    "rbp": "RBP(p=0.9,scale=topic)",
    "rbp_resid": "RBPresidual(p=0.9)",
    **{f"P_{k}": f"P@{k}" for k in CUTOFFS},
    **{f"recall_{k}": f"Recall@{k}" for k in CUTOFFS},
    **{f"map_cut_{k}": f"AP@{k}" for k in CUTOFFS},
    **{f"ndcg_cut_{k}": f"MSnDCG@{k}" for k in CUTOFFS},
    **{f"success_{k}": f"Hit@{k}" for k in (1, 5, 10)},
    **{f"unj_{k}": f"Judged@{k}" for k in (5, 10, 20)},  # unj_k = 1 - Judged@k
}
BINARY_METRICS = {"AP", "bpref", "RR", "Rprec", "NumRel", "NumRelRet", "P", "Recall", "Hit"}
SUMMED = {"num_ret", "num_rel", "num_rel_ret"}  # trec_eval's 'all' line sums these


def read_expected(name: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for line in (CONFORMANCE / name).read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] in MAPPING:
            out[parts[0]][parts[1]] = float(parts[2])
    return out


def cranfield_name(trec_name: str, rel: int, max_level: int = 1) -> str:
    name = MAPPING[trec_name]
    base = name.split("@")[0].split("(")[0]
    if rel != 1 and base in BINARY_METRICS:
        return f"{base}(rel={rel})" + (f"@{name.split('@')[1]}" if "@" in name else "")
    return name


# (expected file, qrels, run, settings, rel)
CASES = {
    "out.test.aq": ("qrels.test", "results.test", EvalSettings(missing="skip"), 1),
    "out.test.aqc": ("qrels.test", "results.trunc", EvalSettings(missing="zero"), 1),
    "out.test.aqcM": ("qrels.test", "results.trunc", EvalSettings(missing="zero", depth=100), 1),
    "out.test.aql": ("qrels.rel_level", "results.test", EvalSettings(missing="skip"), 2),
}


def _case_params() -> list[tuple[str, str]]:
    params = []
    for out_file in CASES:
        if not (CONFORMANCE / out_file).exists():
            continue
        for measure in read_expected(out_file):
            params.append((out_file, measure))
    return params


_cache: dict[str, object] = {}


def _evaluation(out_file: str):  # type: ignore[no-untyped-def]
    if out_file not in _cache:
        qrels_name, run_name, settings, rel = CASES[out_file]
        expected = read_expected(out_file)
        qrels = read_qrels(CONFORMANCE / qrels_name)
        names = sorted({cranfield_name(m, rel, qrels.max_level) for m in expected} | {f"NumRet@{k}" for k in (5, 10, 20)})
        _cache[out_file] = (evaluate(qrels, [read_run(CONFORMANCE / run_name)], names, settings), qrels.max_level)
    return _cache[out_file]


@pytest.mark.parametrize(("out_file", "trec_measure"), _case_params() if CONFORMANCE.is_dir() else [("missing", "missing")])
def test_reproduces_trec_eval_10(out_file: str, trec_measure: str) -> None:
    rel = CASES[out_file][3]
    expected = read_expected(out_file)[trec_measure]
    ev, max_level = _evaluation(out_file)
    name = cranfield_name(trec_measure, rel, max_level)
    run = ev.runs[0]
    missing = [t for t in ev.topics if ev.value(run, "NumRet@5", t) == 0]
    if trec_measure == "rbp_resid":
        # Documented difference (docs/definitions.md): an empty or missing list has residual 1
        # in Cranfield (nothing of the user's attention is accounted for); trec_eval prints 0.
        expected = {t: v for t, v in expected.items() if t not in missing and t != "all"}
    checked = 0
    for topic, want in expected.items():
        if trec_measure.startswith("unj_"):
            # unj_k = unjudged documents in the top k / k; Judged@k = judged ones / k.
            k = int(trec_measure.split("_")[1])
            per_topic = ev.per_topic(f"NumRet@{k}")[0] / k - ev.per_topic(name)[0]
            got = float(per_topic.mean()) if topic == "all" else float(per_topic[ev.topics.index(topic)])
        elif topic == "all":
            got = float(ev.per_topic(name)[0].sum()) if trec_measure in SUMMED else float(ev.means(name)[0])
        else:
            got = ev.value(run, name, topic)
        assert got == pytest.approx(want, abs=0.5e-4 + 1e-12), f"{trec_measure} ({name}) topic {topic}"
        checked += 1
    assert checked >= 1


def test_qrels_with_comments_give_the_same_result() -> None:
    # out.test is also what `trec_eval qrels.test.with-comments results.test` prints.
    plain = evaluate(read_qrels(CONFORMANCE / "qrels.test"), [read_run(CONFORMANCE / "results.test")], ["AP", "bpref"])
    commented = evaluate(
        read_qrels(CONFORMANCE / "qrels.test.with-comments"), [read_run(CONFORMANCE / "results.test")], ["AP", "bpref"]
    )
    for m in ("AP", "bpref"):
        assert plain.per_topic(m).tolist() == commented.per_topic(m).tolist()
    expected = {line.split()[0]: line.split()[2] for line in (CONFORMANCE / "out.test").read_text().splitlines()}
    expected = {k: float(v) for k, v in expected.items() if k != "runid"}
    assert float(commented.means("AP")[0]) == pytest.approx(expected["map"], abs=0.5e-4)
    assert float(commented.means("bpref")[0]) == pytest.approx(expected["bpref"], abs=0.5e-4)


def test_comment_files_with_msmarco_ids() -> None:
    # out.comment.test: `trec_eval qrels.comment.test results.comment.test` ('#' lines in both
    # files; document ids that contain '#').
    expected = {line.split()[0]: line.split()[2] for line in (CONFORMANCE / "out.comment.test").read_text().splitlines()}
    run = read_run(CONFORMANCE / "results.comment.test")
    ev = evaluate(read_qrels(CONFORMANCE / "qrels.comment.test"), [run],
                  ["AP", "bpref", "RR", "P@10", "Rprec", "NumRet", "NumRelRet"],
                  EvalSettings(missing="skip", no_relevant="count"))
    assert run.tag == expected["runid"]
    assert int((~np.isnan(ev.per_topic("AP")[0])).sum()) == int(expected["num_q"])
    assert float(ev.per_topic("NumRet")[0].sum()) == float(expected["num_ret"])
    assert float(ev.per_topic("NumRelRet")[0].sum()) == float(expected["num_rel_ret"])
    for trec, ours in (("map", "AP"), ("bpref", "bpref"), ("recip_rank", "RR"), ("P_10", "P@10"),
                       ("Rprec", "Rprec")):
        assert float(ev.means(ours)[0]) == pytest.approx(float(expected[trec]), abs=0.5e-4), trec
