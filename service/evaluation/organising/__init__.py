"""Organising a collection: creating and configuring it (versioned settings), registering its
topics, qrels versions and runs, enrolling teams, collections of answers, which stored result
is current (``results``), the job that brings results up to date after a change
(``planning``), and uploads answered once (``idempotency``)."""
