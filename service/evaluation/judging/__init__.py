"""Judging: pools built from the runs, assessors' assignments and files, their judgments into
qrels versions, qrels uploads, previews and diffs, several assessors' labels, named judgment
sets, the judges track (automatic judges ranked against the official set) and the comparison
of two sets of judgments."""
