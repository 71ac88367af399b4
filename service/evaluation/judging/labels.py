"""Several assessors' labels of one document, kept, and the set's level derived from them.

Every label is stored (``AssessorLabel``: set, topic, document, assessor, level, when); an
assessor who labels a document again replaces its own label. A set's version is its previous
judgments with the level of every labelled document re-derived from all its labels by the
set's rule (:mod:`service.metrics.judgment_rules`: latest, majority, mean, max, min), so
documents judged by an uploaded qrels file and never labelled keep their level. Labels come
from two doors: an assessor's pool judgments (:func:`service.evaluation.judging.judgments.submit_judgments`,
into the official set) and an organiser's label file (``topic docno assessor level`` lines,
:func:`upload`). Changing a set's rule re-derives every labelled document (:func:`rederive`).
With the rule ``latest`` and one label per document this is exactly the overlay of the newest
judgments over the previous version that pool judging always did.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.errors import InvalidInput
from service.evaluation.common.memory import guarded
from service.evaluation.common.work import Outcome
from service.evaluation.judging import judgment_sets
from service.evaluation.judging.assessor_labels import Key, labels_of_set, store  # noqa: F401  (re-exported)
from service.evaluation.organising import collections, idempotency
from service.evaluation.organising.setup import add_qrels, audit, count_limits, load_qrels, max_level
from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.formats.labels import parse_labels
from service.formats.types import Qrels
from service.metrics.judgment_rules import derive
from service.metrics.stats.agreement import assessor_agreement
from service.store.models import AssessorLabel, Collection, JudgmentSet, QrelsVersion, Topic


def qrels_text(qrels: Qrels) -> bytes:
    """A version's file in NTCIR form (``topic docno Lk``), sorted: what `qrels` downloads give."""
    out = []
    for t, judgments in qrels.to_mapping().items():
        out.extend(f"{t} {d} L{lv}\n" for d, lv in sorted(judgments.items()))
    return "".join(out).encode("utf-8")


def derived_version(s: Session, coll: Collection, js: JudgmentSet, me: Principal, source: str,
                    touched: set[Key] | None = None) -> QrelsVersion:
    """A new version of ``js``: its current judgments with every labelled document of
    ``touched`` (None: all) at the level its labels give under the set's rule."""
    current = s.get(QrelsVersion, js.current_version_id) if js.current_version_id else None
    judgments = load_qrels(current).to_mapping() if current is not None else {}
    labels = labels_of_set(s, js)
    if touched is not None:
        labels = {k: v for k, v in labels.items() if k in touched}
    for (t, d), level in derive(labels, js.rule).items():
        judgments.setdefault(t, {})[d] = level
    merged = Qrels.from_mapping(judgments, source=source)
    return add_qrels(s, coll, qrels_text(merged), source, me.name, parsed=merged, judgment_set=js)


def rederive(s: Session, coll: Collection, js: JudgmentSet, me: Principal, reason: str) -> Outcome[int | None]:
    """Re-derive every labelled document of ``js`` (its rule changed): a new version (and its
    evaluation), or None when the set has no labels."""
    if not labels_of_set(s, js):
        return Outcome(None)
    if coll.task_kind == "answers":  # answers' labels make assignments and support (issue 36)
        from service.evaluation.judging import answer_assessment

        outcome = answer_assessment.derive_version(s, coll, js, me, f"labels re-derived ({reason})")
        return Outcome(outcome.result["version"], outcome.followups)
    previous = js.current_version_id
    version = derived_version(s, coll, js, me, f"labels re-derived ({reason})")
    _, followups = judgment_sets.evaluation_followups(s, coll, js, version, previous)
    return Outcome(version.version, followups)


@guarded
def upload(factory: sessionmaker[Session], me_of: Any, cid: int, set_name: str, body: bytes,
           source: str = "labels upload", idempotency_key: str | None = None) -> Outcome[dict[str, Any]]:
    """An organiser's label file (``topic docno assessor level``) into a set: validated before
    anything is stored (every line; topics of the collection, levels within its scale), kept, the touched
    documents re-derived into a new version, which is evaluated as the set says."""
    idempotency.check_key(idempotency_key)
    with factory() as s:
        me = me_of(s)
        coll = collections.get(s, cid, me)
        policy.require(policy.may_upload_qrels(me, coll), me, f"uploading labels to collection {cid}")
        judgment_sets.get(s, coll, set_name, me)
        top = max_level(s, coll)
        known = set(s.scalars(select(Topic.topic_id).where(Topic.collection_id == coll.id)))
    parsed = parse_labels(body, source, count_limits())  # InvalidInput with the line before anything is stored
    if not len(parsed):
        raise InvalidInput(source, None, "no labels in the upload")
    if not known.issuperset(parsed.topics):  # labels judge the collection's topics; they never register one
        line, topic = next((ln, t) for ln, t in zip(parsed.lines.tolist(), parsed.topics) if t not in known)
        raise InvalidInput(source, line, f"topic {topic!r} is not a topic of collection {cid}")
    for line, level in zip(parsed.lines.tolist(), parsed.levels.tolist()):
        if not 0 <= level <= top:
            raise InvalidInput(source, line, f"level {level} is outside the collection's scale 0 to {top}")
    digest = idempotency.request_hash(body)

    def write(s: Session, coll: Collection) -> Outcome[dict[str, Any]]:
        js = judgment_sets.get(s, coll, set_name, me)
        previous = js.current_version_id
        touched = store(s, js, zip(parsed.topics, parsed.docnos, parsed.assessors, parsed.levels.tolist()))
        version = derived_version(s, coll, js, me, f"{source} (labels, rule {js.rule})", touched)
        audit(s, me.name, "labels.upload", coll.id, judgment_set=js.name, labels=len(parsed),
              assessors=list(parsed.assessor_ids), version=version.version)
        job_id, followups = judgment_sets.evaluation_followups(s, coll, js, version, previous)
        return Outcome({"judgment_set": js.name, "version": version.version, "labels": len(parsed),
                        "documents": len(touched), "assessors": list(parsed.assessor_ids), "rule": js.rule,
                        "judgments": version.n_judgments, "job": job_id}, followups)

    return idempotency.store_once(factory, cid, me, f"labels:{cid}:{set_name}", idempotency_key, digest, write,
                                  what=f"a labels upload to collection {cid}")


# --------------------------------------------------------------------------- agreement of the assessors
def num(v: Any) -> float | None:
    """A figure for the document: None when undefined (NaN)."""
    f = float(v)
    return f if math.isfinite(f) else None


def agreement_figures(topics: Sequence[str], docnos: Sequence[str], assessors: Sequence[str], levels: Sequence[int],
                      configured_levels: Iterable[int] = ()) -> dict[str, Any]:
    """Every agreement figure of several assessors' labels (one per assessor and document;
    :func:`service.metrics.stats.agreement.assessor_agreement`) as a document: Krippendorff's
    alpha over every assessor (nominal, ordinal, interval), per topic, each assessor's share of
    the disagreement (alpha without them, their mean Cohen's kappa with the others) ordered by
    who disagrees most (the largest rise of the ordinal alpha without them first), and the
    table of every pair of assessors (kappa, weighted kappas, ordinal alpha, confusion). The
    scale is the configured levels and every level from 0 to the highest label. NaN figures are
    None, the notes say why. Used by the API, the portal and ``cranfield judges agreement``."""
    seen = {int(v) for v in levels if int(v) >= 0} | {int(v) for v in configured_levels if int(v) >= 0}
    lv = sorted(seen | set(range(max(seen, default=0) + 1)))  # as judge_comparison.scale
    r = assessor_agreement(topics, docnos, assessors, [int(v) for v in levels], lv)

    def alphas(by: Mapping[str, Any]) -> dict[str, float | None]:
        return {k: num(getattr(a, "value", a)) for k, a in by.items()}

    ordinal = r.alpha["ordinal"].value
    rows = []
    for name in r.assessors:
        without = r.without[name]
        change = without["ordinal"] - ordinal if not (math.isnan(without["ordinal"]) or math.isnan(ordinal)) \
            else math.nan
        rows.append({"assessor": name, "labels": r.labels_per_assessor[name], "mean_kappa": num(r.mean_kappa[name]),
                     "alpha_without": alphas(without),
                     "ordinal_change_without": num(change)})
    rows.sort(key=lambda x: (x["ordinal_change_without"] is None, -(x["ordinal_change_without"] or 0.0),
                             x["assessor"]))
    per_topic = [{"topic": t, "documents": int(a["ordinal"].units), "labels": int(a["ordinal"].pairable),
                  **alphas(a)} for t, a in r.per_topic.items()]
    pairs = []
    for p in r.pairs:
        g = p.agreement
        pairs.append({"a": p.first, "b": p.second, "documents": g.documents, "observed": num(g.observed),
                      "kappa": num(g.kappa), "kappa_linear": num(g.kappa_linear),
                      "kappa_quadratic": num(g.kappa_quadratic), "alpha": num(g.alpha),
                      "confusion": [[int(c) for c in row] for row in g.confusion.tolist()], "notes": list(g.notes)})
    return {"assessors": list(r.assessors), "levels": list(r.levels), "documents": r.documents, "labels": r.labels,
            "pairable_documents": int(r.alpha["nominal"].units), "unjudged": r.unjudged, "alpha": alphas(r.alpha),
            "per_topic": per_topic, "disagreement": rows, "pairs": pairs, "notes": list(r.notes)}


def agreement(s: Session, coll: Collection, me: Principal, set_name: str) -> dict[str, Any]:
    """The agreement of every assessor whose labels a set keeps (organisers: labels are
    judgments, as secret as the qrels): :func:`agreement_figures` on the set's labels, the scale
    of the collection's configuration. 404 for an unknown set; a set without labels gives the
    figures of nothing, with a note."""
    policy.require(policy.may_see_qrels(me, coll), me, f"the labels of collection {coll.id}")
    js = judgment_sets.get(s, coll, set_name, me)
    rows = s.execute(select(AssessorLabel.topic, AssessorLabel.docno, AssessorLabel.assessor, AssessorLabel.level)
                     .where(AssessorLabel.judgment_set_id == js.id)
                     .order_by(AssessorLabel.topic, AssessorLabel.docno, AssessorLabel.assessor)).all()
    config = coll.current_config
    configured = [int(lv["level"]) for lv in config.levels if "level" in lv] if config is not None else []
    if coll.task_kind == "answers":  # answers' cells: 0 no support, 1 partial, 2 full (answer_assessment)
        configured = [0, 1, 2]
    doc = agreement_figures([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                            [int(r[3]) for r in rows], configured)
    if not rows:
        doc["notes"].insert(0, f"judgment set {js.name} keeps no assessor's labels: upload a label file "
                               "(topic docno assessor level) into it")
    return {"collection": coll.id, "judgment_set": js.name, **doc}


def update_set(s: Session, coll: Collection, me: Principal, name: str, fields: Mapping[str, Any]) -> Outcome[dict[str, Any]]:
    """Change a set's notes, provenance, rule or auto_evaluate (organisers). A new rule
    re-derives the levels of every document with assessors' labels: a new version (here, beside
    the labels, so that judgment_sets needs nothing of this module)."""
    policy.require(policy.may_upload_qrels(me, coll), me, f"changing the judgment sets of collection {coll.id}")
    collections.lock(s, coll.id)
    js = judgment_sets.get(s, coll, name, me)
    values = judgment_sets.check_fields(fields)
    old_rule = js.rule
    for key, value in values.items():
        setattr(js, key, value)
    audit(s, me.name, "judgment_set.update", coll.id, name=name, **{k: v for k, v in values.items()
                                                                   if k in ("rule", "auto_evaluate", "source")})
    followups: tuple[Any, ...] = ()
    version = None
    if js.rule != old_rule:
        outcome = rederive(s, coll, js, me, reason=f"rule {old_rule} -> {js.rule}")
        version, followups = outcome.result, outcome.followups
    return Outcome({**judgment_sets.set_doc(s, coll, js), "new_version": version}, followups)
