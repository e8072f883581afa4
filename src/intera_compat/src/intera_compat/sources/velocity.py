"""VELOCITY_MODE: a position reference integrated from the commanded joint velocities.

The reference velocity follows the command within the acceleration limits (a step in the
command is a ramp, a mode switch continues from the velocity the arm had) and slows down
before a position limit so it stops on it, and leaves it at once when commanded away. It is
rebased by the safety chain (following-error window), so a blocked arm does not wind it up.
Streaming: reverts to a hold on timeout.
"""
from __future__ import annotations

import numpy as np

from ..data.setpoint import Setpoint, clamp, limit_steps
from ..data.state import HardwareState
from .base import SetpointSource


class VelocitySource(SetpointSource):
    streaming = True

    def __init__(self, idx: slice, lower, upper, vmax, amax, dt: float):
        super().__init__(idx)
        self.lower, self.upper, self.vmax = lower[idx], upper[idx], vmax[idx]
        self.dt = dt
        self.dv = amax[idx] * dt  # largest velocity change per cycle
        self._ndv = -self.dv
        self.dstep = self.dv * dt
        n = len(self.lower)
        self.vel = np.zeros(n)  # commanded
        self.cur = np.zeros(n)  # the reference's velocity
        self.ref = np.zeros(n)
        self.acc = np.zeros(n)
        self._lo, self._hi = np.zeros(n), np.zeros(n)

    def accept(self, mask: np.ndarray, velocity: np.ndarray) -> None:
        i = self.idx
        np.copyto(self.vel, velocity[i], where=mask[i])
        np.clip(self.vel, -self.vmax, self.vmax, out=self.vel)

    def activate(self, sp: Setpoint, hw: HardwareState, now: float) -> None:
        i = self.idx
        torque = sp.torque_only[i]
        self.vel[:] = 0.0
        np.copyto(self.ref, sp.q[i])
        np.copyto(self.ref, hw.position[i], where=torque)
        np.copyto(self.cur, sp.v[i])
        np.copyto(self.cur, hw.velocity[i], where=torque)
        np.clip(self.cur, -self.vmax, self.vmax, out=self.cur)

    def update(self, now: float, hw: HardwareState, sp: Setpoint) -> int:
        i = self.idx
        cur, acc, lo, hi = self.cur, self.acc, self._lo, self._hi
        acc[:] = cur
        # toward the commanded velocity within the acceleration limit
        np.subtract(self.vel, cur, out=lo)
        clamp(lo, self._ndv, self.dv, lo)
        cur += lo
        # no faster toward a limit than stops on it
        limit_steps(self.ref, self.lower, self.upper, self.dstep, lo, hi)
        lo /= self.dt
        hi /= self.dt
        clamp(cur, lo, hi, cur)
        np.subtract(cur, acc, out=acc)
        acc /= self.dt
        np.multiply(cur, self.dt, out=lo)
        self.ref += lo
        clamp(self.ref, self.lower, self.upper, self.ref)
        sp.track(i, self.ref, cur, acc)
        return 0

    def rebase(self, sp: Setpoint) -> None:
        i = self.idx
        self.ref[:] = sp.q[i]
        clamp(sp.v[i], -self.vmax, self.vmax, self.cur)
