"""Hold: keep the joints where they are (after a smooth stop when they were moving).

The default source, the command-timeout fallback, the end of a cancelled trajectory and, with
``ramp=False``, the brakes of a disabled or stopped robot.
"""
from __future__ import annotations

import numpy as np

from ..control.stop import StopRamp
from ..hardware.base import HardwareState
from .base import Setpoint, SetpointSource, clamp


class HoldSource(SetpointSource):
    def __init__(self, idx: slice, lower: np.ndarray, upper: np.ndarray, vmax: np.ndarray, amax: np.ndarray,
                 dt: float, ramp: bool = True):
        super().__init__(idx)
        self.lower, self.upper = lower[idx], upper[idx]
        self.ramp = StopRamp(vmax[idx], amax[idx], dt) if ramp else None
        self.q = np.zeros(len(self.lower))
        self._zero = np.zeros(len(self.lower))

    def activate(self, sp: Setpoint, hw: HardwareState, now: float) -> None:
        """Decelerate along the last setpoint (ramp), or stop dead at the measurement (brakes).

        After TORQUE_MODE there is no tracked setpoint: the ramp starts from the measured state.
        """
        i = self.idx
        if self.ramp is None:
            np.clip(hw.position[i], self.lower, self.upper, out=self.q)
            return
        if sp.torque_only[i].any():
            self.ramp.start(hw.position[i], hw.velocity[i], self._zero)
        else:
            self.ramp.start(sp.q[i], sp.v[i], sp.a[i])
        np.clip(self.ramp.q, self.lower, self.upper, out=self.q)

    def update(self, now: float, hw: HardwareState, sp: Setpoint) -> int:
        i = self.idx
        r = self.ramp
        if r is not None and r.active:
            r.update()
            clamp(r.q, self.lower, self.upper, self.q)
            sp.track(i, self.q, r.v, r.a)
        else:
            sp.track(i, self.q, 0.0, 0.0, fixed=True)
        return 0

    def rebase(self, sp: Setpoint) -> None:
        """The chain held the setpoint back (following-error window, limits).

        Brakes hold where the arm was pushed to (they slip, they do not spring back); a hold
        keeps its target and returns to it at the pace the safety chain allows; a stop ramp restarts.
        """
        i = self.idx
        if self.ramp is None:
            clamp(sp.q[i], self.lower, self.upper, self.q)
        elif self.ramp.active:
            self.ramp.start(sp.q[i], sp.v[i], sp.a[i])


class SafetyHold(HoldSource):
    """An override that stops the arm dead at its measured position while ``on`` (collision
    detected, safety E-stop latched): the arbiter's override slot, the chain restarts from it."""

    def __init__(self, idx: slice, lower: np.ndarray, upper: np.ndarray, vmax: np.ndarray, amax: np.ndarray, dt: float):
        super().__init__(idx, lower, upper, vmax, amax, dt, ramp=False)
        self.on = False

    def engaged(self) -> bool:
        return self.on
