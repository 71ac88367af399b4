"""Steps every use case shares: finding a row by id and checking a new name (``lookup``), an
upload's memory (``memory``), and the unit of work a use case hands the workers (``work``:
``Outcome`` and ``Followup``, task names, leases and heartbeats)."""
