"""Use cases shared by the CLI, the workers, the API and the portal, a room per thing organisers do.

The rooms have a direction: each imports only the rooms above it in this list (lowest first;
tests/unit/test_layers.py, ``ROOMS``), so a change low down never has to know what sits on it.

    service/evaluation/
      common/       lookup (a row by id, a new name), memory (an upload's memory), work (the
                    Outcome/Followup a use case returns, task names, leases and heartbeats)
      permissions/  access (tokens, the principal), policy (every rule), doors (authorise first)
      organising/   collections, setup (registering collections, qrels versions, runs), topics,
                    teams (enrolment), answers and answer_bundle (collections of answers),
                    results (the one "current stored result"), planning (a job: what the
                    workers must evaluate again), idempotency (uploads answered once)
      publishing/   reading, boards, board_intervals, monte_carlo, exports (CSV, LaTeX),
                    versions (the rule of every versioned read), console (preview a change,
                    re-evaluate, audit log)
      runs/         submissions (windows, quotas, metadata), run_results (a run's page),
                    answer_view (a RAG run's answers)
      analysing/    analyses (reusability, reduced judgments), topic_analysis, topic_sizes
      judging/      pools, assessments, judgments (an assessor's upload -> a qrels version),
                    qrels (uploads, previews), judgment_diff (diffs of versions), labels (several
                    assessors), judgment_sets, answer_judgments, judge_track, judge_comparison
      reproducing/  declarations (originals, who reproduces what), measuring (the workers'
                    KTU/RBO/RMSE/ER/DeltaRI per reproduction), board (verdicts, per topic, CSV)
      computing/    the workers' work: task_table (task -> use case), evaluating (and answers:
                    a RAG run's scores), significance_tests, sweeping, pruning, jobs

Imports the computation core (service.metrics, service.formats) and the store; never HTTP or
Celery. A use case that leaves work for the workers returns it (``common.work.Outcome``) for
the caller to send after its commit. No module imports another in a circle
(tests/unit/test_layers.py); rooms call each other's named functions.
"""
