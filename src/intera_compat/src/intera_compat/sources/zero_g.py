"""Zero-G (cuff squeeze): position control off, gravity compensation on — the arm floats and
anyone can move it by hand. An override of the arbiter, engaged while the cuff is squeezed and
``suppress_cuff_interaction`` is not arriving, on backends that take joint torques. On release the
arm holds where it was left; the next command (a streaming client still sending) resumes its mode.
"""
from __future__ import annotations

from ..data.setpoint import Setpoint
from ..data.state import HardwareState
from .base import SetpointSource


class ZeroGSource(SetpointSource):
    def __init__(self, idx: slice, available: bool):
        super().__init__(idx)
        self.available = available  # the backend takes joint torques
        self.squeezed = False  # the cuff (set by the loop from the IO device)
        self.allowed = True  # not suppressed (set by the loop every cycle)

    def engaged(self) -> bool:
        return self.squeezed and self.allowed and self.available

    def update(self, now: float, hw: HardwareState, sp: Setpoint) -> int:
        i = self.idx
        sp.q[i] = hw.position[i]
        sp.v[i] = hw.velocity[i]
        sp.a[i] = 0.0
        sp.tau[i] = 0.0  # + gravity compensation (the law adds it unless suppressed)
        sp.torque_only[i] = True
        sp.fixed[i] = False
        return 0
