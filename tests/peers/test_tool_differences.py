"""Why a number differs from another tool: every row of docs/definitions.md's per-tool tables
("Other tools") that names a Cranfield spelling is checked here by running the tool and that
spelling on the same files; every "none does" row by asserting the documented difference.

Tools run here: ir_measures (installed with repro-eval, a test dependency; its ``Judged``
provider, its relabelling of ``nDCG(gains=...)``, its MS MARCO ``RR@k``), the Web track's
``gdeval.pl`` (the copy ir_measures ships, 1.2a, run with perl), ranx and pytrec_eval.
cwl_eval is not a test dependency: its values below were computed by cwl_eval itself
(github.com/ireval/cwl at 4c3ea6f, ``cwl.ruler.measures``' metric classes on these files) and
are recorded, with its equations (docs/definitions.md derives them).

Every run file has distinct scores (the tools break ties differently: see the tie rows),
except in the tie tests.
"""

from __future__ import annotations

import importlib.resources
import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from service.cli import main
from service.errors import InvalidInput, InvalidMeasure
from service.formats.readers import read_qrels, read_run
from service.metrics import EvalSettings, evaluate
from tests.support.peers import RANX_ID_LEN, compiling_alone, require_peer

pytestmark = [
    pytest.mark.peer,
    pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning"),
]

TOL = 1e-12
GDEVAL_TOL = 5e-6  # gdeval prints five decimals

# Graded levels 0..3 (H = 3). Topic 3 has no relevant document; topic 4 is absent from the run.
QRELS = """\
1 0 a 3
1 0 b 2
1 0 c 1
1 0 d 0
1 0 e 0
1 0 g 2
2 0 a 1
2 0 b 0
2 0 c 3
2 0 z 0
3 0 a 0
3 0 b 0
4 0 a 1
"""
# Topic 1: 7 documents (x, h, y unjudged); topic 2: 3 documents; topic 3: 2 documents.
RUN = """\
1 Q0 b 1 9.0 r
1 Q0 x 2 8.0 r
1 Q0 a 3 7.0 r
1 Q0 h 4 6.0 r
1 Q0 d 5 5.0 r
1 Q0 y 6 4.0 r
1 Q0 c 7 3.0 r
2 Q0 z 1 5.0 r
2 Q0 c 2 4.0 r
2 Q0 q 3 3.0 r
3 Q0 a 1 2.0 r
3 Q0 m 2 1.0 r
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return write(tmp_path, "qrels.txt", QRELS), write(tmp_path, "run.txt", RUN)


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def cranfield(qrels: Path, run: Path, measure: str, *, order: str = "score", **settings: object) -> dict[str, float]:
    """Cranfield's per-topic values of ``measure`` for ``run`` (as ``cranfield eval`` computes them)."""
    ev = evaluate(read_qrels(qrels), [read_run(run, order)], [measure], EvalSettings(**settings))  # type: ignore[arg-type]
    return {t: float(v) for t, v in zip(ev.topics, ev.per_topic(measure)[0])}


def close(a: dict[str, float], b: dict[str, float], tol: float = TOL) -> bool:
    return a.keys() == b.keys() and all(math.isclose(a[t], b[t], rel_tol=0, abs_tol=tol) for t in a)


# ------------------------------------------------------------------------------ ir_measures

def ir_measures_values(measure: str, qrels: Path, run: Path, provider: str | None = None) -> dict[str, float]:
    irm = require_peer("ir_measures", "ir_measures (installed with repro-eval)")
    m = irm.parse_measure(measure)
    q, r = list(irm.read_trec_qrels(str(qrels))), list(irm.read_trec_run(str(run)))
    calc = getattr(irm, provider).iter_calc if provider else irm.iter_calc
    return {x.query_id: float(x.value) for x in calc([m], q, r)}


def test_ir_measures_judged_divides_by_the_documents_retrieved(files: tuple[Path, Path]) -> None:
    qrels, run = files
    for k in (5, 10):
        peer = ir_measures_values(f"Judged@{k}", qrels, run)
        # ir_measures scores every qrels topic (topic 4, absent from the run, 0): missing=zero, no_relevant=count
        ours = cranfield(qrels, run, f"Judged(norm=retrieved)@{k}", no_relevant="count")
        assert close(peer, ours)
    # Cranfield's Judged@10 divides by 10: topic 2 (3 documents, 2 judged) is 2/10, not 2/3
    assert cranfield(qrels, run, "Judged@10", no_relevant="count")["2"] == pytest.approx(0.2)
    assert ir_measures_values("Judged@10", qrels, run)["2"] == pytest.approx(2 / 3)
    # without a cutoff both divide by the list length
    assert close(ir_measures_values("Judged", qrels, run), cranfield(qrels, run, "Judged", no_relevant="count"))


def test_ir_measures_judged_counts_a_negative_label_as_judged(tmp_path: Path) -> None:
    # h (rank 4 of topic 1) pooled but unjudged (-1): judged for ir_measures, unjudged for Cranfield
    qrels = write(tmp_path, "qrels.txt", QRELS + "1 0 h -1\n")
    run = write(tmp_path, "run.txt", RUN)
    peer = ir_measures_values("Judged@5", qrels, run)
    ours = cranfield(qrels, run, "Judged(norm=retrieved)@5", no_relevant="count")
    assert peer["1"] == pytest.approx(ours["1"] + 1 / 5)
    assert close({t: v for t, v in peer.items() if t != "1"}, {t: v for t, v in ours.items() if t != "1"})


def test_ir_measures_ndcg_is_msndcg_and_keeps_unmapped_levels_as_gains(files: tuple[Path, Path]) -> None:
    qrels, run = files
    assert close(ir_measures_values("nDCG@5", qrels, run), cranfield(qrels, run, "MSnDCG@5", no_relevant="count"))
    assert not close(ir_measures_values("nDCG@5", qrels, run), cranfield(qrels, run, "nDCG@5", no_relevant="count"))
    # gains={2:5}: levels 1 and 3 keep their label as gain
    peer = ir_measures_values("nDCG(gains={2:5})@5", qrels, run)
    assert close(peer, cranfield(qrels, run, "MSnDCG(gains={1:1,2:5,3:3})@5", no_relevant="count"))


def test_ir_measures_gain_for_level_0_relabels_what_cranfield_refuses(files: tuple[Path, Path]) -> None:
    qrels, run = files
    peer = ir_measures_values("nDCG(gains={0:1,1:1,2:2,3:3})@5", qrels, run)
    assert peer["3"] > 0  # topic 3 has no relevant document, but its level-0 documents now gain 1
    with pytest.raises(InvalidMeasure, match="level 0 means judged non-relevant; its gain must be 0"):
        cranfield(qrels, run, "MSnDCG(gains={0:1,1:1,2:2,3:3})@5")
    # what it means, in Cranfield's terms: every level raised by one, level 1 (was 0) gaining 1
    raised = write(qrels.parent, "raised.txt", "".join(
        f"{t} {it} {d} {int(lv) + 1}\n" for t, it, d, lv in (line.split() for line in QRELS.splitlines())))
    assert close(peer, cranfield(raised, run, "MSnDCG(gains={1:1,2:1,3:2,4:3})@5", no_relevant="count"))


def test_ir_measures_rr_at_k_breaks_ties_by_docno_ascending(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", "1 0 a 1\n1 0 b 0\n1 0 c 0\n")
    ties = write(tmp_path, "ties.txt", "1 Q0 a 1 5 r\n1 Q0 b 2 5 r\n1 Q0 c 3 5 r\n")
    # the MS MARCO provider (RR with a cutoff) ranks a, b, c; trec_eval's order (and RR without
    # a cutoff, through pytrec_eval) c, b, a
    assert ir_measures_values("RR@10", qrels, ties) == {"1": 1.0}
    assert ir_measures_values("RR", qrels, ties) == {"1": pytest.approx(1 / 3)}
    assert cranfield(qrels, ties, "RR@10") == {"1": pytest.approx(1 / 3)}
    distinct = write(tmp_path, "distinct.txt", "1 Q0 a 1 5 r\n1 Q0 b 2 4 r\n1 Q0 c 3 3 r\n")
    assert close(ir_measures_values("RR@10", qrels, distinct), cranfield(qrels, distinct, "RR@10"))


# ------------------------------------------------------------------------------------ gdeval

def gdeval(qrels: Path, run: Path, k: int) -> dict[str, tuple[float, float]]:
    """gdeval.pl's (nDCG@k, ERR@k) per topic, as it prints them."""
    require_peer("ir_measures", "ir_measures (installed with repro-eval; ships gdeval.pl)")
    if shutil.which("perl") is None:
        if os.environ.get("CI"):
            pytest.fail("perl is needed to run gdeval.pl", pytrace=False)
        pytest.skip("perl is needed to run gdeval.pl")
    script = importlib.resources.files("ir_measures") / "bin" / "gdeval.pl"
    out = subprocess.run(["perl", str(script), str(qrels), str(run), str(k)],
                         capture_output=True, text=True, check=True).stdout
    rows = [line.split(",") for line in out.splitlines()[1:] if line]
    return {topic: (float(ndcg), float(err)) for _, topic, ndcg, err in rows}


def test_gdeval_err_fixes_the_top_level_at_4(files: tuple[Path, Path]) -> None:
    qrels, run = files
    peer = gdeval(qrels, run, 5)
    # gdeval prints only the run's topics that have a relevant document: missing=skip
    ours = cranfield(qrels, run, "ERR@5", max_level=4, missing="skip")
    ours = {t: v for t, v in ours.items() if not math.isnan(v)}
    assert close({t: e for t, (_, e) in peer.items()}, ours, GDEVAL_TOL)
    # with the qrels' own top level (3), Cranfield's ERR is larger
    default = cranfield(qrels, run, "ERR@5")
    assert default["1"] > peer["1"][1] + 0.1


def test_cranfield_eval_with_the_documented_options_prints_gdevals_means(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    qrels, run = files
    peer = gdeval(qrels, run, 5)
    code = main(["eval", "--qrels", str(qrels), "-m", "ERR@5", "-m", "MSnDCG(gains={1:1,2:3,3:7,4:15})@5",
                 "--max-level", "4", "--missing", "skip", "--format", "json", "--precision", "12", str(run)])
    out, err = capsys.readouterr()
    assert code == 0, err
    means = {m: v["mean"] for m, v in json.loads(out)["runs"]["r"].items()}
    assert means["ERR@5"] == pytest.approx(sum(e for _, e in peer.values()) / len(peer), abs=GDEVAL_TOL)
    ndcg_mean = sum(n for n, _ in peer.values()) / len(peer)
    assert means["MSnDCG(gains={1:1,2:3,3:7,4:15})@5"] == pytest.approx(ndcg_mean, abs=GDEVAL_TOL)


def test_gdeval_ndcg_is_msndcg_with_exponential_gains(files: tuple[Path, Path]) -> None:
    qrels, run = files
    peer = gdeval(qrels, run, 5)
    ours = cranfield(qrels, run, "MSnDCG(gains={1:1,2:3,3:7})@5", missing="skip")
    assert close({t: n for t, (n, _) in peer.items()}, {t: v for t, v in ours.items() if not math.isnan(v)},
                 GDEVAL_TOL)


def test_gdeval_counts_a_duplicate_twice_where_cranfield_refuses_the_run(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", "1 0 a 3\n1 0 b 0\n")
    run = write(tmp_path, "run.txt", "1 Q0 a 1 3.0 r\n1 Q0 b 2 2.0 r\n1 Q0 a 3 1.0 r\n")
    ndcg, _ = gdeval(qrels, run, 5)["1"]
    assert ndcg > 1  # a counted at ranks 1 and 3 against an ideal that holds it once
    with pytest.raises(InvalidInput, match=r"run\.txt:3: document 'a' is retrieved twice for topic '1'"):
        read_run(run)


# -------------------------------------------------------------------------------------- ranx

def ranx_values(metric: str, qrels: Path, run: Path) -> dict[str, float]:
    """ranx's per-topic values, from its own reading of the files. The files' doc ids are
    given ranx's test module's length first (a doc id is only compared for equality, so the
    values are the same; see tests.support.peers.RANX_ID_LEN)."""
    ranx = require_peer("ranx", "ranx")
    q = ranx.Qrels.from_file(str(with_padded_doc_ids(qrels, 2)), kind="trec")
    r = ranx.Run.from_file(str(with_padded_doc_ids(run, 2)), kind="trec")
    with compiling_alone("ranx"):
        values = ranx.evaluate(q, r, metric, return_mean=False, make_comparable=True)
    return {t: float(v) for t, v in zip(r.get_query_ids(), values)}


def with_padded_doc_ids(path: Path, column: int) -> Path:
    """A copy of a qrels or run file whose doc ids (``column``) are RANX_ID_LEN characters long."""
    lines = []
    for line in path.read_text().splitlines():
        fields = line.split()
        assert len(fields[column]) < RANX_ID_LEN, fields[column]
        fields[column] = fields[column].rjust(RANX_ID_LEN, "-")
        lines.append(" ".join(fields) + "\n")
    padded = path.with_name(f"{path.stem}-padded{path.suffix}")
    padded.write_text("".join(lines))
    return padded


def test_ranx_keeps_the_last_line_of_a_duplicate_where_cranfield_refuses_the_run(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", "1 0 a 1\n1 0 b 0\n1 0 c 2\n")
    tripled = write(tmp_path, "run.txt", "1 Q0 a 1 3.0 r\n1 Q0 b 2 2.0 r\n1 Q0 a 3 1.0 r\n"
                                         "1 Q0 a 4 0.5 r\n1 Q0 c 5 0.2 r\n")
    last = write(tmp_path, "last.txt", "1 Q0 b 2 2.0 r\n1 Q0 a 4 0.5 r\n1 Q0 c 5 0.2 r\n")
    for metric, measure in (("map", "AP"), ("ndcg@5", "MSnDCG@5"), ("precision@5", "P@5")):
        assert ranx_values(metric, qrels, tripled) == ranx_values(metric, qrels, last)
        assert close(ranx_values(metric, qrels, last), cranfield(qrels, last, measure))
    with pytest.raises(InvalidInput, match=r"run\.txt:3: document 'a' is retrieved twice for topic '1' \(first on line 1\)"):
        read_run(tripled)


def test_ranx_rbp_takes_the_label_as_gain(files: tuple[Path, Path]) -> None:
    qrels, run = files
    peer = ranx_values("rbp.8", qrels, run)
    ours = cranfield(qrels, run, "RBP(p=0.8)", no_relevant="count")
    # (1 - p) sum p^(r-1) label(r), not divided by the top level H = 3
    assert close({t: peer[t] for t in ("1", "2", "3")}, {t: 3 * ours[t] for t in ("1", "2", "3")})
    assert peer["1"] > ours["1"]


def test_ranx_hits_and_f1(files: tuple[Path, Path]) -> None:
    qrels, run = files
    topics = ("1", "2")  # topics with a relevant document that the run answers
    hits = ranx_values("hits@5", qrels, run)
    assert close({t: hits[t] for t in topics}, {t: v for t, v in cranfield(qrels, run, "NumRelRet@5").items() if t in topics})
    f1 = ranx_values("f1@5", qrels, run)
    p, r = cranfield(qrels, run, "P@5"), cranfield(qrels, run, "Recall@5")
    assert close({t: f1[t] for t in topics}, {t: 2 * p[t] * r[t] / (p[t] + r[t]) for t in topics})


# ---------------------------------------------------------------------------------- cwl_eval

# Binary gains (cwl_eval reads the qrels' fourth column as a gain in [0, 1]).
CWL_QRELS = "1 0 a 1\n1 0 b 1\n1 0 c 0\n1 0 d 1\n1 0 e 1\n2 0 a 0\n2 0 b 1\n2 0 c 1\n3 0 x 1\n"
CWL_RUN = ("1 Q0 c 1 9 r\n1 Q0 a 2 8 r\n1 Q0 u 3 7 r\n1 Q0 b 4 6 r\n1 Q0 v 5 5 r\n"
           "2 Q0 a 1 5 r\n2 Q0 c 2 4 r\n3 Q0 a 1 3 r\n3 Q0 b 2 2 r\n")
#: Computed by cwl_eval (ireval/cwl 4c3ea6f) on CWL_QRELS and CWL_RUN: its expected utility per topic.
CWL_VALUES = {
    "AP": {"1": 0.5, "2": 0.5, "3": 0.0},
    "P@5": {"1": 0.4, "2": 0.2, "3": 0.0},
    "RR": {"1": 0.5, "2": 0.5, "3": 0.0},
    "RBP@0.9": {"1": 0.16289999999999993, "2": 0.08999999999999997, "3": 0.0},
    "RBP@0.99": {"1": 0.01960383632206807, "2": 0.00990042741380136, "3": 0.0},
    "NDCG-k@5": {"1": 0.360054614577234, "2": 0.21398626473452753, "3": 0.0},
}


def test_cwl_eval_values_from_cranfields(tmp_path: Path) -> None:
    qrels, run = write(tmp_path, "qrels.txt", CWL_QRELS), write(tmp_path, "run.txt", CWL_RUN)

    def ours(measure: str) -> dict[str, float]:  # cwl_eval walks the file's order
        return cranfield(qrels, run, measure, order="file", no_relevant="count")

    ap, num_rel, rel_ret = ours("AP"), ours("NumRel"), ours("NumRelRet")
    # cwl_eval's AP divides by the relevant documents retrieved, not by R
    assert close(CWL_VALUES["AP"], {t: ap[t] * num_rel[t] / rel_ret[t] if rel_ret[t] else 0.0 for t in ap})
    assert ap["1"] == 0.25
    assert close(CWL_VALUES["P@5"], ours("P@5"))
    assert close(CWL_VALUES["RR"], ours("RR"))
    # RBP renormalised over the 1000 ranks cwl_eval pads every list to: / (1 - p^1000)
    for p in (0.9, 0.99):
        rbp = ours(f"RBP(p={p})")
        assert close(CWL_VALUES[f"RBP@{p}"], {t: v / (1 - p**1000) for t, v in rbp.items()})
    # NDCG-k@k divides DCG@k (log2(r+1) discount) by the discount sum of k ranks, not the ideal DCG
    discount_sum = sum(1 / math.log2(r + 1) for r in range(1, 6))
    assert CWL_VALUES["NDCG-k@5"]["1"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / discount_sum, abs=TOL)
    assert ours("MSnDCG@5")["1"] != pytest.approx(CWL_VALUES["NDCG-k@5"]["1"], abs=1e-3)


# ----------------------------------------------------------------------- trec_eval (pytrec_eval)

def test_trec_eval_measures_without_a_cutoff_spelling(files: tuple[Path, Path]) -> None:
    pytrec_eval = require_peer("pytrec_eval", "pytrec-eval-terrier")
    qrels, run = files
    q = {t: {d: int(v) for d, v in docs.items()} for t, docs in _table(QRELS, 3).items()}
    r = {t: {d: float(v) for d, v in docs.items()} for t, docs in _table(RUN, 4).items()}
    out = pytrec_eval.RelevanceEvaluator(q, {"success", "set_P", "set_recall", "gm_map"}).evaluate(r)
    topics = sorted(out)
    hit, recall = cranfield(qrels, run, "Hit@5", no_relevant="count"), cranfield(qrels, run, "Recall", no_relevant="count")
    assert close({t: out[t]["success_5"] for t in topics}, {t: hit[t] for t in topics})
    assert close({t: out[t]["set_recall"] for t in topics}, {t: recall[t] for t in topics})
    # set_P: relevant retrieved over the list length; Cranfield has no such metric
    rel_ret, ret = cranfield(qrels, run, "NumRelRet"), cranfield(qrels, run, "NumRet")
    assert close({t: out[t]["set_P"] for t in ("1", "2")}, {t: rel_ret[t] / ret[t] for t in ("1", "2")})
    # gm_map: per topic ln(max(AP, 1e-5)), the summary its exponentiated mean; Cranfield's means are arithmetic
    ap = cranfield(qrels, run, "AP", no_relevant="count")
    assert close({t: out[t]["gm_map"] for t in topics}, {t: math.log(max(ap[t], 1e-5)) for t in topics})


def _table(text: str, value_column: int) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        parts = line.split()
        out.setdefault(parts[0], {})[parts[2]] = parts[value_column]
    return out
