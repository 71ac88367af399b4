"""The pure computation core: metric specs, kernels and evaluation (numpy only)."""

from service.metrics.scoring import DEFAULT_MEASURES, EvalSettings, Evaluation, evaluate, parse_measures
from service.metrics.spec import REGISTRY, Measure, bounds, parse_measure

__all__ = [
    "DEFAULT_MEASURES",
    "REGISTRY",
    "EvalSettings",
    "Evaluation",
    "Measure",
    "bounds",
    "evaluate",
    "parse_measure",
    "parse_measures",
]
