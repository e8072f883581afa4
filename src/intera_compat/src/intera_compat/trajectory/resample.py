"""Spatial resampling of a joint path for waypoint controllers (a Cobot's PLC plans its own motion through the
points it is given, and dense points make it jerky).

Walking back from the last point, a point is kept when some joint moved at least ``delta`` from the last point
kept (the largest joint difference: every joint counts, the first and the last too); the first and the last
point are always kept. This is the Cobot trajectory controller's rule (its ``resampling_delta``) with the first
point kept and no joint left out.
"""
from __future__ import annotations

import numpy as np


def resample(q: np.ndarray, delta: float) -> np.ndarray:
    """Indices (ascending) of the rows of ``q`` (points × joints) to keep; ``delta`` ≤ 0 keeps them all."""
    q = np.asarray(q, dtype=float)
    if q.ndim != 2 or len(q) == 0:
        raise ValueError(f"resample: a (points, joints) array is needed, got shape {q.shape}")
    if not np.isfinite(q).all():
        raise ValueError("resample: the points are not all finite")
    if not np.isfinite(delta):
        raise ValueError(f"resample: delta {delta} is not a finite number")
    k = len(q)
    if delta <= 0.0 or k <= 2:
        return np.arange(k)
    kept = [k - 1]
    last = q[-1]
    for i in range(k - 2, 0, -1):
        if np.abs(q[i] - last).max() >= delta:
            kept.append(i)
            last = q[i]
    kept.append(0)
    return np.array(kept[::-1])
