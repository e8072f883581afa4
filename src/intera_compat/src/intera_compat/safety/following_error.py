"""Following error: the reference may not run away from the measured position.

For every joint tracking a moving reference (not torque-driven, not holding a fixed target) the
setpoint is kept within ``window`` (rad) of the measured
angle, and its velocity / acceleration feed-forward are dropped while it is held there; the
loop then rebases the source so an integrated reference (POSITION, VELOCITY) cannot wind up
against an obstacle and snap at full torque when released. A source whose reference is given
from outside (streamed or whole trajectories) that is more than ``fault_window`` away from the
arm is a fault: the arm does not follow what it is told.
"""
from __future__ import annotations

import numpy as np

from ..hardware.base import HardwareState
from ..sources.base import Setpoint
from .base import SafetyPlugin
from .faults import FAULT_FOLLOWING_ERROR


class FollowingError(SafetyPlugin):
    name = "following_error"

    def __init__(self, n: int, window: float = 0.1, fault_window: float = 0.5):
        super().__init__()
        if not 0.0 < window < fault_window:
            raise ValueError("following error: need 0 < window < fault_window")
        self.window, self.fault_window = float(window), float(fault_window)
        self.err = np.zeros(n)
        self._abs = np.zeros(n)
        self._skip = np.zeros(n, dtype=bool)
        self.max_error = 0.0  # of the last cycle, rad (tracked joints)

    def on_setpoint(self, hw: HardwareState, sp: Setpoint) -> int:
        e, ae = self.err, self._abs
        np.subtract(sp.q, hw.position, out=e)
        np.logical_or(sp.torque_only, sp.fixed, out=self._skip)
        np.copyto(e, 0.0, where=self._skip)
        np.abs(e, out=ae)
        j = int(ae.argmax())
        self.max_error = float(ae[j])
        if self.max_error > self.fault_window:
            self.fault_joint = j
            return FAULT_FOLLOWING_ERROR
        if self.max_error > self.window:
            out = ae > self.window
            np.clip(e, -self.window, self.window, out=e)
            np.add(hw.position, e, out=ae)  # ae reused as the clamped reference
            sp.q[out] = ae[out]
            sp.v[out] = 0.0
            sp.a[out] = 0.0
            self.interventions += 1
        return 0
