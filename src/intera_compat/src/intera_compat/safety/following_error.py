"""Following error: the reference may not run away from the measured position.

For every joint tracking a reference (not torque-driven) the setpoint is kept within ``window``
(rad) of the measured angle, and its velocity / acceleration feed-forward are dropped while it
is held there; the loop then rebases the source so an integrated reference (POSITION,
VELOCITY) cannot wind up against an obstacle and snap at full torque when released. Holds
(``fixed``: hold, brakes) are bounded the same way, so an arm pushed away returns at the pace
the window allows (``kp·window/kd``, under 1 rad/s with Sawyer's gains), never springs back
from far away; they never fault. A moving reference more than ``fault_window`` away from the
arm is a fault: the arm does not follow what it is told (a streamed or whole trajectory that
is not rebased).
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
        self._moving = np.zeros(n)
        self.max_error = 0.0  # of the last cycle, rad (tracked joints)

    def on_setpoint(self, hw: HardwareState, sp: Setpoint) -> int:
        e, ae = self.err, self._abs
        np.subtract(sp.q, hw.position, out=e)
        np.copyto(e, 0.0, where=sp.torque_only)
        np.abs(e, out=ae)
        j = int(ae.argmax())
        self.max_error = float(ae[j])
        sp.any_windowed = False
        if self.max_error <= self.window:
            return 0
        f = self._moving
        np.copyto(f, ae)
        np.copyto(f, 0.0, where=sp.fixed)  # holds are clamped, never a fault
        j = int(f.argmax())
        if f[j] > self.fault_window:
            self.fault_joint = j
            return FAULT_FOLLOWING_ERROR
        out = sp.windowed
        np.greater(ae, self.window, out=out)
        sp.any_windowed = True
        np.clip(e, -self.window, self.window, out=e)
        np.add(hw.position, e, out=ae)  # ae reused as the clamped reference
        np.copyto(sp.q, ae, where=out)
        np.copyto(sp.v, 0.0, where=out)
        np.copyto(sp.a, 0.0, where=out)
        self.interventions += 1
        return 0
