"""Organising a collection: creating and configuring it (versioned settings), registering its
topics, qrels versions and runs, enrolling teams, and the organisers' console (what a change
would do, re-evaluation on demand, the audit log)."""
