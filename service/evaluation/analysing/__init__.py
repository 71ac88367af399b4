"""Analyses of a collection computed by the workers and read by organisers: reusability and
reduced-judgment experiments, per-topic figures over the runs, topic set size design."""
