"""TRAJECTORY_MODE JointCommands: streamed (position, velocity, acceleration) points, extrapolated
between commands with constant acceleration; the acceleration is the inverse-dynamics feed-forward.

Joints a command does not name keep extrapolating from where their last point put them now.
"""
from __future__ import annotations

import numpy as np

from ..hardware.base import HardwareState
from .base import Setpoint, SetpointSource


class StreamSource(SetpointSource):
    streaming = True

    def __init__(self, idx: slice):
        super().__init__(idx)
        n = idx.stop - idx.start
        self.p, self.v, self.a = np.zeros(n), np.zeros(n), np.zeros(n)
        self.t0 = 0.0
        self._tmp = np.zeros(n)
        self._vel = np.zeros(n)

    def _advance(self, tau: float) -> None:
        """Move the stored point ``tau`` seconds along its extrapolation."""
        t = self._tmp
        np.multiply(self.a, 0.5 * tau, out=t)
        t += self.v
        t *= tau
        self.p += t
        np.multiply(self.a, tau, out=t)
        self.v += t

    def accept(self, mask: np.ndarray, position, velocity, acceleration, now: float) -> None:
        i = self.idx
        m = mask[i]
        if np.count_nonzero(m) == len(m):  # the usual case: every joint named
            self.p[:] = position[i]
            self.v[:] = velocity[i]
            self.a[:] = acceleration[i]
        else:
            self._advance(now - self.t0)
            np.copyto(self.p, position[i], where=m)
            np.copyto(self.v, velocity[i], where=m)
            np.copyto(self.a, acceleration[i], where=m)
        self.t0 = now

    def activate(self, sp: Setpoint, hw: HardwareState, now: float) -> None:
        i = self.idx
        self.p[:] = hw.position[i] if sp.torque_only[i].any() else sp.q[i]
        self.v[:] = 0.0
        self.a[:] = 0.0
        self.t0 = now

    def update(self, now: float, hw: HardwareState, sp: Setpoint) -> int:
        i = self.idx
        tau = now - self.t0
        q, v = self._tmp, self._vel
        np.multiply(self.a, 0.5 * tau, out=q)  # q = p + (v + a τ/2) τ
        q += self.v
        q *= tau
        q += self.p
        np.multiply(self.a, tau, out=v)  # v = v + a τ (the safety chain keeps it within the limits)
        v += self.v
        sp.track(i, q, v, self.a)
        return 0
