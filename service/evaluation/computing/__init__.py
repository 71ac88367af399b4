"""The workers' work: the table from task name to use case (``task_table``), evaluating runs
(``evaluating``; ``answers`` for a collection of answers), the pairwise tests and
meta-evaluation (``significance_tests``), the sweeper that keeps results whole (``sweeping``),
pruning of bookkeeping rows (``pruning``) and a job's progress (``jobs``). The top room: it
calls every other, none calls it."""
