"""Topic set size design on a collection's stored results, for organisers planning the next round.

For the current qrels version and configuration, each configured metric's (topics, runs)
matrix of stored per-topic scores (:func:`service.evaluation.publishing.reading.score_tables`)
gives the residual variance V_E of the two-way ANOVA without replication, and from it
Sakai's three designs (T. Sakai, "Topic set size design", Information Retrieval Journal
19(3), 2016; :mod:`service.metrics.stats.topicsize`): the topics the paired t test and
one-way ANOVA over the collection's runs need to detect each minimum difference with power
1 - beta, and the topics that keep the expected width of a difference's confidence interval
within each width. Computed on reading (a few milliseconds per metric); nothing is stored.

Like the meta-evaluation it uses every topic, hidden ones included, so it is shown to whoever
may see the analyses (``policy.may_see_analyses``). The portal renders the document with the
macro ``topicsize_table`` of ``templates/topicsize.html``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from service.evaluation.permissions import policy
from service.evaluation.permissions.access import Principal
from service.evaluation.publishing.reading import score_tables
from service.formats.text import counted
from service.metrics.stats.topicsize import DEFAULT_MIN_DIFFS, DEFAULT_WIDTHS, topic_set_sizes
from service.store.models import Collection

DEFAULT_BETA = 0.20


def topic_size_table(
    s: Session,
    coll: Collection,
    me: Principal,
    *,
    min_diffs: Sequence[float] = DEFAULT_MIN_DIFFS,
    widths: Sequence[float] = DEFAULT_WIDTHS,
    alpha: float | None = None,
    beta: float = DEFAULT_BETA,
) -> dict[str, Any] | None:
    """Each metric's topic set sizes on the current results, or None before the collection has
    qrels. ``alpha`` defaults to the collection's significance level (0.05 unless configured);
    ANOVA's m is the number of runs evaluated on the metric. A metric that cannot be designed
    (fewer than two evaluated runs or topics, a zero variance) carries an ``error`` instead."""
    policy.require(policy.may_see_analyses(me, coll), me, f"the topic set size design of collection {coll.id}")
    config = coll.current_config
    if coll.current_qrels_id is None or config is None:
        return None
    level = float(alpha if alpha is not None else (config.significance or {}).get("alpha", 0.05))
    metrics = list(config.metrics)
    tables = score_tables(s, coll.id, coll.current_qrels_id, config.settings_hash, metrics)
    rows: list[dict[str, Any]] = []
    for metric in metrics:
        run_ids, _, matrix = tables.get(metric, ([], [], None))
        if len(run_ids) < 2:
            rows.append({"metric": metric,
                         "error": f"{counted(len(run_ids), 'evaluated run')}: the variance needs two"})
            continue
        try:
            r = topic_set_sizes(matrix, min_diffs=min_diffs, widths=widths, alpha=level, beta=beta)
        except ValueError as exc:
            rows.append({"metric": metric, "error": str(exc)})
            continue
        rows.append({
            "metric": metric, "error": None, "topics": r.topics, "runs": r.runs, "dropped_topics": r.dropped_topics,
            "variance": r.variance, "systems": r.systems,
            "ttest": [{"min_diff": t.min_diff, "n": t.n, "power": t.power} for t in r.ttest],
            "anova": [{"min_diff": a.min_diff, "n": a.n, "power": a.power} for a in r.anova],
            "ci": [{"width": c.max_width, "n": c.n, "expected_width": c.width} for c in r.ci],
        })
    version = coll.current_qrels
    return {"qrels_version": version.version if version is not None else None, "alpha": level, "beta": float(beta),
            "power": 1.0 - float(beta), "estimator": "residual", "min_diffs": [float(d) for d in min_diffs],
            "widths": [float(w) for w in widths], "metrics": rows}
