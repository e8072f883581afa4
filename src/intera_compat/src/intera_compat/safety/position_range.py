"""The joints' position range in force, and the safety bypass as a mode of it.

The sources and the joint-limits plugin hold views of ``lower`` / ``upper``; everything here changes them in place.
A bypass (``/robot/limb/right/suppress_..._safety`` style request for a few seconds) widens the range to the relaxed
one; when it ends, or whenever the arm is found beyond a limit, the range closes in behind the reference and never
widens again by itself: a joint left beyond its limit may only come back (a clamp straight to the limit would jump
the arm).
"""
from __future__ import annotations

import numpy as np

from .joint_limits import relaxed_range


class PositionRange:
    def __init__(self, lower: np.ndarray, upper: np.ndarray, bypass_tolerance: float):
        self.lower, self.upper = np.array(lower, float), np.array(upper, float)
        self.configured = self.lower.copy(), self.upper.copy()
        self._relaxed = relaxed_range(self.lower, self.upper, bypass_tolerance)
        self.narrowing = False  # after a bypass or with the arm beyond a limit: the range closes in behind it
        self.bypass_until = -1.0  # loop time at which the bypass ends
        self._bypass_was = False
        n = len(self.lower)
        self._t_lo, self._t_hi = np.zeros(n), np.zeros(n)
        self._beyond, self._beyond2 = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        self.limits = None  # the joint-limits plugin told of every change (``set_range``), when the chain has one

    def bypass(self, now: float) -> bool:
        return now < self.bypass_until

    def request_bypass(self, now: float, seconds: float) -> bool:
        """A bypass for ``seconds`` from ``now`` (≤ 0: end it). True when it began or ended."""
        self.bypass_until = now + seconds if seconds > 0.0 else -1.0
        return self.bypass_edge(now)

    def bypass_edge(self, now: float) -> bool:
        """The bypass began or ended (by request or timeout): widen the range, or start closing it in behind the
        reference. True on an edge."""
        on = now < self.bypass_until
        if on == self._bypass_was:
            return False
        self._bypass_was = on
        if on:
            self.narrowing = False
            self._set(*self._relaxed)
        else:
            self.narrowing = True
        return True

    def narrow(self, q_ref: np.ndarray) -> None:
        """After a bypass (or with the arm found beyond a limit) the range is the configured one widened only to
        where the reference ``q_ref`` still is."""
        (lo, hi), t_lo, t_hi = self.configured, self._t_lo, self._t_hi
        np.minimum(lo, q_ref, out=t_lo)
        np.maximum(t_lo, self.lower, out=t_lo)
        np.maximum(hi, q_ref, out=t_hi)
        np.minimum(t_hi, self.upper, out=t_hi)
        self._set(t_lo, t_hi)
        if np.array_equal(t_lo, lo) and np.array_equal(t_hi, hi):
            self.narrowing = False

    def admit_measured(self, q: np.ndarray) -> None:
        """The arm measured at ``q`` is beyond the range (pushed there, a limp or braked arm sagging past a limit,
        started there): the range reaches out to it, so no reference is clamped back toward the limit (that would
        pull the arm in at the following-error window's pace), and then closes in behind the reference as the arm
        comes back."""
        out = self._beyond
        np.less(q, self.lower, out=out)
        np.logical_or(out, np.greater(q, self.upper, out=self._beyond2), out=out)
        if not np.count_nonzero(out):
            return
        np.minimum(self.lower, q, out=self._t_lo)
        np.maximum(self.upper, q, out=self._t_hi)
        self._set(self._t_lo, self._t_hi)
        self.narrowing = True

    def _set(self, lower: np.ndarray, upper: np.ndarray) -> None:
        self.lower[:] = lower
        self.upper[:] = upper
        if self.limits is not None:
            self.limits.set_range(self.lower, self.upper)
