"""Spatial resampling of a joint path for waypoint controllers (a Cobot's PLC plans its own motion through the
points it is given, and dense points make it jerky).

Walking back from the last point, a point is kept when some joint moved at least ``delta`` from the last point
kept (the largest joint difference: every joint counts, the first and the last too); the first and the last
point are always kept. This is the Cobot trajectory controller's rule (its ``resampling_delta``) with the first
point kept and no joint left out — and with every turning point kept: a point where some joint's motion reverses
(a path that goes out and back, joint_trajectory_client.py's) is where the arm must get to, and the rule alone cut
that corner short by up to ``delta``. A turn is a joint going back ``TURN_BAND`` (5 mrad) from its furthest point:
smaller wiggles (a recording's noise) are not.
"""
from __future__ import annotations

import numpy as np

TURN_BAND = 0.005  # rad: a joint turns where it goes back at least this far (or ``delta``, if smaller) from its
# furthest point — a recording's noise (1e-5 rad) turned at every point and the PLC crawled through all of them


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
    turns = _turns(q, min(TURN_BAND, delta))
    kept = [k - 1]
    last = q[-1]
    for i in range(k - 2, 0, -1):
        if turns[i] or np.abs(q[i] - last).max() >= delta:
            kept.append(i)
            last = q[i]
    kept.append(0)
    return np.array(kept[::-1])


def _turns(q: np.ndarray, band: float) -> np.ndarray:
    """The points where some joint turns: its furthest point (the last of a rest there) before it goes back at
    least ``band`` (a zigzag with hysteresis: wiggles smaller than ``band`` are no turns)."""
    k = len(q)
    turns = np.zeros(k, dtype=bool)
    for x in q.T.tolist():
        way, ext, lo, hi = 0, 0, 0, 0  # way: +1 rising, -1 falling, 0 not yet moved ``band``
        for i in range(1, k):
            xi = x[i]
            if way == 0:
                if xi >= x[hi]:
                    hi = i
                if xi <= x[lo]:
                    lo = i
                if x[hi] - x[lo] >= band:
                    way, ext = (1, hi) if hi > lo else (-1, lo)
            elif way * (xi - x[ext]) >= 0.0:
                ext = i  # further the same way (or resting at its furthest)
            elif way * (x[ext] - xi) >= band:
                turns[ext] = True
                way, ext = -way, i
    turns[0] = turns[-1] = False
    return turns
