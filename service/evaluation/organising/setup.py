"""Collections, their versioned configuration, qrels versions and runs: registering them.

Every upload is validated by the core's readers *before* anything is stored, so a bad
file leaves nothing behind; its error names the file and line.

A qrels version has a format (``QrelsVersion.format``): ``adhoc``, ``diversity`` (intent-aware
judgments, uploaded as TREC diversity qrels or NTCIR intent qrels with an optional intent
probability file) or ``sampled`` (NIST's five-column stratified-sample qrels). The upload is
kept verbatim; the judgment rows hold its flattened ad hoc view (for diversity the largest
level of a document over the topic's intents, for a sample ``SampledQrels.to_qrels()``), so
that pools, diffs, comparisons and the ad hoc metrics read every version alike.
:func:`load_judgments` gives the workers both the flattened view and what the format carries
beyond it. A metric that needs what a version does not carry (a diversity metric on ad hoc
qrels) is refused when a configuration naming it is saved over such current qrels; on any
other version (a later upload, another judgment set) its values are NaN and the job's report
says why (:func:`unavailable_metrics`).
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

import service
from service.config import settings
from service.errors import InvalidInput, InvalidMeasure, InvalidRequest
from service.formats.diversity import IntentQrels, parse_diversity_qrels, parse_intent_probabilities
from service.formats.limits import CountLimits
from service.formats.readers import parse_qrels, parse_run
from service.formats.sampled import SampledQrels, parse_sampled_qrels
from service.formats.text import check_text
from service.formats.types import Qrels, RunSummary
from service.formats.types import Run as CoreRun
from service.metrics import EvalSettings, parse_measure, parse_measures
from service.metrics.scoring import DEFAULT_MEASURES, needs_judgments
from service.store.models import (
    AuditEvent,
    Collection,
    CollectionConfig,
    Enrolment,
    Judgment,
    JudgmentSet,
    QrelsVersion,
    Run,
    RunTopics,
    Team,
    Topic,
)

EVALUATOR_VERSION = service.__version__
OFFICIAL_SET = "official"  # the name of the judgment set every collection starts with

#: The upload formats of qrels, each with the format its versions are stored in.
UPLOAD_FORMATS: dict[str, str] = {"adhoc": "adhoc", "diversity-trec": "diversity", "diversity-ntcir": "diversity",
                                  "sampled": "sampled"}
#: What each stored format is, in words (messages and pages).
FORMAT_NAMES = {"adhoc": "ad hoc qrels", "diversity": "intent-aware (diversity) qrels",
                "sampled": "stratified-sample qrels"}
#: What a metric needing a format must be given.
_FORMAT_NEEDED = {"diversity": "intent-aware judgments (qrels uploaded with format diversity-trec or diversity-ntcir)",
                  "sampled": "a stratified sample's qrels (uploaded with format sampled: topic iteration docno "
                             "stratum rel)"}

#: Stored tests start at B = 10,000 and resample further the pairs whose verdict straddles alpha, up
#: to ``max_resamples`` per pair (issue 25, item 1; docs/statistics.md, "Monte Carlo precision").
DEFAULT_SIGNIFICANCE = {"test": "bootstrap", "resamples": 10_000, "alpha": 0.05, "correction": "none", "seed": 0,
                        "max_resamples": 10_000_000}


@dataclass(frozen=True)
class ConfigSpec:
    """What an organiser chooses; becomes an immutable CollectionConfig version."""

    official_metric: str = "AP"
    metrics: tuple[str, ...] = DEFAULT_MEASURES
    levels: tuple[dict[str, Any], ...] = ()  # [{"level": 1, "label": "B", "gain": 1}, ...]
    evaluation: dict[str, Any] = field(default_factory=dict)  # order, missing, no_relevant, depth, max_level
    significance: dict[str, Any] = field(default_factory=dict)

    def normalised(self, answers: bool = False) -> dict[str, Any]:
        """Canonical metric names (the official one first), defaults filled in; validated. The
        RAG metrics only in a collection of answers (``answers``; docs/rag.md)."""
        try:
            official = str(parse_measures([self.official_metric])[0])
            metrics = [str(m) for m in parse_measures([official, *self.metrics])]
        except InvalidMeasure:
            raise
        rag = [n for n in metrics if parse_measure(n).definition.family == "rag"]
        if rag and not answers:  # (refused here, not by every run's evaluation in the workers)
            raise InvalidMeasure(f"{rag[0]} scores generated answers (nuggets, citation support), not ranked "
                                 "lists: it is a metric of a collection created with task_kind answers; in file "
                                 "mode: cranfield rag eval (docs/rag.md)")
        evaluation = {"order": "score", "missing": "zero", "no_relevant": "skip", "depth": None, "max_level": None,
                      "hidden_topics": [], **self.evaluation}
        hidden = evaluation["hidden_topics"]
        if not isinstance(hidden, list) or not all(isinstance(t, str) for t in hidden):
            raise InvalidMeasure("hidden_topics is a list of topic ids")
        evaluation["hidden_topics"] = sorted(set(hidden))
        significance = {**DEFAULT_SIGNIFICANCE, **self.significance}
        _check_significance(significance)
        try:
            EvalSettings(missing=evaluation["missing"], no_relevant=evaluation["no_relevant"], depth=evaluation["depth"])
        except ValueError as exc:
            raise InvalidMeasure(str(exc)) from None
        if evaluation["order"] not in ("score", "rank", "file"):
            raise InvalidMeasure(f"order must be score, rank or file, not {evaluation['order']!r}")
        return {"official_metric": official, "metrics": metrics, "levels": list(self.levels),
                "evaluation": evaluation, "significance": significance}


def _check_significance(sig: dict[str, Any]) -> None:
    from service.metrics.stats.pairwise import TESTS

    if sig["test"] not in TESTS:
        raise InvalidMeasure(f"significance test must be one of {', '.join(TESTS)}, not {sig['test']!r}")
    if sig["correction"] not in ("none", "holm", "bh"):
        raise InvalidMeasure(f"correction must be none, holm or bh, not {sig['correction']!r}")
    if not isinstance(sig["resamples"], int) or sig["resamples"] < 1:
        raise InvalidMeasure("resamples must be a positive integer")
    if not 0 < float(sig["alpha"]) < 1:
        raise InvalidMeasure("alpha must lie strictly between 0 and 1")
    if not isinstance(sig["seed"], int):
        raise InvalidMeasure("seed must be an integer")
    cap = sig.get("max_resamples")
    if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < sig["resamples"]):
        raise InvalidMeasure("max_resamples must be an integer at least resamples (the sequential rule's cap)")
    if "metrics" in sig:
        sig["metrics"] = [str(m) for m in parse_measures(sig["metrics"])]


def settings_hash(cfg: dict[str, Any]) -> str:
    """Hash of everything that changes a run's stored scores (not the test settings)."""
    key = {"metrics": sorted(cfg["metrics"]), "evaluation": cfg["evaluation"],
           "gains": [(lv["level"], lv.get("gain")) for lv in cfg["levels"]]}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def eval_settings(config: CollectionConfig) -> EvalSettings:
    ev = config.evaluation
    gains = tuple((int(lv["level"]), float(lv["gain"])) for lv in config.levels if lv.get("gain") is not None)
    return EvalSettings(
        missing=ev.get("missing", "zero"), no_relevant=ev.get("no_relevant", "skip"), depth=ev.get("depth"),
        gains=gains or None, max_level=ev.get("max_level"),
    )


def _check_gains(cfg: dict[str, Any], judged_top: int) -> None:
    """Gains (of a metric, or of the configured levels) must cover every judged level: refused
    here (400) rather than failing every run in the workers."""
    from service.metrics.lists import resolve_gains

    top = cfg["evaluation"].get("max_level")
    top = int(top) if top is not None else judged_top
    level_gains = {int(lv["level"]): lv["gain"] for lv in cfg["levels"] if lv.get("gain") is not None}
    try:
        if level_gains:
            resolve_gains(level_gains, top, "levels")
        for name in cfg["metrics"]:
            m = parse_measure(name)
            if "gains" in m.definition.param_map and m.get("gains") is not None:
                resolve_gains(m.get("gains"), top, name)
    except ValueError as exc:
        raise InvalidMeasure(str(exc)) from None


def audit(session: Session, actor: str, action: str, collection_id: int | None, **details: Any) -> None:
    session.add(AuditEvent(actor=actor, action=action, collection_id=collection_id, details=details))


def get_collection(session: Session, name: str) -> Collection:
    coll = session.scalar(select(Collection).where(Collection.name == name))
    if coll is None:
        raise InvalidMeasure(f"no collection named {name!r}")
    return coll


def ensure_collection(session: Session, name: str, spec: ConfigSpec | None, actor: str = "",
                      task_kind: str = "ranked") -> Collection:
    """The collection ``name``; created (with ``spec`` or defaults, of ``task_kind``) if new. A
    differing spec for an existing collection becomes its next configuration version."""
    coll = session.scalar(select(Collection).where(Collection.name == name))
    if coll is None:
        coll = Collection(name=check_text("collection", name), task_kind=task_kind)
        session.add(coll)
        session.flush()
        audit(session, actor, "collection.create", coll.id, name=name)
        official_set(session, coll)
        set_config(session, coll, spec or ConfigSpec(), actor)
    elif spec is not None:
        set_config(session, coll, spec, actor)
    return coll


def unavailable_metrics(metrics: Iterable[str], fmt: str) -> dict[str, str]:
    """The metrics among ``metrics`` that a qrels version of format ``fmt`` cannot score (their
    per-topic values are NaN), each with why; names the registry does not know are left out."""
    out: dict[str, str] = {}
    for name in metrics:
        try:
            need = needs_judgments(name)
        except InvalidMeasure:
            continue
        if need is not None and need != fmt:
            out[name] = f"{name} needs {_FORMAT_NEEDED[need]}; these are {FORMAT_NAMES.get(fmt, fmt)}"
    return out


def _check_formats(cfg: dict[str, Any], current: QrelsVersion) -> None:
    """Metrics the current qrels cannot score are refused (400) when the configuration is saved."""
    problems = unavailable_metrics(cfg["metrics"], current.format or "adhoc")
    if problems:
        raise InvalidMeasure(f"cannot be computed on the current qrels (version {current.version}): "
                             + "; ".join(problems.values())
                             + ". Upload such judgments first, then choose their metrics.")


def set_config(session: Session, coll: Collection, spec: ConfigSpec, actor: str = "") -> CollectionConfig:
    """A new configuration version, unless it equals the current one. Checked against the
    current qrels: gains covering their levels, metrics their format can score."""
    cfg = spec.normalised(answers=(coll.task_kind or "ranked") == "answers")
    if coll.current_qrels is not None:
        _check_gains(cfg, judged_top_level(coll.current_qrels))
        _check_formats(cfg, coll.current_qrels)
    current = coll.current_config
    if current is not None and {
        "official_metric": current.official_metric, "metrics": current.metrics, "levels": current.levels,
        "evaluation": current.evaluation, "significance": current.significance,
    } == cfg:
        return current
    version = (session.scalar(select(func.max(CollectionConfig.version)).where(
        CollectionConfig.collection_id == coll.id)) or 0) + 1
    row = CollectionConfig(collection_id=coll.id, version=version, settings_hash=settings_hash(cfg),
                           created_by=actor, **cfg)
    session.add(row)
    session.flush()
    if current is not None and current.official_metric != row.official_metric:
        audit(session, actor, "config.official_metric", coll.id, old=current.official_metric, new=row.official_metric)
    audit(session, actor, "config.update", coll.id, version=version)
    coll.current_config = row
    coll.current_config_id = row.id
    return row


@dataclass(frozen=True)
class ParsedQrels:
    """A qrels upload read in its format: the flattened ad hoc view (stored as the judgment
    rows) and what the format carries beyond it (``extra``: the intents or the strata)."""

    upload_format: str  # a key of UPLOAD_FORMATS
    qrels: Qrels
    extra: IntentQrels | SampledQrels | None = None
    probabilities: bytes | None = None  # the intent probability file, verbatim

    @property
    def format(self) -> str:
        """The stored format: adhoc, diversity, sampled, or rag (a part of an answers
        collection's judgments, ``rag-<part>``: service.evaluation.organising.answer_bundle)."""
        return "rag" if self.upload_format.startswith("rag-") else UPLOAD_FORMATS[self.upload_format]


def count_limits() -> CountLimits:
    """The counts an upload may hold: the service's settings (``service.config.FileSettings``,
    docs/operations.md, "Limits")."""
    files = settings().files
    return CountLimits(topics=files.max_topics, intents_per_topic=files.max_intents_per_topic,
                       intent_cells=files.max_intent_cells, strata_per_topic=files.max_strata_per_topic,
                       assessors=files.max_assessors, labels_per_document=files.max_labels_per_document)


def parse_upload(data: bytes, source: str, fmt: str = "adhoc", probabilities: bytes | None = None,
                 probabilities_source: str = "intent probabilities") -> ParsedQrels:
    """Read a qrels upload in its declared format (``UPLOAD_FORMATS``): every line validated
    (InvalidInput naming the file and line) before anything is stored, and the counts it holds
    within :func:`count_limits`. ``probabilities`` (NTCIR's ``topic intent probability``, format
    diversity-ntcir only) is checked against the qrels."""
    limits = count_limits()
    if fmt not in UPLOAD_FORMATS:
        raise InvalidRequest(f"format: one of {', '.join(UPLOAD_FORMATS)}, not {fmt!r}")
    if probabilities is not None and fmt != "diversity-ntcir":
        raise InvalidRequest(f"probabilities: an intent probability file goes with format diversity-ntcir, "
                             f"not {fmt}")
    if fmt == "adhoc":
        return ParsedQrels(fmt, parse_qrels(data, source, limits=limits))
    if fmt == "sampled":
        sample = parse_sampled_qrels(data, source)
        _check_sample_counts(sample, source, limits)
        return ParsedQrels(fmt, sample.to_qrels(), sample)
    probs = (parse_intent_probabilities(probabilities, probabilities_source, limits)
             if probabilities is not None else None)
    intents = parse_diversity_qrels(data, source, "trec" if fmt == "diversity-trec" else "ntcir", probs, limits)
    return ParsedQrels(fmt, intents.to_qrels(), intents, probabilities)


def _check_sample_counts(sample: SampledQrels, source: str, limits: CountLimits) -> None:
    """A sample's topics and strata per topic within ``limits`` (each stratum costs every run's
    evaluation of its topic a pass)."""
    if limits.topics is not None and len(sample.topics) > limits.topics:
        raise InvalidInput(source, None, f"{len(sample.topics):,} topics: a file may hold at most {limits.topics:,}")
    if limits.strata_per_topic is None:
        return
    for topic, strata in zip(sample.topics, sample.strata):
        count = len(set(strata))
        if count > limits.strata_per_topic:
            raise InvalidInput(source, None, f"topic {topic!r} has {count:,} strata: a topic may have at most "
                                             f"{limits.strata_per_topic:,}")


def add_qrels(
    session: Session, coll: Collection, data: bytes, source: str, actor: str = "", *,
    parsed: Qrels | ParsedQrels | None = None, judgment_set: JudgmentSet | None = None, fmt: str = "adhoc",
    probabilities: bytes | None = None,
) -> QrelsVersion:
    """Validate and store a new, immutable qrels version of ``judgment_set`` (default: the
    official one) and make it the set's current version; a version of the official set
    becomes the collection's current qrels (what boards rank by).

    ``parsed`` is the upload read beforehand (outside the transaction): ``parse_upload(data,
    source, fmt, probabilities)``, or ad hoc qrels (``parse_qrels``); without it the upload is
    read here in ``fmt`` (an upload format: adhoc, diversity-trec, diversity-ntcir, sampled).
    Version numbers run in one sequence per collection, across its sets.
    """
    if parsed is None:
        parsed = parse_upload(data, source, fmt, probabilities)  # InvalidInput before any write
    elif isinstance(parsed, Qrels):
        parsed = ParsedQrels("adhoc", parsed)
    qrels = parsed.qrels
    version = (session.scalar(select(func.max(QrelsVersion.version)).where(
        QrelsVersion.collection_id == coll.id)) or 0) + 1
    counts = {t: {str(int(lv)): int(c) for lv, c in zip(*np.unique(levels, return_counts=True))}
              for t, levels in zip(qrels.topics, qrels.levels)}
    target = judgment_set if judgment_set is not None else official_set(session, coll)
    row = QrelsVersion(
        collection_id=coll.id, version=version, judgment_set_id=target.id, uploaded_by=actor, source_name=source,
        checksum=hashlib.sha256(data).hexdigest(), n_judgments=int(sum(lv.shape[0] for lv in qrels.levels)),
        level_counts=counts, file=zlib.compress(data, 6), format=parsed.format,
        intent_probabilities=None if parsed.probabilities is None else zlib.compress(parsed.probabilities, 6),
    )
    session.add(row)
    session.flush()
    _store_judgments(session, row.id, qrels)
    known = set(session.scalars(select(Topic.topic_id).where(Topic.collection_id == coll.id)))
    new_topics = [t for t in qrels.topics if t not in known]
    most = count_limits().topics
    if most is not None and new_topics and len(known) + len(new_topics) > most:
        raise InvalidInput(source, None, f"{len(new_topics):,} new topics: the collection would have "
                                         f"{len(known) + len(new_topics):,}, more than the {most:,} a collection may have")
    if new_topics:
        session.execute(insert(Topic), [{"collection_id": coll.id, "topic_id": t} for t in new_topics])
    target.current_version_id = row.id
    if target.id == coll.official_set_id:
        coll.current_qrels = row
        coll.current_qrels_id = row.id
    audit(session, actor, "qrels.upload", coll.id, version=version, checksum=row.checksum, judgments=row.n_judgments,
          judgment_set=target.name, format=parsed.upload_format)
    return row


def official_set(session: Session, coll: Collection) -> JudgmentSet:
    """The collection's official judgment set (boards rank by its newest version), made
    ("official", human judgments) if the collection has none yet."""
    if coll.official_set_id is not None:
        found = session.get(JudgmentSet, coll.official_set_id)
        assert found is not None
        return found
    row = JudgmentSet(collection_id=coll.id, name=OFFICIAL_SET, source="human", created_by="",
                      current_version_id=coll.current_qrels_id)
    session.add(row)
    session.flush()
    coll.official_set_id = row.id
    return row


def _store_judgments(session: Session, version_id: int, qrels: Qrels) -> None:
    """Insert a version's judgments: PostgreSQL's COPY (about ten times faster than batched
    INSERTs for a 100k-judgment upload), batched INSERTs elsewhere."""
    rows = (
        (version_id, topic, docno.decode("utf-8"), level)
        for i, topic in enumerate(qrels.topics)
        for docno, level in zip(qrels.docnos[i].tolist(), qrels.levels[i].tolist())
    )
    connection = session.connection()
    if connection.dialect.name == "postgresql" and connection.dialect.driver == "psycopg":
        with connection.connection.driver_connection.cursor() as cursor:  # type: ignore[union-attr]
            with cursor.copy("COPY judgments (qrels_version_id, topic, docno, level) FROM STDIN") as copy:
                for r in rows:
                    copy.write_row(r)
        return
    values = [{"qrels_version_id": v, "topic": t, "docno": d, "level": lv} for v, t, d, lv in rows]
    if values:  # (none: an answers collection's version without retrieval qrels)
        session.execute(insert(Judgment), values)


def add_run(
    session: Session,
    coll: Collection,
    data: bytes,
    source: str,
    *,
    team: str | None = None,
    description: str = "",
    baseline: bool = False,
    actor: str = "",
    parsed: CoreRun | RunSummary | None = None,
) -> Run:
    """Validate and store a run (verbatim, compressed). Without ``team`` the run's tag names its team.

    ``parsed`` is the run already parsed (outside the transaction) in the collection's order,
    or its :class:`~service.formats.types.RunSummary` (the lists checked and let go).
    """
    order = coll.current_config.evaluation.get("order", "score") if coll.current_config else "score"
    if parsed is None:
        parsed = parse_run(data, source, order)  # raises InvalidInput before anything is written
    if isinstance(parsed, CoreRun):
        parsed = parsed.summary()
    if session.scalar(select(Run.id).where(Run.collection_id == coll.id, Run.tag == parsed.tag)) is not None:
        raise InvalidInput(source, None, f"collection {coll.name!r} already has a run tagged {parsed.tag!r}")
    team_name = team or parsed.tag
    team_row = enrolled_team(session, coll, team_name, actor)
    row = Run(
        collection_id=coll.id, team_id=team_row.id, tag=parsed.tag, description=description, is_baseline=baseline,
        submitted_by=actor, status="validated", source_name=source, checksum=hashlib.sha256(data).hexdigest(),
        file=zlib.compress(data, 1), n_topics=len(parsed.topics), n_lines=parsed.lines, depth=parsed.depth,
        file_topics=RunTopics(topics=list(parsed.topics)),  # what pages read instead of the file
    )
    session.add(row)
    session.flush()
    audit(session, actor, "run.submit", coll.id, run=row.tag, team=team_name, checksum=row.checksum)
    return row


def enrolled_team(session: Session, coll: Collection, team_name: str, actor: str = "") -> Team:
    """The team of a run being stored (made if new), enrolled in the collection: a team with a
    run in a collection takes part in it (organisers submitting or loading runs for a team enrol
    it; migration 0007 applied the same rule to older databases)."""
    team_row = session.scalar(select(Team).where(Team.name == team_name))
    if team_row is None:
        team_row = Team(name=check_text("team", team_name))
        session.add(team_row)
        session.flush()
    if session.get(Enrolment, (coll.id, team_row.id)) is None:
        session.add(Enrolment(collection_id=coll.id, team_id=team_row.id, enrolled_by=actor))
        session.flush()  # so the next run of the team in this session finds it (pending rows are not in get)
    return team_row


def judged_top_level(version: QrelsVersion) -> int:
    """H of a stored qrels version, the largest level judged (0 if nothing is relevant), read
    from its stored level counts: the same as ``load_qrels(version).max_level``, without
    parsing the upload again."""
    return max([0, *(int(level) for counts in version.level_counts.values() for level in counts)])


def max_level(s: Session, coll: Collection) -> int:
    """The top judgment level H of the collection: declared (evaluation.max_level, or the
    configured levels), else the current qrels' top level, else 3."""
    cfg = coll.current_config
    if cfg is not None and cfg.evaluation.get("max_level") is not None:
        return int(cfg.evaluation["max_level"])
    if cfg is not None and cfg.levels:
        return max(int(level["level"]) for level in cfg.levels)
    if coll.current_qrels is not None:
        return max(3, judged_top_level(coll.current_qrels))
    return 3


def load_qrels(version: QrelsVersion) -> Qrels:
    """The stored upload, parsed again (the bytes were validated when stored), as ad hoc qrels:
    for a diversity or sampled version its flattened view (what its judgment rows hold)."""
    return load_judgments(version)[0]


#: A version's judgments for evaluation: the ad hoc view, and the intents or the sample of a
#: diversity or sampled version (the answers' bundle of a ``rag`` one).
Judgments = tuple[Qrels, IntentQrels | SampledQrels | None]
_JUDGMENTS_CACHE: dict[tuple[str, int, str], Judgments] = {}


def cached_judgments(s: Session, version: QrelsVersion) -> Judgments:
    """:func:`load_judgments`, parsed once per process: versions are immutable (a worker scores
    every run of a version from one parse; a RAG run's answers page reads its version's
    judgments on every view). The last four versions are kept."""
    key = (str(s.get_bind().url), version.id, version.checksum)
    if key not in _JUDGMENTS_CACHE:
        if len(_JUDGMENTS_CACHE) >= 4:
            _JUDGMENTS_CACHE.pop(next(iter(_JUDGMENTS_CACHE)))
        _JUDGMENTS_CACHE[key] = load_judgments(version)
    return _JUDGMENTS_CACHE[key]


def load_judgments(version: QrelsVersion) -> tuple[Qrels, IntentQrels | SampledQrels | None]:
    """A stored version for evaluation: the ad hoc view and, for a diversity or sampled
    version, the intent-aware judgments or the sample (``scoring.evaluate``'s ``extra``)."""
    fmt = version.format or "adhoc"
    if fmt == "rag":  # an answers collection's: nuggets, assignments, support and retrieval qrels
        from service.evaluation.organising import answer_bundle

        parts = answer_bundle.read(answer_bundle.decode(zlib.decompress(version.file)))
        return parts.qrels, parts  # type: ignore[return-value]
    if fmt == "diversity":
        intents = load_intent_qrels(version)
        return intents.to_qrels(), intents
    if fmt == "sampled":
        sample = load_sampled_qrels(version)
        return sample.to_qrels(), sample
    return parse_qrels(zlib.decompress(version.file), f"qrels v{version.version}"), None


def load_intent_qrels(version: QrelsVersion) -> IntentQrels:
    """A diversity version's intent-aware judgments, with its intent probabilities if it has a
    file of them (else uniform). Read with the NTCIR reader whatever the upload's format: its
    level column (``L<n>`` or an integer) reads a TREC diversity file's integer labels as the
    TREC reader did when the file was validated."""
    if version.format != "diversity":
        raise ValueError(f"qrels version {version.version} is {version.format}, not diversity")
    blob = version.intent_probabilities
    probs = None if blob is None else parse_intent_probabilities(
        zlib.decompress(blob), f"intent probabilities of qrels v{version.version}")
    return parse_diversity_qrels(zlib.decompress(version.file), f"qrels v{version.version}", "ntcir", probs)


def load_sampled_qrels(version: QrelsVersion) -> SampledQrels:
    """A sampled version's stratified sample (NIST's five columns)."""
    if version.format != "sampled":
        raise ValueError(f"qrels version {version.version} is {version.format}, not sampled")
    return parse_sampled_qrels(zlib.decompress(version.file), f"qrels v{version.version}")


def load_run(blob: bytes, source: str, order: str) -> CoreRun:
    """A stored run (compressed bytes, validated when stored), parsed again."""
    return parse_run(zlib.decompress(blob), source, order)


#: Parsed runs kept by a process (:func:`parsed_run`, :func:`keep_parsed_run`), least recently
#: used first, keyed by (database, run id, file checksum, rank order).
_RUNS_CACHE: OrderedDict[tuple[str, int, str, str], CoreRun] = OrderedDict()
_RUNS_CACHE_BYTES = [0]


def _run_bytes(run: CoreRun) -> int:
    return sum(a.nbytes for a in (run.offsets, run.docnos, run.scores, run.doc_hashes, run.ranks) if a is not None)


def run_cache_key(s: Session, run: Run, order: str) -> tuple[str, int, str, str]:
    """A run's key among the parsed runs: (database, id, file checksum, rank order)."""
    return (str(s.get_bind().url), run.id, run.checksum, order)


def parsed_run(key: tuple[str, int, str, str]) -> CoreRun | None:
    """The run as this process parsed it before (the same file: its checksum is in the key), or
    None. A collection's re-evaluation (a qrels correction, a configuration change) scores the
    same runs again: a worker that scored a run keeps it parsed (issue 38: decompressing and
    parsing is a fifth of an evaluation's time), within ``CRANFIELD_RUN_CACHE_MB`` per process."""
    found = _RUNS_CACHE.get(key)
    if found is not None:
        _RUNS_CACHE.move_to_end(key)
    return found


def keep_parsed_run(key: tuple[str, int, str, str], parsed: CoreRun, limit_mb: float) -> None:
    """Keep a run this process parsed (:func:`parsed_run`), dropping the least recently used ones
    beyond ``limit_mb``; its arrays are made read-only, as every reader of it shares them."""
    size = _run_bytes(parsed)
    limit = limit_mb * 2**20
    if size > limit or key in _RUNS_CACHE:
        return
    for a in (parsed.offsets, parsed.docnos, parsed.scores, parsed.doc_hashes, parsed.ranks):
        if a is not None:
            a.setflags(write=False)
    _RUNS_CACHE[key] = parsed
    _RUNS_CACHE_BYTES[0] += size
    while _RUNS_CACHE_BYTES[0] > limit:
        _, dropped = _RUNS_CACHE.popitem(last=False)
        _RUNS_CACHE_BYTES[0] -= _run_bytes(dropped)
