"""Joint limits on the setpoint: position range, per-cycle step (velocity), velocity and
acceleration (the inverse-dynamics feed-forward). Joints driven by torque are left to
``torque_guard``.

The step limit keeps the setpoint from moving more than ``v_max × dt`` per cycle relative to
the previous cycle's setpoint, so no source can make the reference jump; it restarts from the
setpoint handed over whenever the loop switches sources.
"""
from __future__ import annotations

import numpy as np

from ..hardware.base import HardwareState
from ..sources.base import Setpoint
from .base import SafetyPlugin


class JointLimits(SafetyPlugin):
    name = "joint_limits"

    def __init__(self, lower, upper, vmax, amax, dt: float, step_margin: float = 1.05):
        super().__init__()
        self.lower, self.upper = np.asarray(lower, float), np.asarray(upper, float)
        self.vmax, self.amax = np.asarray(vmax, float), np.asarray(amax, float)
        self.step = self.vmax * dt * step_margin
        n = len(self.lower)
        self.prev = np.zeros(n)
        self._lo, self._hi = np.zeros(n), np.zeros(n)
        self._primed = False

    def reset(self, hw: HardwareState, sp: Setpoint) -> None:
        self._primed = False

    def on_setpoint(self, hw: HardwareState, sp: Setpoint) -> int:
        q, free = sp.q, sp.torque_only
        changed = False
        if ((q < self.lower) | (q > self.upper)).any():
            np.clip(q, self.lower, self.upper, out=q)
            changed = True
        if self._primed:
            lo, hi = self._lo, self._hi
            np.subtract(self.prev, self.step, out=lo)
            np.add(self.prev, self.step, out=hi)
            lo[free] = -np.inf
            hi[free] = np.inf
            if ((q < lo) | (q > hi)).any():
                np.clip(q, lo, hi, out=q)
                changed = True
        self.prev[:] = q
        self._primed = True
        if (np.abs(sp.v) > self.vmax).any():
            np.clip(sp.v, -self.vmax, self.vmax, out=sp.v)
            changed = True
        if (np.abs(sp.a) > self.amax).any():
            np.clip(sp.a, -self.amax, self.amax, out=sp.a)
            changed = True
        self.interventions += changed
        return 0
