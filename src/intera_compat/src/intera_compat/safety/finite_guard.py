"""Non-finite guard: no NaN or inf reaches the backend, whatever produced it.

* measured state non-finite → fault (the backend is broken; the setpoint is left to the brakes);
* setpoint non-finite → the setpoint becomes the last finite one with zero velocity, fault;
* command non-finite → the last finite command is sent instead, fault.
The fault stops the robot; from the next cycle on the brakes hold it.
"""
from __future__ import annotations

import numpy as np

from ..hardware.base import HardwareCommand, HardwareState
from ..sources.base import Setpoint
from .base import SafetyPlugin
from .faults import FAULT_NON_FINITE_OUTPUT, FAULT_NON_FINITE_SETPOINT, FAULT_NON_FINITE_STATE


def _first_bad(*arrays) -> int:
    """Index of the first joint with a non-finite value in any array, -1 if all are finite."""
    for x in arrays:
        if not np.isfinite(x.sum()):  # one reduction: NaN/inf anywhere makes the sum non-finite
            bad = np.flatnonzero(~np.isfinite(x))
            if len(bad):
                return int(bad[0])
    return -1


class FiniteGuard(SafetyPlugin):
    name = "finite_guard"

    def __init__(self, n: int):
        super().__init__()
        self.last_q = np.zeros(n)
        self.last_cmd = HardwareCommand.zeros(n)

    def reset(self, hw: HardwareState, sp: Setpoint) -> None:
        self.last_q[:] = hw.position if np.isfinite(hw.position).all() else self.last_q

    def on_setpoint(self, hw: HardwareState, sp: Setpoint) -> int:
        j = _first_bad(hw.position, hw.velocity)
        if j >= 0:
            self.fault_joint = j
            sp.q[:] = self.last_q
            sp.v[:] = 0.0
            sp.a[:] = 0.0
            sp.tau[:] = 0.0
            return FAULT_NON_FINITE_STATE
        j = _first_bad(sp.q, sp.v, sp.a, sp.tau)
        if j >= 0:
            self.fault_joint = j
            self.interventions += 1
            sp.q[:] = self.last_q
            sp.v[:] = 0.0
            sp.a[:] = 0.0
            sp.tau[:] = 0.0
            return FAULT_NON_FINITE_SETPOINT
        self.last_q[:] = sp.q
        return 0

    def on_output(self, hw: HardwareState, sp: Setpoint, cmd: HardwareCommand) -> int:
        j = _first_bad(cmd.effort, cmd.position, cmd.velocity)
        last = self.last_cmd
        if j >= 0:
            self.fault_joint = j
            self.interventions += 1
            cmd.effort[:] = last.effort
            cmd.position[:] = last.position
            cmd.velocity[:] = last.velocity
            return FAULT_NON_FINITE_OUTPUT
        last.effort[:] = cmd.effort
        last.position[:] = cmd.position
        last.velocity[:] = cmd.velocity
        return 0
