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
        self._d = np.zeros(n)
        self._b = np.zeros(n, dtype=bool)
        self._primed = False

    def reset(self, hw: HardwareState, sp: Setpoint) -> None:
        self._primed = False

    def _over(self, x: np.ndarray, limit: np.ndarray) -> bool:
        """Any |x| > limit (no allocation)."""
        np.abs(x, out=self._d)
        np.greater(self._d, limit, out=self._b)
        return np.count_nonzero(self._b) > 0  # (count_nonzero is ~7x cheaper than .any() on 8 bools)

    def on_setpoint(self, hw: HardwareState, sp: Setpoint) -> int:
        q, d, b = sp.q, self._d, self._b
        changed = False
        np.less(q, self.lower, out=b)
        if np.count_nonzero(b) or np.count_nonzero(np.greater(q, self.upper, out=b)):
            np.clip(q, self.lower, self.upper, out=q)
            changed = True
        if self._primed:
            np.subtract(q, self.prev, out=d)
            d[sp.torque_only] = 0.0  # torque-driven joints are not stepped
            if self._over(d, self.step):
                np.subtract(q, self.prev, out=d)
                d[sp.torque_only] = 0.0
                np.clip(d, -self.step, self.step, out=d)
                np.add(self.prev, d, out=d)
                np.copyto(q, d, where=~sp.torque_only)
                changed = True
        self.prev[:] = q
        self._primed = True
        if self._over(sp.v, self.vmax):
            np.clip(sp.v, -self.vmax, self.vmax, out=sp.v)
            changed = True
        if self._over(sp.a, self.amax):
            np.clip(sp.a, -self.amax, self.amax, out=sp.a)
            changed = True
        self.interventions += changed
        return 0
