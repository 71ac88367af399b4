"""A deterministic NTCIR-like test collection generator.

No data can be downloaded where Cranfield is built, so the sample collection,
the tests' generated collections and the benchmark all come from here:
graded qrels (L0..L3, NTCIR's S/A/B scale), pooled-but-unjudged documents,
runs of graded quality with tied scores, and topics some runs miss.
Same arguments, same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class CollectionSpec:
    topics: int = 20
    runs: int = 8
    depth: int = 100
    docs_per_topic: int = 400  # candidate documents per topic
    judged_per_topic: int = 150  # judged documents per topic (the pool)
    max_level: int = 3
    seed: int = 20261121
    missing_topic_rate: float = 0.05  # chance a run misses a topic
    tie_rate: float = 0.05  # chance a score repeats the previous one
    no_relevant_topics: int = 1  # topics judged all non-relevant
    unjudged_label_rate: float = 0.02  # judged with label -1 (pooled, unjudged)


def generate(spec: CollectionSpec) -> tuple[str, dict[str, str]]:
    """Return (NTCIR qrels text, {run tag: TREC run text})."""
    rng = np.random.default_rng(spec.seed)
    topic_ids = [f"{i + 1:04d}" for i in range(spec.topics)]
    qrels_lines: list[str] = []
    truth: dict[str, np.ndarray] = {}
    for ti, topic in enumerate(topic_ids):
        # Latent relevance of every candidate document: a few highly relevant, many not.
        latent = rng.choice(spec.max_level + 1, size=spec.docs_per_topic, p=_level_probs(spec.max_level))
        if ti >= spec.topics - spec.no_relevant_topics:
            latent[:] = 0
        truth[topic] = latent
        judged = rng.choice(spec.docs_per_topic, size=min(spec.judged_per_topic, spec.docs_per_topic), replace=False)
        # Relevant documents are always in the pool (they were retrieved by someone).
        judged = np.union1d(judged, np.flatnonzero(latent > 0))
        for d in judged.tolist():
            level = int(latent[d])
            if rng.random() < spec.unjudged_label_rate and level == 0:
                qrels_lines.append(f"{topic} {_docno(ti, d)} L-1")
            else:
                qrels_lines.append(f"{topic} {_docno(ti, d)} L{level}")
    runs: dict[str, str] = {}
    for r in range(spec.runs):
        tag = f"RUN-{r + 1:02d}"
        quality = 0.2 + 1.6 * (spec.runs - r) / spec.runs  # earlier runs are better
        lines: list[str] = []
        for ti, topic in enumerate(topic_ids):
            if rng.random() < spec.missing_topic_rate:
                continue
            latent = truth[topic]
            noise = rng.gumbel(size=latent.shape[0])
            score = quality * latent + noise
            top = np.argsort(-score, kind="stable")[: spec.depth]
            s = np.round(score[top] + 10.0, 4)
            tie = rng.random(s.shape[0]) < spec.tie_rate
            for i in range(1, s.shape[0]):
                if tie[i]:
                    s[i] = s[i - 1]
            s = np.minimum.accumulate(s)
            for rank, (d, sc) in enumerate(zip(top.tolist(), s.tolist()), start=1):
                lines.append(f"{topic} Q0 {_docno(ti, d)} {rank} {sc:.4f} {tag}")
        runs[tag] = "\n".join(lines) + "\n"
    return "\n".join(qrels_lines) + "\n", runs


def _level_probs(max_level: int) -> np.ndarray:
    p = np.array([0.8] + [0.2 * 0.5**i for i in range(max_level)])
    return p / p.sum()


def _docno(topic_index: int, doc: int) -> str:
    return f"NTC-{topic_index:03d}-{doc:05d}"


def write(spec: CollectionSpec, out_dir: str | Path) -> tuple[Path, list[Path]]:
    """Write ``qrels.ntcir`` and ``runs/<TAG>.run`` under ``out_dir``."""
    out = Path(out_dir)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    qrels_text, runs = generate(spec)
    qrels_path = out / "qrels.ntcir"
    qrels_path.write_text(qrels_text, encoding="utf-8")
    run_paths = []
    for tag, text in runs.items():
        p = out / "runs" / f"{tag}.run"
        p.write_text(text, encoding="utf-8")
        run_paths.append(p)
    return qrels_path, run_paths
