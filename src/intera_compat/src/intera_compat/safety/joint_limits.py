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
from ..sources.base import Setpoint, clamp
from .base import SafetyPlugin


class JointLimits(SafetyPlugin):
    name = "joint_limits"

    def __init__(self, lower, upper, vmax, amax, dt: float, step_margin: float = 1.05):
        super().__init__()
        self.lower, self.upper = np.asarray(lower, float), np.asarray(upper, float)
        self.vmax, self.amax = np.asarray(vmax, float), np.asarray(amax, float)
        self.step = self.vmax * dt * step_margin
        self._nstep = -self.step
        n = len(self.lower)
        # rows q, v, a of the setpoint block against their ranges, all in one clamp
        self._lo3 = np.stack([self.lower, -self.vmax, -self.amax])
        self._hi3 = np.stack([self.upper, self.vmax, self.amax])
        self._x3 = np.zeros((3, n))
        self._b3 = np.zeros((3, n), dtype=bool)
        self.prev = np.zeros(n)
        self._d = np.zeros(n)
        self._ad = np.zeros(n)
        self._b = np.zeros(n, dtype=bool)
        self._primed = False

    def reset(self, hw: HardwareState, sp: Setpoint) -> None:
        self._primed = False

    def on_setpoint(self, hw: HardwareState, sp: Setpoint) -> int:
        q = sp.q
        changed = False
        if self._primed:  # per-cycle step from the previous setpoint (torque-driven joints excepted)
            d, b = self._d, self._b
            np.subtract(q, self.prev, out=d)
            np.copyto(d, 0.0, where=sp.torque_only)
            np.abs(d, out=self._ad)
            if np.count_nonzero(np.greater(self._ad, self.step, out=b)):
                clamp(d, self._nstep, self.step, d)
                np.add(self.prev, d, out=d)
                np.logical_not(sp.torque_only, out=b)
                np.copyto(q, d, where=b)
                changed = True
        # position range, velocity and acceleration (count_nonzero: ~7x cheaper than .any() on a few bools)
        qva, x = sp.block[:3], self._x3
        clamp(qva, self._lo3, self._hi3, x)
        if np.count_nonzero(np.not_equal(x, qva, out=self._b3)):
            qva[:] = x
            changed = True
        self.prev[:] = q
        self._primed = True
        self.interventions += changed
        return 0
