"""Use cases shared by the CLI, the workers, the API and the portal, one module per job
(collections, teams, submissions, qrels, boards, run_results, jobs, planning, evaluating,
significance_tests, sweeping, judging, analyses); access rules in ``policy``.

Imports the computation core and the store; never HTTP or Celery. A use case that leaves work
for the workers returns it (``work.Outcome``) for the caller to send after its commit.
"""
