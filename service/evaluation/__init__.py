"""Use cases shared by the CLI, the workers, the API and the portal, a room per thing organisers do.

    service/evaluation/
      organising/   collections, setup (registering collections, qrels versions, runs),
                    topics, teams (enrolment), console (preview a change, re-evaluate, audit log)
      runs/         submissions (windows, quotas, metadata), run_results (a run's page)
      judging/      pools, assessments, judgments (an assessor's upload -> a qrels version),
                    qrels (uploads, previews, diffs), judgment_diff, labels (several assessors),
                    judgment_sets, judge_track (automatic judges ranked), judge_comparison
      publishing/   results (the one "current stored result"), reading, boards, board_intervals,
                    monte_carlo, exports (CSV, LaTeX), versions (the rule of every versioned read)
      computing/    the workers' work: work (task names, leases), task_table (task -> use case),
                    planning (a job), evaluating, significance_tests, sweeping, pruning, jobs
      analysing/    analyses (reusability, reduced judgments), topic_analysis, topic_sizes
      reproducing/  declarations (originals, who reproduces what), measuring (the workers'
                    KTU/RBO/RMSE/ER/DeltaRI per reproduction), board (verdicts, per topic, CSV)
      permissions/  access (tokens, the principal), policy (every rule), doors (authorise first)
      common/       lookup, idempotency, memory (an upload's memory)

Imports the computation core (service.metrics, service.formats) and the store; never HTTP or
Celery. A use case that leaves work for the workers returns it (``computing.work.Outcome``) for
the caller to send after its commit. No module imports another in a circle
(tests/unit/test_layers.py); rooms call each other's named functions.
"""
