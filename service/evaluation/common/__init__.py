"""Steps most use cases share: finding a row by id and checking a new name (``lookup``),
idempotent uploads (``idempotency``), and an upload's memory (``memory``)."""
