"""Cranfield: an evaluation service for NTCIR/TREC-style shared tasks.

Layers (imports point inward):
  service.formats, service.metrics  -- the pure computation core (numpy/scipy only)
  service.cli                        -- command-line front end over the core
"""

__version__ = "0.1.0"
