"""The database schema (SQLAlchemy 2 typed declarative models).

Knows nothing of HTTP, Celery or the metrics core. Storage shapes (docs/decisions.md):
judgments are rows (versions are diffed in SQL); per-topic scores are one row per
(run evaluation, metric) holding the mean, its interval and the per-topic values as a
float64 array; pairwise test results are arrays over the pairs of one row per
(qrels version, metric, test). 100 runs x 30 metrics is 3,000 score rows, and a
4950-pair matrix is one row.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, column_property, mapped_column, relationship

# Deterministic constraint names keep Alembic's autogenerate stable across databases.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    """This process's wall clock (shifted by CRANFIELD_TEST_CLOCK_OFFSET, which only the tests set:
    a host whose clock is wrong). Leases and deadlines never use it: service.store.db.db_now."""
    from service.config import settings

    offset = settings().worker.clock_offset
    return datetime.now(UTC) + timedelta(seconds=offset) if offset else datetime.now(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Collection(Base):
    """A task or track: its runs, its qrels versions and its current configuration."""

    __tablename__ = "collections"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    visibility: Mapped[str] = mapped_column(String(20), default="private")  # private | public
    # How teams take part: "invite" (organisers enrol teams) or "open" (a participant enrols its own).
    enrolment: Mapped[str] = mapped_column(String(20), default="invite", server_default="invite")
    # Submissions: an open window (None = unbounded) and a per-team quota of valid runs per UTC day.
    submission_opens_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    submission_closes_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    daily_run_quota: Mapped[int | None] = mapped_column(Integer)
    # Participants see every team's scores only once the organisers release the leaderboard.
    leaderboard_released: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # A public/private topic split (the configuration's evaluation.hidden_topics): until the
    # organisers reveal it, everyone else sees scores on the visible topics only.
    topics_revealed: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    current_config_id: Mapped[int | None] = mapped_column(
        ForeignKey("collection_configs.id", use_alter=True, name="fk_collections_current_config")
    )
    # The newest version of the official judgment set: what boards rank by (migration 0017
    # made every collection's judgments one set, "official"; see JudgmentSet).
    current_qrels_id: Mapped[int | None] = mapped_column(
        ForeignKey("qrels_versions.id", use_alter=True, name="fk_collections_current_qrels")
    )
    official_set_id: Mapped[int | None] = mapped_column(
        ForeignKey("judgment_sets.id", use_alter=True, name="fk_collections_official_set")
    )
    # A "judges" track: enrolled teams may submit judgment sets, ranked on the judge board.
    accepts_judgments: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The judge board's settings (metric, measure, resamples, released, ...; service.evaluation.judging.judge_track)
    judge_track: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default="{}")
    # What its runs are (migration 0025, issue 35): "ranked" lists (TREC runs) or generated
    # "answers" (TREC RAG), chosen at creation; an answers collection's answer format and
    # validation limits (service.evaluation.organising.answers.SETTINGS)
    task_kind: Mapped[str] = mapped_column(String(20), default="ranked", server_default="ranked")
    answer_settings: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default="{}")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    current_config: Mapped[CollectionConfig | None] = relationship(foreign_keys=[current_config_id], post_update=True)
    current_qrels: Mapped[QrelsVersion | None] = relationship(foreign_keys=[current_qrels_id], post_update=True)


class CollectionConfig(Base):
    """An immutable version of a collection's evaluation configuration."""

    __tablename__ = "collection_configs"
    __table_args__ = (UniqueConstraint("collection_id", "version"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    levels: Mapped[list[Any]] = mapped_column(default=list)  # [{"level": 1, "label": "B", "gain": 1}, ...]
    official_metric: Mapped[str] = mapped_column(String(200))
    metrics: Mapped[list[Any]] = mapped_column(default=list)  # canonical metric names
    evaluation: Mapped[dict[str, Any]] = mapped_column(default=dict)  # order, missing, no_relevant, depth, max_level
    significance: Mapped[dict[str, Any]] = mapped_column(default=dict)  # test, resamples, alpha, correction, seed
    settings_hash: Mapped[str] = mapped_column(String(64))  # of what changes a run's scores
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    created_by: Mapped[str] = mapped_column(String(200), default="")


class Topic(Base):
    """A topic of a collection: its id (as in runs and qrels) and the texts participants and
    assessors read (migration 0015; "" when the organisers gave none)."""

    __tablename__ = "topics"
    __table_args__ = (UniqueConstraint("collection_id", "topic_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    topic_id: Mapped[str] = mapped_column(String(200))
    title: Mapped[str] = mapped_column(String(500), default="", server_default="")
    description: Mapped[str] = mapped_column(Text, default="", server_default="")


class JudgmentSet(Base):
    """A named set of judgments of a collection (the assessors' qrels, an automatic judge's, a
    post-edited merge) with its provenance. Its versions are ``QrelsVersion`` rows, numbered in
    one sequence per collection, so a version number alone names a version (and its set).

    One set is the collection's official one (``Collection.official_set_id``): its newest
    version is ``Collection.current_qrels_id``, what boards rank by. Sets submitted by a team
    (``team_id``) are a judges track's submissions. A set built from several assessors' labels
    keeps them (``AssessorLabel``) and derives each document's level by ``rule``."""

    __tablename__ = "judgment_sets"
    __table_args__ = (UniqueConstraint("collection_id", "name"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    source: Mapped[str] = mapped_column(String(20), default="human")  # human | automatic | merge
    model: Mapped[str] = mapped_column(String(200), default="")  # an automatic judge's model
    prompt: Mapped[str] = mapped_column(Text, default="")  # its prompt (or the prompt's name/URL)
    judged_on: Mapped[str] = mapped_column(String(40), default="")  # when it judged (an ISO date), as stated
    notes: Mapped[str] = mapped_column(Text, default="")
    rule: Mapped[str] = mapped_column(String(20), default="latest")  # several assessors' labels -> one level
    # evaluate every run under each new version (and when the configuration changes)
    auto_evaluate: Mapped[bool] = mapped_column(Boolean, default=True)
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    created_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    current_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("qrels_versions.id", use_alter=True, name="fk_judgment_sets_current_version")
    )


class AssessorLabel(Base):
    """One assessor's label of a document for a topic, kept in a judgment set so that its
    derived level (the set's rule over every assessor's label) can be recomputed."""

    __tablename__ = "assessor_labels"
    judgment_set_id: Mapped[int] = mapped_column(ForeignKey("judgment_sets.id", ondelete="CASCADE"), primary_key=True)
    topic: Mapped[str] = mapped_column(String(200), primary_key=True)
    docno: Mapped[str] = mapped_column(String(500), primary_key=True)
    assessor: Mapped[str] = mapped_column(String(200), primary_key=True)
    level: Mapped[int] = mapped_column(Integer)
    labelled_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class QrelsVersion(Base):
    """One upload of judgments: immutable; a new upload is a new version of its set."""

    __tablename__ = "qrels_versions"
    __table_args__ = (UniqueConstraint("collection_id", "version"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    # None only transiently: migration 0017 put every earlier version in its collection's "official" set
    judgment_set_id: Mapped[int | None] = mapped_column(ForeignKey("judgment_sets.id"))
    uploaded_by: Mapped[str] = mapped_column(String(200), default="")
    uploaded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    source_name: Mapped[str] = mapped_column(String(500), default="")
    checksum: Mapped[str] = mapped_column(String(64))  # sha256 of the uploaded bytes
    n_judgments: Mapped[int] = mapped_column(Integer)
    level_counts: Mapped[dict[str, Any]] = mapped_column(default=dict)  # topic -> {level: count}
    # the upload, zlib-compressed, verbatim; loaded only when read (a board needs the row, not the file)
    file: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    # adhoc | diversity (intent-aware: TREC diversity or NTCIR intent qrels) | sampled (NIST's
    # stratified-sample qrels); the judgment rows are the flattened ad hoc view (migration 0018)
    format: Mapped[str] = mapped_column(String(20), default="adhoc", server_default="adhoc")
    # an NTCIR upload's intent probability file, zlib-compressed, verbatim (None: uniform)
    intent_probabilities: Mapped[bytes | None] = mapped_column(LargeBinary, deferred=True)
    # a ``rag`` version's digest of each run's inputs ({"runs": {tag: digest}, "unjudged": digest}:
    # AnswerJudgments.run_inputs); a run whose digest an earlier version shares keeps its scores
    # (migration 0026). None for every other format: each run is evaluated on each version.
    run_inputs: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True, deferred=True)


class Judgment(Base):
    __tablename__ = "judgments"
    qrels_version_id: Mapped[int] = mapped_column(
        ForeignKey("qrels_versions.id", ondelete="CASCADE"), primary_key=True
    )
    topic: Mapped[str] = mapped_column(String(200), primary_key=True)
    docno: Mapped[str] = mapped_column(String(500), primary_key=True)
    level: Mapped[int] = mapped_column(Integer)


class Team(Base):
    __tablename__ = "teams"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)


#: The run types a team may state (TREC's submission form): ``Run.run_type``.
RUN_TYPES = ("automatic", "manual", "interactive")


class Run(Base):
    """A submitted run: the file kept verbatim (compressed) and its parsed metadata."""

    __tablename__ = "runs"
    # ix_runs_board_columns covers what a board reads of each run besides its scores: on SQLite
    # the metadata columns lie after the file's blob (its overflow pages), which a scan would walk
    __table_args__ = (UniqueConstraint("collection_id", "tag"),
                      Index("ix_runs_board_columns", "collection_id", "tag", "id", "is_primary", "run_type",
                            "uses_training_data", "uses_external_resources"))
    id: Mapped[int] = mapped_column(primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"))
    tag: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    is_baseline: Mapped[bool] = mapped_column(Boolean, default=False)
    is_primary: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    submitted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    submitted_by: Mapped[str] = mapped_column(String(200), default="")
    # received | validated | evaluating | evaluated | failed
    status: Mapped[str] = mapped_column(String(20), default="received")
    status_reason: Mapped[str] = mapped_column(Text, default="")
    source_name: Mapped[str] = mapped_column(String(500), default="")
    checksum: Mapped[str] = mapped_column(String(64))
    file: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)  # zlib-compressed, verbatim; loaded when read
    n_topics: Mapped[int] = mapped_column(Integer, default=0)
    n_lines: Mapped[int] = mapped_column(Integer, default=0)
    depth: Mapped[int] = mapped_column(Integer, default=0)
    # TREC's judging priority within the team (1 = judge first); None: the submission order
    judging_priority: Mapped[int | None] = mapped_column(Integer)
    # How the run was made (automatic | manual | interactive); None below: not stated
    run_type: Mapped[str] = mapped_column(String(20), default="automatic", server_default="automatic")
    uses_training_data: Mapped[bool | None] = mapped_column(Boolean)
    uses_external_resources: Mapped[bool | None] = mapped_column(Boolean)
    # the ir_metadata (PRIMAD) YAML as submitted (up to 256 KB): loaded when read, listings use has_ir_metadata
    ir_metadata: Mapped[str | None] = mapped_column(Text, deferred=True)
    # What the submission check warned of (a list of {code, message, ...}); None: submitted before warnings
    warnings: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    has_ir_metadata: Mapped[bool] = column_property(ir_metadata.column.is_not(None))

    team: Mapped[Team] = relationship()
    # the topics its file has lines for (loaded when read; the database deletes it with the run)
    file_topics: Mapped[RunTopics | None] = relationship(cascade="all, delete-orphan", passive_deletes=True)


class RunTopics(Base):
    """The topics a run's file has lines for, stored when the run is (migration 0021 listed the
    older runs'): a page tells a topic missing from the run from a real 0 with it, without
    decompressing the file. A table of its own rather than a column of ``runs``: on SQLite a
    column after the file's blob is read by walking the blob's overflow pages (docs/decisions.md)."""

    __tablename__ = "run_topics"
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    topics: Mapped[list[Any]] = mapped_column()  # topic ids as in the file, in the parser's order


class RunEvaluation(Base):
    """The scores of one run on one qrels version under one configuration, written at once."""

    __tablename__ = "run_evaluations"
    __table_args__ = (UniqueConstraint("run_id", "qrels_version_id", "settings_hash", "evaluator_version"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    qrels_version_id: Mapped[int] = mapped_column(ForeignKey("qrels_versions.id", ondelete="CASCADE"))
    config_id: Mapped[int] = mapped_column(ForeignKey("collection_configs.id", ondelete="CASCADE"))
    settings_hash: Mapped[str] = mapped_column(String(64))
    evaluator_version: Mapped[str] = mapped_column(String(40))
    topics: Mapped[list[Any]] = mapped_column(default=list)  # the order of every Score.values
    computed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    # the evaluation whose scores were copied (the run's inputs unchanged on this version:
    # planning.carry_unchanged), None when computed; not a foreign key (it may since be pruned)
    carried_from_id: Mapped[int | None] = mapped_column(Integer, nullable=True)

    scores: Mapped[list[Score]] = relationship(back_populates="evaluation", cascade="all, delete-orphan")


class Score(Base):
    """One metric of one run evaluation: the mean, its 95% t interval, and per-topic values."""

    __tablename__ = "scores"
    run_evaluation_id: Mapped[int] = mapped_column(
        ForeignKey("run_evaluations.id", ondelete="CASCADE"), primary_key=True
    )
    metric: Mapped[str] = mapped_column(String(200), primary_key=True)  # canonical name
    # NULL when undefined (no topic scored; an interval needs two): SQLite cannot store NaN.
    mean: Mapped[float | None] = mapped_column(Float)
    ci_low: Mapped[float | None] = mapped_column(Float)
    ci_high: Mapped[float | None] = mapped_column(Float)
    n_topics: Mapped[int] = mapped_column(Integer)
    values: Mapped[bytes] = mapped_column(LargeBinary)  # float64 little-endian, NaN = not evaluated
    # The same on the visible topics of a public/private split (NULL without a split).
    public_mean: Mapped[float | None] = mapped_column(Float)
    public_ci_low: Mapped[float | None] = mapped_column(Float)
    public_ci_high: Mapped[float | None] = mapped_column(Float)
    public_n: Mapped[int | None] = mapped_column(Integer)
    # The bootstrap interval of the mean (all topics, and the public ones of a split) with its
    # method ("bca" or "percentile") and resamples B; its level is the t interval's (95%), its seed
    # fixed (service.evaluation.computing.evaluating.BOOT_SEED). NULL on rows stored before revision 0012,
    # and the interval's ends where it is undefined (fewer than two topics).
    boot_low: Mapped[float | None] = mapped_column(Float)
    boot_high: Mapped[float | None] = mapped_column(Float)
    public_boot_low: Mapped[float | None] = mapped_column(Float)
    public_boot_high: Mapped[float | None] = mapped_column(Float)
    boot_method: Mapped[str | None] = mapped_column(String(20))
    boot_resamples: Mapped[int | None] = mapped_column(Integer)

    evaluation: Mapped[RunEvaluation] = relationship(back_populates="scores")


class RunCurve(Base):
    """J&K's average gain curves of one run evaluation, ranks 1..depth (float64 arrays)."""

    __tablename__ = "run_curves"
    run_evaluation_id: Mapped[int] = mapped_column(
        ForeignKey("run_evaluations.id", ondelete="CASCADE"), primary_key=True
    )
    depth: Mapped[int] = mapped_column(Integer)
    cg: Mapped[bytes] = mapped_column(LargeBinary)
    dcg: Mapped[bytes] = mapped_column(LargeBinary)
    ncg: Mapped[bytes] = mapped_column(LargeBinary)
    ndcg: Mapped[bytes] = mapped_column(LargeBinary)
    ideal_cg: Mapped[bytes] = mapped_column(LargeBinary)
    ideal_dcg: Mapped[bytes] = mapped_column(LargeBinary)


class Significance(Base):
    """One test of every pair of runs on one metric (arrays over the pairs, in pair order)."""

    __tablename__ = "significance"
    __table_args__ = (
        UniqueConstraint(
            "qrels_version_id", "metric", "test", "settings_hash", "evaluator_version", "runs_hash", "params_hash",
            "subset",
        ),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    qrels_version_id: Mapped[int] = mapped_column(ForeignKey("qrels_versions.id", ondelete="CASCADE"))
    metric: Mapped[str] = mapped_column(String(200))
    test: Mapped[str] = mapped_column(String(40))
    settings_hash: Mapped[str] = mapped_column(String(64))
    evaluator_version: Mapped[str] = mapped_column(String(40))
    runs_hash: Mapped[str] = mapped_column(String(64))
    params_hash: Mapped[str] = mapped_column(String(64))  # of the test settings (test, B, alpha, correction, seed)
    subset: Mapped[str] = mapped_column(String(20), default="all", server_default="all")  # all | public (visible topics)
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    run_ids: Mapped[list[Any]] = mapped_column(default=list)  # pairs are (a, b), a < b, in this order
    n_topics: Mapped[int] = mapped_column(Integer)
    # What is read of a test (migration 0022 dropped the never-read diff and statistic arrays):
    # the adjusted p (boards, letters, verdicts) and the raw p where a correction changed it
    # (NULL: the same as p_adjusted, as without a correction; docs/decisions.md).
    p_adjusted: Mapped[bytes] = mapped_column(LargeBinary)
    p: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    # Per pair of a resampling test (NULL for exact tests and rows stored before migration 0020):
    # the B of its p, its Monte Carlo standard error, 1.0 where the verdict is undecided at that B,
    # and the bootstrap's degenerate resamples left out (docs/statistics.md, "Monte Carlo precision").
    resamples: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True, deferred=True)
    mc_se: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True, deferred=True)
    undecided: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True, deferred=True)
    degenerate: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True, deferred=True)
    # The compact letter display of p_adjusted < alpha: each letter a list of positions in
    # run_ids (NULL for tests stored before letters were; boards then compute them).
    letters: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    computed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # the test copied (the same score tables on an earlier version: significance_tests), None when run
    carried_from_id: Mapped[int | None] = mapped_column(Integer, nullable=True)


class Job(Base):
    """An evaluation job: runs to (re-)evaluate, then the pairwise tests; progress counters."""

    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(20))  # load | qrels | scheduled | manual
    qrels_version_id: Mapped[int] = mapped_column(ForeignKey("qrels_versions.id", ondelete="CASCADE"))
    previous_qrels_id: Mapped[int | None] = mapped_column(ForeignKey("qrels_versions.id", ondelete="SET NULL"))
    config_id: Mapped[int] = mapped_column(ForeignKey("collection_configs.id", ondelete="CASCADE"))
    evaluator_version: Mapped[str] = mapped_column(String(40), default="")
    # running | testing | done | failed
    status: Mapped[str] = mapped_column(String(20), default="running")
    total: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    tests_queued_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    tests_attempts: Mapped[int] = mapped_column(Integer, default=0)
    report: Mapped[dict[str, Any]] = mapped_column(default=dict)  # rank changes of the official metric
    error: Mapped[str] = mapped_column(Text, default="")


class JobItem(Base):
    """One run of a job. The database, not the broker, says what remains to be done."""

    __tablename__ = "job_items"
    __table_args__ = (UniqueConstraint("job_id", "run_id"), Index("ix_job_items_status", "status"))
    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(20), default="queued")  # queued | evaluating | done | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # claims so far; the current claim's token
    queued_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)  # last sent to the workers
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    error: Mapped[str] = mapped_column(Text, default="")
    # "evaluating": until when the claim lives unless its attempt renews it (migration 0009)
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class ApiToken(Base):
    """A bearer token, stored as its sha256 only: the secret is shown once, at creation."""

    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))  # the secret's first characters, to recognise it
    name: Mapped[str] = mapped_column(String(200), default="")
    role: Mapped[str] = mapped_column(String(20))  # admin | organiser | participant | assessor
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))  # participants
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    created_by: Mapped[str] = mapped_column(String(200), default="")
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # participants: True when the token reaches only its TokenScope collections (among those its
    # team is enrolled in): a token an organiser made never reaches further than that organiser
    # (migration 0024). False: wherever its team is enrolled (admins' and the CLI's tokens).
    scoped: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # scoped participants made by an organiser without naming collections: the maker's token id.
    # Such a token also reaches whatever its maker organises *now* (a collection the organiser
    # creates later, say), never more. No foreign key: a maker's row outlives nothing it matters to.
    scoped_by: Mapped[int | None] = mapped_column(Integer, nullable=True)


class TokenScope(Base):
    """The collections a scoped participant token may act in (``ApiToken.scoped``)."""

    __tablename__ = "token_scopes"
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"), primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"), primary_key=True)


class PortalSession(Base):
    """A sign-in to the portal: the cookie holds a random secret, stored here as its sha256 only.

    It stands for one API token and lasts until ``expires_at``; signing out sets ``revoked_at``,
    and revoking (or deleting) its token ends it too. The cookie never holds the API token.
    """

    __tablename__ = "portal_sessions"
    id: Mapped[int] = mapped_column(primary_key=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), index=True)


class CollectionOrganiser(Base):
    """Which organiser tokens organise which collections."""

    __tablename__ = "collection_organisers"
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"), primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"), primary_key=True)


class Enrolment(Base):
    """A team taking part in a collection: its participants list, read and submit to it."""

    __tablename__ = "enrolments"
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"), primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True)
    enrolled_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    enrolled_by: Mapped[str] = mapped_column(String(200), default="")


class LeaderboardSnapshot(Base):
    """A frozen leaderboard: the rows as served when an organiser froze them. Never changes."""

    __tablename__ = "leaderboard_snapshots"
    id: Mapped[int] = mapped_column(primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    qrels_version: Mapped[int] = mapped_column(Integer)
    metric: Mapped[str] = mapped_column(String(200))
    label: Mapped[str] = mapped_column(String(200), default="")
    content: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    created_by: Mapped[str] = mapped_column(String(200), default="")


class AuditEvent(Base):
    """Who changed what, when."""

    __tablename__ = "audit_events"
    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    actor: Mapped[str] = mapped_column(String(200), default="")
    action: Mapped[str] = mapped_column(String(60))  # qrels.upload | run.submit | run.delete | config.update | ...
    collection_id: Mapped[int | None] = mapped_column(ForeignKey("collections.id", ondelete="SET NULL"))
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Pool(Base):
    """A pool of a collection's runs: which runs, what was excluded, counts per topic.

    Immutable once written; its documents are rows of PoolDocument. ``kind`` "depth": the
    union of the runs' top ``depth``, less what ``base_qrels_version_id`` judged (incremental
    pooling). ``kind`` "stratified" (migration 0019): ``strata`` ``[[first_rank, last_rank,
    rate], ...]`` (``depth`` is the last rank), every pooled document a row, those drawn at
    their stratum's rate with ``sample_seed`` marked ``sampled`` (the only ones judged).
    """

    __tablename__ = "pools"
    id: Mapped[int] = mapped_column(primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)  # 1, 2, ... within the collection
    depth: Mapped[int] = mapped_column(Integer)
    selection: Mapped[str] = mapped_column(String(20))  # all | primary | priority
    max_priority: Mapped[int | None] = mapped_column(Integer)
    max_level: Mapped[int] = mapped_column(Integer)  # judgments are levels 0..max_level
    base_qrels_version_id: Mapped[int | None] = mapped_column(ForeignKey("qrels_versions.id", ondelete="SET NULL"))
    run_ids: Mapped[list[Any]] = mapped_column(default=list)
    counts: Mapped[dict[str, Any]] = mapped_column(default=dict)  # topic -> {new, already_judged, union}
    size: Mapped[int] = mapped_column(Integer, default=0)
    seed: Mapped[int] = mapped_column(Integer, default=0)  # the assessors' document order
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    created_by: Mapped[str] = mapped_column(String(200), default="")
    kind: Mapped[str] = mapped_column(String(20), default="depth", server_default="depth")  # depth | stratified
    strata: Mapped[list[Any] | None] = mapped_column(JSON)  # stratified: [[first_rank, last_rank, rate], ...]
    sample_seed: Mapped[int | None] = mapped_column(Integer)  # stratified: the seed of the draw
    __table_args__ = (UniqueConstraint("collection_id", "number"),)


class PoolDocument(Base):
    """One document of a pool's topic: to be judged when ``sampled`` (every document of a depth
    pool); a stratified pool's documents also keep their stratum (index into the pool's
    ``strata``), best rank over the pooled runs and inclusion probability."""

    __tablename__ = "pool_documents"
    pool_id: Mapped[int] = mapped_column(ForeignKey("pools.id", ondelete="CASCADE"), primary_key=True)
    topic: Mapped[str] = mapped_column(String(100), primary_key=True)
    docno: Mapped[str] = mapped_column(String(200), primary_key=True)
    stratum: Mapped[int | None] = mapped_column(Integer)
    best_rank: Mapped[int | None] = mapped_column(Integer)
    inclusion_probability: Mapped[float | None] = mapped_column(Float)
    sampled: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())


class AssessorAssignment(Base):
    """The topics of a collection an assessor token judges (and the only ones it sees)."""

    __tablename__ = "assessor_assignments"
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"), primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"), primary_key=True)
    topic: Mapped[str] = mapped_column(String(100), primary_key=True)


class Analysis(Base):
    """A reusability analysis computed by the workers (leave-one-team-out), kept with its inputs."""

    __tablename__ = "analyses"
    id: Mapped[int] = mapped_column(primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(40))  # reusability (leave-one-team-out) | reduction | pool (a pool build)
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # None for a pool build requested before any judgment exists (migration 0008)
    qrels_version_id: Mapped[int | None] = mapped_column(ForeignKey("qrels_versions.id", ondelete="CASCADE"))
    config_id: Mapped[int] = mapped_column(ForeignKey("collection_configs.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(20), default="queued")  # queued | running | done | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    result: Mapped[dict[str, Any]] = mapped_column(default=dict)
    error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[str] = mapped_column(String(200), default="")
    # migration 0009: last sent to the workers ("queued"), and the claim's lease ("running")
    queued_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=utcnow)
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))



class IdempotencyKey(Base):
    """An upload's ``Idempotency-Key`` and the answer it got: the same key from the same token
    with the same body gets that answer again instead of a second run or qrels version."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("token_id", "scope", "key"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"))
    scope: Mapped[str] = mapped_column(String(100))  # the operation and its target, e.g. "runs:3"
    key: Mapped[str] = mapped_column(String(200))
    request_hash: Mapped[str] = mapped_column(String(64))  # sha256 of the body and the parameters
    response: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)  # pruning


class ReproductionOriginal(Base):
    """An original run (or a baseline/advanced pair: ``advanced_run_id``) that the organisers
    of a collection offer to be reproduced there; the runs may be of another collection they
    organise (reproducibility on another collection). Migration 0023."""

    __tablename__ = "reproduction_originals"
    id: Mapped[int] = mapped_column(primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"), index=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    advanced_run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    label: Mapped[str] = mapped_column(String(200), default="")
    registered_by: Mapped[str] = mapped_column(String(200), default="")
    registered_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Reproduction(Base):
    """A run of a collection declared a reproduction of a registered original: a run of an
    original run, or a baseline/advanced pair of runs (``advanced_run_id``) of an original
    pair. A run is in at most one declaration (a new one replaces it). Migration 0023."""

    __tablename__ = "reproductions"
    id: Mapped[int] = mapped_column(primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"), index=True)
    original_id: Mapped[int] = mapped_column(ForeignKey("reproduction_originals.id", ondelete="CASCADE"))
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), unique=True)
    advanced_run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), unique=True)
    declared_by: Mapped[str] = mapped_column(String(200), default="")
    declared_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ReproductionMeasure(Base):
    """The measures of one reproduction computed by the workers (service.evaluation.reproducing):
    per metric (``""``: the document order, KTU and RBO) and part (``baseline``, ``advanced``,
    or ``effect`` of a pair), the overall figures (``summary``) and the per-topic values as one
    float64 array of ``len(rows) x len(topics)`` (rows named by ``rows``, NaN: no value)."""

    __tablename__ = "reproduction_measures"
    reproduction_id: Mapped[int] = mapped_column(ForeignKey("reproductions.id", ondelete="CASCADE"),
                                                 primary_key=True)
    metric: Mapped[str] = mapped_column(String(200), primary_key=True)
    part: Mapped[str] = mapped_column(String(20), primary_key=True)
    analysis_id: Mapped[int | None] = mapped_column(ForeignKey("analyses.id", ondelete="SET NULL"))
    summary: Mapped[dict[str, Any]] = mapped_column(default=dict)
    topics: Mapped[list[Any]] = mapped_column(default=list)
    rows: Mapped[list[Any]] = mapped_column(default=list)
    values: Mapped[bytes] = mapped_column(LargeBinary)
    computed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
