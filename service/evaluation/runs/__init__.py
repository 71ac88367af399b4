"""Runs: a team's submissions (windows, quotas, metadata, downloads) and a run's own results
(per-topic scores, a comparison of two runs, its metrics table and gain curves)."""
