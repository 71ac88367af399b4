"""Random collections for peer comparisons and property tests.

Each collection has graded qrels (levels 0..H), pooled-but-unjudged labels (-1),
retrieved documents that are not in the qrels at all, tied scores, runs that
miss topics, and (optionally) topics judged with no relevant document.
Everything is driven by a numpy Generator, so a seed reproduces a collection.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from service.formats.types import Qrels, Run


@dataclass(frozen=True)
class Generated:
    judgments: dict[str, dict[str, int]]  # topic -> docno -> level (may be -1)
    rankings: dict[str, dict[str, list[str]]]  # run tag -> topic -> docnos in Cranfield's rank order
    scores: dict[str, dict[str, list[float]]]  # run tag -> topic -> scores (ties included)
    max_level: int

    @property
    def qrels(self) -> Qrels:
        return Qrels.from_mapping(self.judgments)

    @property
    def runs(self) -> list[Run]:
        return [Run.from_rankings(tag, r) for tag, r in self.rankings.items()]

    def run_text(self, tag: str) -> str:
        """The run as a TREC file whose score order (trec_eval's) is the ranking order."""
        lines = []
        for topic, docs in self.rankings[tag].items():
            for rank, (d, s) in enumerate(zip(docs, self.scores[tag][topic]), start=1):
                lines.append(f"{topic} Q0 {d} {rank} {s!r} {tag}")
        return "\n".join(lines) + "\n"

    def relevant_topics(self) -> list[str]:
        return [t for t, j in self.judgments.items() if any(v >= 1 for v in j.values())]


def generate(
    rng: np.random.Generator,
    *,
    topics: int = 8,
    runs: int = 4,
    max_level: int = 3,
    docs: int = 60,
    judged_share: float = 0.6,
    depth: int = 40,
    missing_rate: float = 0.15,
    unjudged_label_rate: float = 0.05,
    no_relevant_topics: int = 1,
    tie_rate: float = 0.2,
) -> Generated:
    judgments: dict[str, dict[str, int]] = {}
    for t in range(topics):
        tid = f"{t + 1:03d}"
        j: dict[str, int] = {}
        for d in range(docs):
            if rng.random() < judged_share:
                level = int(rng.choice(max_level + 1, p=_probs(max_level)))
                if t < no_relevant_topics:
                    level = 0
                if level == 0 and rng.random() < unjudged_label_rate:
                    level = -1
                j[f"D{t}-{d:03d}"] = level
        if t >= no_relevant_topics and not any(v >= 1 for v in j.values()):
            j[f"D{t}-000"] = max_level
        judgments[tid] = j
    rankings: dict[str, dict[str, list[str]]] = {}
    scores: dict[str, dict[str, list[float]]] = {}
    for r in range(runs):
        tag = f"run{r}"
        rankings[tag], scores[tag] = {}, {}
        for t in range(topics):
            tid = f"{t + 1:03d}"
            if rng.random() < missing_rate:
                continue
            n = int(rng.integers(0, depth + 1)) if rng.random() < 0.2 else depth
            pool = [f"D{t}-{d:03d}" for d in range(docs)] + [f"X{t}-{d:03d}" for d in range(docs // 3)]
            chosen = list(rng.choice(len(pool), size=min(n, len(pool)), replace=False))
            # Scores: decreasing with ties; within a tie trec_eval orders by docno descending.
            vals = np.sort(np.round(rng.random(len(chosen)) * 10, 1))[::-1]
            for i in range(1, len(vals)):
                if rng.random() < tie_rate:
                    vals[i] = vals[i - 1]
            items = sorted(zip(vals.tolist(), [pool[c] for c in chosen]), key=lambda x: (-x[0], _neg_bytes(x[1])))
            rankings[tag][tid] = [d for _, d in items]
            scores[tag][tid] = [s for s, _ in items]
    return Generated(judgments, rankings, scores, max_level)


def _neg_bytes(s: str) -> tuple[int, ...]:
    return tuple(-b for b in s.encode()) + (1,)


def _probs(max_level: int) -> np.ndarray:
    p = np.array([0.55] + [0.45 * 0.55**i for i in range(max_level)])
    return p / p.sum()


def distinct_scores(n: int) -> list[float]:
    """Strictly decreasing scores that stay distinct in float32 (for trec_eval 9's float32 ranking)."""
    return [float(n - i) for i in range(n)]
