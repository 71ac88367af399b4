"""Invariants of the metrics, checked on random topics (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from service.formats.types import Qrels, Run
from service.metrics import REGISTRY, EvalSettings, evaluate
from service.metrics.spec import OWN_EVALUATOR_FAMILIES

# Metrics normalised to their ideal: in [0, 1] and exactly 1 for an ideal ranking.
IDEAL_ONE = [
    "AP", "AP'", "Q", "Q(beta=10)", "Q'", "Q(norm=minRk)@5", "Rmeasure", "genAP", "nDCG", "nDCG@5",
    "nDCG(base=5)@10", "MSnDCG", "MSnDCG@5", "nCG@5", "nERR@10", "nERR(stop=linear)", "RR", "Omeasure",
    "Pmeasure", "Pplus", "Rprec", "bpref", "bpref_R", "bpref_N", "rpref_relative2", "nCGavg@5", "nDCGavg@5", "AP(rel=2)",
    "AP(norm=minRk)@5",
]
# Bounded in [0, 1] but not 1 for every ideal ranking (docs/definitions.md says why).
BOUNDED = ["AP@5", "Q@5", "bpref_relative", "rpref_relative", "ERR", "ERR@5", "RBP", "P@5", "Recall@5", "Judged@5", "Hit@5",
           "rpref_N", "RBPresidual"]


def test_ideal_flags_match_this_list() -> None:
    flagged = {n for n, d in REGISTRY.items() if d.ideal_is_one and d.family not in OWN_EVALUATOR_FAMILIES}
    listed = {m.split("(")[0].split("@")[0].rstrip("'") for m in IDEAL_ONE}
    assert flagged == listed


@st.composite
def topic(draw):  # type: ignore[no-untyped-def]
    """A judged topic (levels 0..3, some -1) and a ranking with unjudged documents."""
    n_docs = draw(st.integers(1, 25))
    levels = draw(st.lists(st.integers(-1, 3), min_size=n_docs, max_size=n_docs))
    assume(any(lv >= 1 for lv in levels))
    judgments = {f"d{i}": lv for i, lv in enumerate(levels)}
    pool = list(judgments) + [f"u{i}" for i in range(draw(st.integers(0, 8)))]
    ranking = draw(st.permutations(pool))
    ranking = ranking[: draw(st.integers(0, len(ranking)))]
    gains = draw(st.lists(st.integers(1, 12), min_size=3, max_size=3, unique=True).map(sorted))
    return judgments, ranking, {1: gains[0], 2: gains[1], 3: gains[2]}


def scores(judgments, ranking, names, gains):  # type: ignore[no-untyped-def]
    ev = evaluate(
        Qrels.from_mapping({"t": judgments}),
        [Run.from_rankings("r", {"t": ranking})],
        names,
        EvalSettings(gains=tuple(gains.items()), max_level=3),
    )
    return {str(m): float(ev.per_topic(m)[0, 0]) for m in ev.measures}


def ideal_ranking(judgments, gains):  # type: ignore[no-untyped-def]
    rel = sorted((d for d, lv in judgments.items() if lv >= 1), key=lambda d: -gains[judgments[d]])
    nonrel = [d for d, lv in judgments.items() if lv == 0]
    return rel + nonrel


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topic())
def test_bounded_and_ideal_is_one(t) -> None:  # type: ignore[no-untyped-def]
    judgments, ranking, gains = t
    got = scores(judgments, ranking, IDEAL_ONE + BOUNDED, gains)
    for name, v in got.items():
        assert -1e-12 <= v <= 1 + 1e-12, (name, v)
    ideal = scores(judgments, ideal_ranking(judgments, gains), IDEAL_ONE, gains)
    for name, v in ideal.items():
        if name == "AP(rel=2)" and not any(lv >= 2 for lv in judgments.values()):
            assert v == 0.0
            continue
        assert v == pytest.approx(1.0, abs=1e-12), name


@settings(max_examples=150, deadline=None)
@given(topic(), st.randoms(use_true_random=False))
def test_shuffling_non_relevant_documents_after_the_last_relevant_one(t, rnd) -> None:  # type: ignore[no-untyped-def]
    judgments, ranking, gains = t
    last_rel = max((i for i, d in enumerate(ranking) if judgments.get(d, -1) >= 1), default=-1)
    tail = ranking[last_rel + 1 :]
    rnd.shuffle(tail)
    shuffled = ranking[: last_rel + 1] + tail
    names = [n for n in IDEAL_ONE + BOUNDED if not n.startswith(("Judged", "RBPresidual"))]
    assert scores(judgments, shuffled, names, gains) == pytest.approx(scores(judgments, ranking, names, gains), abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(topic())
def test_q_is_at_least_ap_on_binary_qrels_and_equals_it_at_beta_zero(t) -> None:  # type: ignore[no-untyped-def]
    judgments, ranking, gains = t
    binary = {d: min(lv, 1) for d, lv in judgments.items()}
    ev = evaluate(Qrels.from_mapping({"t": binary}), [Run.from_rankings("r", {"t": ranking})], ["Q", "AP"])
    assert ev.value("r", "Q", "t") >= ev.value("r", "AP", "t") - 1e-12
    graded = scores(judgments, ranking, ["Q(beta=0)", "AP"], gains)
    assert graded["Q(beta=0)"] == pytest.approx(graded["AP"], abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(topic())
def test_judged_only_equals_evaluating_the_condensed_list(t) -> None:  # type: ignore[no-untyped-def]
    judgments, ranking, gains = t
    condensed = [d for d in ranking if judgments.get(d, -1) >= 0]
    names = ["AP", "Q", "nDCG@10", "nERR@10", "RR", "Pplus"]
    primed = scores(judgments, ranking, [f"{n.split('@')[0]}(judged_only=true)" + (f"@{n.split('@')[1]}" if "@" in n else "") for n in names], gains)
    plain = scores(judgments, condensed, names, gains)
    assert list(primed.values()) == pytest.approx(list(plain.values()), abs=1e-12)


def test_missing_topic_scores_zero_or_is_skipped() -> None:
    qrels = Qrels.from_mapping({"a": {"x": 1}, "b": {"y": 2}, "c": {"z": 0}})
    run = Run.from_rankings("r", {"a": ["x"], "zzz": ["q"]})
    names = ["AP", "nDCG@10", "RBPresidual", "Q"]
    zero = evaluate(qrels, [run], names)
    assert zero.topics == ("a", "b")  # "c" has no relevant document: left out by default
    assert zero.per_topic("AP")[0].tolist() == [1.0, 0.0]
    assert zero.per_topic("RBPresidual")[0, 1] == 1.0  # an empty list leaves everything unknown
    assert zero.means("AP")[0] == 0.5
    skip = evaluate(qrels, [run], names, EvalSettings(missing="skip"))
    assert np.isnan(skip.per_topic("AP")[0, 1]) and skip.means("AP")[0] == 1.0
    counted = evaluate(qrels, [run], names, EvalSettings(no_relevant="count"))
    assert counted.topics == ("a", "b", "c")
    assert counted.per_topic("AP")[0].tolist() == [1.0, 0.0, 0.0]


def test_a_runs_scores_do_not_depend_on_the_runs_beside_it() -> None:
    """Bit for bit: a run evaluated alone, in a batch of runs of other lengths, or in small
    batches gets the same per-topic values (stored results must not depend on batching)."""
    import service.metrics.scoring as module
    from service.metrics import evaluate as ev_fn

    from service.formats.readers import parse_qrels, parse_run
    from service.sample import CollectionSpec, generate as generate_sample

    # Runs of different lengths and numbers of judged documents: alone, a run's batch (and
    # its condensed lists) is narrower, and numpy's pairwise summation would then group
    # the same terms differently (seen: bpref differing by 3e-16).
    qrels_text, run_texts = generate_sample(CollectionSpec(topics=10, runs=12, depth=50, docs_per_topic=200,
                                                           judged_per_topic=80, seed=7))
    qrels = parse_qrels(qrels_text.encode())
    runs = [parse_run(t.encode()) for t in run_texts.values()]
    runs.append(Run.from_rankings("short", {t: d[:13] for t, d in runs[0].to_rankings().items()}, "short"))
    names = [n if REGISTRY[n].cutoff != "required" else f"{n}@20" for n in REGISTRY
             if REGISTRY[n].family not in OWN_EVALUATOR_FAMILIES]
    names += ["AP'", "Q'", "nDCG(judged_only=true)@10", "RBP(p=0.8)", "ERR(stop=linear)"]
    whole = ev_fn(qrels, runs, names)
    saved = module._CHUNK_CELLS
    module._CHUNK_CELLS = 1  # one run per batch
    try:
        batched = ev_fn(qrels, runs, names)
    finally:
        module._CHUNK_CELLS = saved
    for i, run in enumerate(runs):
        alone = ev_fn(qrels, [run], names)
        for m in whole.measures:
            assert np.array_equal(whole.per_topic(m)[i], alone.per_topic(m)[0], equal_nan=True), (run.tag, m)
            assert np.array_equal(whole.per_topic(m)[i], batched.per_topic(m)[i], equal_nan=True), (run.tag, m)


def test_gain_profile_errors_are_clear() -> None:
    from service.errors import InvalidMeasure

    q = Qrels.from_mapping({"t": {"a": 3}})
    r = [Run.from_rankings("r", {"t": ["a"]})]
    with pytest.raises(InvalidMeasure, match=r"no gain for level 3"):
        evaluate(q, r, ["nDCG(gains={1:1,2:2})@10"])
    with pytest.raises(InvalidMeasure, match="above the declared top level 2"):
        evaluate(q, r, ["AP"], EvalSettings(max_level=2))
