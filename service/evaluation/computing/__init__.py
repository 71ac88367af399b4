"""The workers' work: the task names and leases (``work``), the table from task name to use
case (``task_table``), planning a job (``planning``), evaluating runs (``evaluating``), the
pairwise tests and meta-evaluation (``significance_tests``), the sweeper that keeps results
whole (``sweeping``), pruning of bookkeeping rows (``pruning``) and a job's progress
(``jobs``)."""
