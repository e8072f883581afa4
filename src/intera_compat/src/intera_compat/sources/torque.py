"""TORQUE_MODE: commanded joint torques added to gravity compensation (no position feedback).

Only the joints a TORQUE command has named since the source took over are torque-driven; the
others keep holding where they were (joints a command does not name keep their targets; after a
smooth stop if they were moving),
and the head keeps its own hold. Position and velocity limits of the torque-driven joints are
kept by the safety chain's torque-mode guard (soft-limit spring/damper).
"""
from __future__ import annotations

import numpy as np

from ..data.setpoint import Setpoint
from ..data.state import Capability, HardwareState
from .base import SetpointSource
from .hold import HoldSource


class TorqueSource(SetpointSource):
    streaming = True
    requires = Capability.TORQUE

    def __init__(self, idx: slice, emax, hold: HoldSource):
        super().__init__(idx)
        self.emax = emax[idx]
        m = len(self.emax)
        self.tau = np.zeros(m)
        self.named = np.zeros(m, dtype=bool)  # torque-driven joints
        self.hold = hold  # the others: a hold on the same joints (a smooth stop if they were moving)

    def accept(self, mask: np.ndarray, effort: np.ndarray) -> None:
        i = self.idx
        np.copyto(self.tau, effort[i], where=mask[i])
        np.clip(self.tau, -self.emax, self.emax, out=self.tau)
        self.named |= mask[i]

    def activate(self, sp: Setpoint, hw: HardwareState, now: float) -> None:
        self.tau[:] = 0.0
        self.named[:] = False
        self.hold.activate(sp, hw, now)

    def update(self, now: float, hw: HardwareState, sp: Setpoint) -> int:
        i, named = self.idx, self.named
        self.hold.update(now, hw, sp)
        np.copyto(sp.q[i], hw.position[i], where=named)
        np.copyto(sp.v[i], hw.velocity[i], where=named)
        np.copyto(sp.a[i], 0.0, where=named)
        np.copyto(sp.tau[i], self.tau, where=named)
        np.copyto(sp.torque_only[i], named)
        np.copyto(sp.fixed[i], False, where=named)
        return 0

    def rebase(self, sp: Setpoint) -> None:
        self.hold.rebase(sp)
