"""One module per metric family; importing them registers every metric."""

from service.metrics.measures import binary, cascade, cumgain, graded  # noqa: F401
