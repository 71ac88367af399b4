"""One module per metric family; importing them registers every metric."""

from service.metrics.measures import binary, cascade, cumgain, graded, inferred  # noqa: F401
