"""VELOCITY_MODE: a position reference integrated from the commanded joint velocities.

The reference stops at the position limits and is rebased by the safety chain (following-error
window), so a blocked arm does not wind it up. Streaming: reverts to a hold on timeout.
"""
from __future__ import annotations

import numpy as np

from ..hardware.base import HardwareState
from .base import Setpoint, SetpointSource, clamp


class VelocitySource(SetpointSource):
    streaming = True

    def __init__(self, idx: slice, lower, upper, vmax, dt: float):
        super().__init__(idx)
        self.lower, self.upper, self.vmax = lower[idx], upper[idx], vmax[idx]
        self.dt = dt
        n = len(self.lower)
        self.vel = np.zeros(n)
        self.ref = np.zeros(n)
        self._v = np.zeros(n)
        self._lo, self._hi = np.zeros(n), np.zeros(n)

    def accept(self, mask: np.ndarray, velocity: np.ndarray) -> None:
        i = self.idx
        np.copyto(self.vel, velocity[i], where=mask[i])
        np.clip(self.vel, -self.vmax, self.vmax, out=self.vel)

    def activate(self, sp: Setpoint, hw: HardwareState, now: float) -> None:
        i = self.idx
        self.vel[:] = 0.0
        self.ref[:] = hw.position[i] if sp.torque_only[i].any() else sp.q[i]

    def update(self, now: float, hw: HardwareState, sp: Setpoint) -> int:
        i = self.idx
        ref, v = self.ref, self._v
        np.multiply(self.vel, self.dt, out=v)
        ref += v
        clamp(ref, self.lower, self.upper, ref)
        # feed-forward velocity: no more than reaches a limit within one cycle (0 on the limit)
        lo, hi = self._lo, self._hi
        np.subtract(self.lower, ref, out=lo)
        lo /= self.dt
        np.subtract(self.upper, ref, out=hi)
        hi /= self.dt
        clamp(self.vel, lo, hi, v)
        sp.track(i, ref, v, 0.0)
        return 0

    def rebase(self, sp: Setpoint) -> None:
        self.ref[:] = sp.q[self.idx]
