"""POSITION_MODE: targets tracked until changed, at ``speed_ratio × v_max``, joints arriving together.

Joints a command does not name keep their targets. A single command keeps being tracked after
the sender stops (no timeout). If the interpolator refuses its input the source reports
``FAULT_INTERPOLATOR`` and leaves the setpoint where it was (never a jump to the target).
"""
from __future__ import annotations

import numpy as np

from ..data.faults import FAULT_INTERPOLATOR
from ..data.setpoint import Setpoint
from ..data.state import HardwareState
from ..trajectory.interpolator import PositionInterpolator
from .base import SetpointSource


class PositionSource(SetpointSource):
    def __init__(self, idx: slice, lower, upper, vmax, amax, dt: float):
        super().__init__(idx)
        self.lower, self.upper = lower[idx], upper[idx]
        self.interp = PositionInterpolator(vmax[idx], amax[idx], dt)
        self._t = np.zeros(len(self.lower))

    def set_ratio(self, ratio: float) -> None:
        self.interp.set_ratio(ratio)

    def accept(self, mask: np.ndarray, position: np.ndarray) -> None:
        """New targets for the joints in ``mask`` (full-length arrays, config order)."""
        i = self.idx
        t = self._t
        t[:] = self.interp.target
        np.copyto(t, position[i], where=mask[i])
        np.clip(t, self.lower, self.upper, out=t)
        self.interp.set_target(t)

    def activate(self, sp: Setpoint, hw: HardwareState, now: float) -> None:
        i = self.idx
        if sp.torque_only[i].any():
            self.interp.reset(hw.position[i], hw.velocity[i])
        else:
            self.interp.reset(sp.q[i], sp.v[i], sp.a[i])

    def update(self, now: float, hw: HardwareState, sp: Setpoint) -> int:
        it = self.interp
        if not it.update():
            return FAULT_INTERPOLATOR
        sp.track_rows(self.idx, it.qva)  # (q, v, a and a zero torque)
        return 0

    def rebase(self, sp: Setpoint) -> None:
        i = self.idx
        self.interp.reset(sp.q[i], sp.v[i], sp.a[i], keep_target=True)
