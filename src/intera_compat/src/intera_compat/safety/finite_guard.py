"""Non-finite guard: no NaN or inf reaches the backend, whatever produced it.

* measured state non-finite (first thing in the cycle) → the bad entries are replaced by the
  last finite measurement (position) or 0 (velocity, effort) before any source or law sees
  them, fault. The loop stops the robot in that same cycle, so the brakes hold the last good
  position; a joint whose measurement stays broken gets no feedback from it (its error
  reads zero), i.e. gravity compensation at its last known angle, never a replayed torque;
* endpoint wrench non-finite (a broken force/torque sensor) → zeroed, fault;
* setpoint non-finite → the setpoint becomes the last finite one with zero velocity, fault;
* command non-finite → the last finite command (one cycle old) is sent instead, fault; from
  the next cycle on the brakes compute a fresh one.
"""
from __future__ import annotations

import numpy as np

from ..hardware.base import HardwareCommand, HardwareState
from ..sources.base import Setpoint
from .base import SafetyPlugin
from .faults import FAULT_NON_FINITE_OUTPUT, FAULT_NON_FINITE_SETPOINT, FAULT_NON_FINITE_STATE


def _first_bad(x: np.ndarray, zeros: np.ndarray) -> int:
    """Column (joint) of the first non-finite entry of ``x`` (1-D or rows × joints), -1 if none.

    ``x · 0`` is NaN exactly when ``x`` holds a NaN or an inf (no overflow, one BLAS call)."""
    if np.dot(x.ravel(), zeros[:x.size]) == 0.0:
        return -1
    bad = np.flatnonzero(~np.isfinite(x))
    return int(bad[0] % x.shape[-1]) if len(bad) else -1


class FiniteGuard(SafetyPlugin):
    name = "finite_guard"

    def __init__(self, n: int):
        super().__init__()
        self.last_q = np.zeros(n)
        self.last_measured = np.zeros(n)
        self.last_cmd = np.zeros((3, n))
        self._zeros = np.zeros(4 * n)
        self._bad = np.zeros((3, n), dtype=bool)

    def reset(self, hw: HardwareState, sp: Setpoint) -> None:
        self.last_q[:] = sp.q

    def on_state(self, hw: HardwareState) -> int:
        b = hw.block  # position, velocity, effort
        j = _first_bad(b, self._zeros)
        if j < 0:
            self.last_measured[:] = hw.position
            if _first_bad(hw.wrench, self._zeros) < 0:
                return 0
            hw.wrench[:] = 0.0  # a broken force/torque sensor: nothing may act on its reading
            self.fault_joint = -1
            self.interventions += 1
            return FAULT_NON_FINITE_STATE
        self.fault_joint = j
        self.interventions += 1
        bad = self._bad
        np.logical_not(np.isfinite(b, out=bad), out=bad)
        np.copyto(hw.position, self.last_measured, where=bad[0])
        np.copyto(b[1:], 0.0, where=bad[1:])
        return FAULT_NON_FINITE_STATE

    def _hold_last(self, sp: Setpoint) -> None:
        sp.q[:] = self.last_q
        sp.v[:] = 0.0
        sp.a[:] = 0.0
        sp.tau[:] = 0.0

    def on_setpoint(self, hw: HardwareState, sp: Setpoint) -> int:
        j = _first_bad(sp.block, self._zeros)
        if j >= 0:
            self.fault_joint = j
            self.interventions += 1
            self._hold_last(sp)
            return FAULT_NON_FINITE_SETPOINT
        self.last_q[:] = sp.q
        return 0

    def on_output(self, hw: HardwareState, sp: Setpoint, cmd: HardwareCommand) -> int:
        j = _first_bad(cmd.block, self._zeros)
        if j >= 0:
            self.fault_joint = j
            self.interventions += 1
            cmd.block[:] = self.last_cmd
            return FAULT_NON_FINITE_OUTPUT
        self.last_cmd[:] = cmd.block
        return 0
