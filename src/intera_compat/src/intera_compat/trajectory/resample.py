"""Spatial resampling of a joint path for waypoint controllers (a Cobot's PLC plans its own motion through the
points it is given, and dense points make it jerky).

Walking back from the last point, a point is kept when some joint moved at least ``delta`` from the last point
kept (the largest joint difference: every joint counts, the first and the last too); the first and the last
point are always kept. This is the Cobot trajectory controller's rule (its ``resampling_delta``) with the first
point kept and no joint left out — and with every turning point kept: a point where some joint's motion reverses
(a path that goes out and back, joint_trajectory_client.py's) is where the arm must get to, and the rule alone cut
that corner short by up to ``delta``.
"""
from __future__ import annotations

import numpy as np

TURN_EPS = 1e-9  # rad: a joint moving less than this between two points does not move (no turn from round-off)


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
    step = np.diff(q, axis=0)
    step[np.abs(step) < TURN_EPS] = 0.0
    sign = np.sign(step)
    # a turning point: some joint moves one way into it and the other way out (a rest in between counts too)
    moving = sign.copy()
    for i in range(1, len(moving)):  # (the last direction of motion, carried over a rest)
        np.copyto(moving[i], moving[i - 1], where=moving[i] == 0.0)
    turns = np.zeros(k, dtype=bool)
    turns[1:-1] = ((moving[:-1] * sign[1:]) < 0.0).any(axis=1)
    kept = [k - 1]
    last = q[-1]
    for i in range(k - 2, 0, -1):
        if turns[i] or np.abs(q[i] - last).max() >= delta:
            kept.append(i)
            last = q[i]
    kept.append(0)
    return np.array(kept[::-1])
