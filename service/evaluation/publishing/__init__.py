"""Publishing results: leaderboards with their intervals and significance, snapshots, exports
(CSV, LaTeX), the Monte Carlo side of a stored test, the rule of every read keyed by a qrels
version, and the organisers' console (what a change of settings would do to the board,
re-evaluation on demand, the audit log). Nothing here computes a metric: everything is read
from what the workers stored."""
