"""TORQUE_MODE: commanded joint torques added to gravity compensation (no position feedback).

Only joints this source owns are torque-driven; the head keeps its own hold. Position and
velocity limits are kept by the safety chain's torque-mode guard (soft-limit spring/damper).
"""
from __future__ import annotations

import numpy as np

from ..hardware.base import Capability, HardwareState
from .base import Setpoint, SetpointSource


class TorqueSource(SetpointSource):
    streaming = True
    requires = Capability.TORQUE

    def __init__(self, idx: slice, emax):
        super().__init__(idx)
        self.emax = emax[idx]
        self.tau = np.zeros(len(self.emax))

    def accept(self, mask: np.ndarray, effort: np.ndarray) -> None:
        i = self.idx
        np.copyto(self.tau, effort[i], where=mask[i])
        np.clip(self.tau, -self.emax, self.emax, out=self.tau)

    def activate(self, sp: Setpoint, hw: HardwareState, now: float) -> None:
        self.tau[:] = 0.0

    def update(self, now: float, hw: HardwareState, sp: Setpoint) -> int:
        i = self.idx
        sp.q[i] = hw.position[i]
        sp.v[i] = hw.velocity[i]
        sp.a[i] = 0.0
        sp.tau[i] = self.tau
        sp.torque_only[i] = True
        sp.fixed[i] = False
        return 0
