"""The metric-name grammar: canonical strings, aliases, parameters and errors."""

from __future__ import annotations

import pytest

from service.errors import InvalidMeasure
from service.metrics import REGISTRY, parse_measure
from service.metrics.spec import metric_listing


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("Q(beta=1)", "Q"),
        ("Q", "Q"),
        ("Q(beta=10)", "Q(beta=10)"),
        ("Q(beta=10.0)", "Q(beta=10)"),
        ("Q(beta=0.5)", "Q(beta=0.5)"),
        ("nDCG(base=2)@10", "nDCG@10"),
        ("nDCG@1000", "nDCG@1000"),
        ("nDCG(base=10)@20", "nDCG(base=10)@20"),
        ("AP(judged_only=true)", "AP(judged_only=true)"),
        ("AP(judged_only=false)", "AP"),
        ("Q'", "Q(judged_only=true)"),
        ("nDCG'@1000", "nDCG(judged_only=true)@1000"),
        ("AP'", "AP(judged_only=true)"),
        ("nDCG(gains={1:1,2:5,3:10})@10", "nDCG(gains={1:1,2:5,3:10})@10"),
        ("nDCG(gains={3:10, 1:1, 2:5})@10", "nDCG(gains={1:1,2:5,3:10})@10"),
        ("nDCG(gains={1:1.0,2:2.5})@10", "nDCG(gains={1:1,2:2.5})@10"),
        ("Q(norm=minRk,beta=3)@10", "Q(beta=3,norm=minRk)@10"),
        ("ERR(stop=linear)@20", "ERR(stop=linear)@20"),
        ("RBP(p=0.95)", "RBP"),
        ("RBP(p=0.8)@100", "RBP(p=0.8)@100"),
        ("AP(rel=2)", "AP(rel=2)"),
        ("AP(rel=1)", "AP"),
        # aliases from the papers and the tools
        ("Q-measure", "Q"),
        ("AveP", "AP"),
        ("MAP", "AP"),
        ("map@10", "AP@10"),
        ("P+-measure", "Pplus"),
        ("P+", "Pplus"),
        ("P-measure", "Pmeasure"),
        ("O-measure", "Omeasure"),
        ("R-measure", "Rmeasure"),
        ("genAveP", "genAP"),
        ("bpref_allnonrel", "bpref_N"),
        ("bpref_relative2", "AP(judged_only=true)"),
        ("ndcg@10", "nDCG@10"),
        ("MRR", "RR"),
        ("p@10", "P@10"),
    ],
)
def test_canonical_form(text: str, canonical: str) -> None:
    assert str(parse_measure(text)) == canonical
    assert str(parse_measure(canonical)) == canonical  # canonical strings are fixed points


def test_equality_and_hashing_follow_the_canonical_string() -> None:
    a, b = parse_measure("Q(beta=1)"), parse_measure("Q")
    assert a == b and hash(a) == hash(b)
    assert len({parse_measure("nDCG(base=2)@10"), parse_measure("nDCG@10"), parse_measure("ndcg@10")}) == 1
    assert parse_measure("nDCG@10") != parse_measure("nDCG@20")
    assert parse_measure("Q(beta=10)").get("beta") == 10
    assert parse_measure("Q").get("beta") == 1


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("nDGC@10", "unknown metric 'nDGC'"),
        ("Q(gamma=1)", "Q has no parameter 'gamma'"),
        ("Q(beta=-1)", "beta must be >= 0"),
        ("Q(beta=true)", "beta takes a number"),
        ("AP(rel=1.5)", "rel takes an integer"),
        ("AP(rel=0)", "rel must be >= 1"),
        ("AP(judged_only=yes)", "judged_only takes true or false"),
        ("AP(norm=k)", "norm is one of R, minRk"),
        ("RBP(p=1.5)", "p must lie strictly between 0 and 1"),
        ("nDCG(base=1)@10", "base must be > 1"),
        ("P", "P needs a cutoff"),
        ("Rprec@10", "Rprec takes no cutoff"),
        ("AP@0", "cutoff must be a positive integer"),
        ("AP@ten", "must be a positive integer"),
        ("nDCG(gains={1:-1})", "must be a number >= 0"),
        ("nDCG(gains=3)", "gains takes a mapping"),
        ("Q(beta=)", "cannot read the parameters"),
        ("Q(1)", "written name=value"),
        ("", "cannot read metric name"),
    ],
)
def test_errors_say_what_is_wrong(text: str, fragment: str) -> None:
    with pytest.raises(InvalidMeasure) as err:
        parse_measure(text)
    assert fragment in str(err.value)


def test_the_metric_listing_names_every_metric_with_its_parameters_and_a_refusal_the_closest() -> None:
    listing = metric_listing()
    for name in REGISTRY:
        assert f"  {name}" in listing
    assert "beta=1" in listing and "Aliases (each is the metric after =):" in listing and "  q-measure = Q\n" in listing
    with pytest.raises(InvalidMeasure) as err:
        parse_measure("Qmesure")
    text = str(err.value)
    assert "unknown metric 'Qmesure'" in text and "  Q(gains=<gains>, judged_only=false, beta=1" in text and "`cranfield metrics`" in text
    assert text.count("\n") < 8  # the closest few, not the registry


def test_every_registered_metric_round_trips() -> None:
    for name, defn in REGISTRY.items():
        text = f"{name}@10" if defn.cutoff == "required" else name
        assert str(parse_measure(text)) == text
