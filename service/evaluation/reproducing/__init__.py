"""Reproducibility tracks (issue 28): which run reproduces which, and how well.

    declarations  organisers register originals (a run, or a baseline/advanced pair, of this
                  collection or of another one they organise); teams declare what their run
                  (or pair of runs) reproduces, at submission or afterwards, within the window
    measuring     the workers' part: per reproduction and metric, KTU/RBO (same collection),
                  RMSE/nRMSE, the t-test, and for a pair ER and DeltaRI with bootstrap
                  intervals (service.metrics.stats.reproducibility), stored in one transaction
                  and recomputed when the inputs change (an Analysis row of kind
                  ``reproducibility`` per collection, like the judge board)
    board         the reproducibility board (its verdicts in words), a reproduction's
                  per-topic values, the CSV export; the board's role rules

docs/reproducibility.md defines the measures and the verdict's rule.
"""
