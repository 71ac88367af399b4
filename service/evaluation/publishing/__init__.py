"""Publishing results: the one definition of a run's current stored result, leaderboards with
their intervals and significance, snapshots, exports (CSV, LaTeX), the Monte Carlo side of a
stored test, and the rule of every read keyed by a qrels version. Nothing here computes a
metric: everything is read from what the workers stored."""
