"""The remote client: Cranfield's public HTTP API from another machine (``cranfield remote``).

  api.py          Client: one method per API operation, over httpx; problems as domain errors
  credentials.py  the config file where ``cranfield remote login`` keeps the URL and the token

It speaks only HTTP: it imports the standard library, httpx and ``service.errors``, never the
service's use cases, store or web layer (tests/unit/test_layers.py checks it).
"""

from __future__ import annotations

from service.client.api import Client, RemoteError, RunMetadata, Upload, problem_of, status_of

__all__ = ["Client", "RemoteError", "RunMetadata", "Upload", "problem_of", "status_of"]
