"""float64 arrays <-> bytes columns (little-endian, so files move between machines)."""

from __future__ import annotations

import numpy as np


def pack(values: np.ndarray) -> bytes:
    return np.ascontiguousarray(values, dtype="<f8").tobytes()


def unpack(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f8").copy()
