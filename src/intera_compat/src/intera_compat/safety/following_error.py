"""Following error: the reference may not run away from the measured position.

Runs after ``joint_limits``, on the reference the arm is actually given. For every joint
tracking a reference (not torque-driven) the setpoint is kept within ``window`` (rad) of the
measured angle, and its velocity / acceleration feed-forward are dropped while it is held there;
the loop then rebases the source so an integrated reference (POSITION, VELOCITY) cannot wind up
against an obstacle and snap at full torque when released. Holds (``fixed``: hold, brakes) are
bounded the same way, so an arm pushed away never springs back from far away (``joint_limits``
lets a hold return at most at 0.3 v_max); they never fault. A moving source's own reference (``source_q``: a stream, a whole trajectory)
farther from the arm than ``fault_window`` plus the lag ``joint_limits`` may legitimately add
(``v_max²/2a_max``: the distance to reach full speed) is a fault: the arm does not follow what
it is told.
"""
from __future__ import annotations

import numpy as np

from ..data.faults import FAULT_FOLLOWING_ERROR
from ..data.setpoint import Setpoint
from ..data.state import HardwareState
from . import kernels
from .base import SafetyPlugin


class FollowingError(SafetyPlugin):
    name = "following_error"

    def __init__(self, n: int, window: float = 0.1, fault_window: float = 0.5, vmax=None, amax=None):
        super().__init__()
        if not 0.0 < window < fault_window:
            raise ValueError("following error: need 0 < window < fault_window")
        self.window, self.fault_window = float(window), float(fault_window)
        lag = 0.0 if vmax is None else np.asarray(vmax, float) ** 2 / (2.0 * np.asarray(amax, float))
        self.fault_limit = self.fault_window + lag + np.zeros(n)
        self._E = np.zeros((2, n))
        self.err, self._abs = self._E  # the error, its magnitude (kernels.following)
        self._moving = np.zeros(n)
        self._out = np.zeros(n, dtype=bool)
        self.max_error = 0.0  # of the last cycle, rad (tracked joints)
        kernels.warm(n)

    def on_setpoint(self, hw: HardwareState, sp: Setpoint) -> int:
        e, ae = self.err, self._abs
        self.max_error = kernels.following(self._E, sp.q, hw.position, sp.torque_only)  # e = q − measured, |e|
        sp.any_windowed = False
        if self.max_error <= self.window and not sp.shaped:
            return 0  # (unshaped: the source's reference is the one checked)
        f = self._moving  # the source's own reference against the arm, holds excepted
        np.subtract(sp.source_q, hw.position, out=f)
        np.abs(f, out=f)
        f -= self.fault_limit
        np.copyto(f, -1.0, where=sp.fixed)
        np.copyto(f, -1.0, where=sp.torque_only)
        j = int(f.argmax())
        if f[j] > 0.0:
            self.fault_joint = j
            return FAULT_FOLLOWING_ERROR
        if self.max_error <= self.window:
            return 0
        out = self._out
        np.greater(ae, self.window, out=out)
        sp.any_windowed = True
        np.clip(e, -self.window, self.window, out=e)
        np.add(hw.position, e, out=ae)  # ae reused as the clamped reference
        np.copyto(sp.q, ae, where=out)
        np.copyto(sp.v, 0.0, where=out)
        np.copyto(sp.a, 0.0, where=out)
        self.interventions += 1
        return 0
