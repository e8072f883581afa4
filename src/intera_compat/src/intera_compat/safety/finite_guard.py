"""Non-finite guard: no NaN or inf reaches the backend, whatever produced it.

* measured state non-finite (first thing in the cycle) → the bad entries are replaced by the
  last finite measurement (position) or 0 (velocity, effort) before any source or law sees
  them, fault. The loop stops the robot in that same cycle, so the brakes hold the last good
  position; a joint whose measurement stays broken gets no feedback from it (its error
  reads zero), i.e. gravity compensation at its last known angle, never a replayed torque;
* endpoint wrench non-finite (a broken force/torque sensor) → zeroed, fault;
* setpoint non-finite → the setpoint becomes the last finite one with zero velocity, fault;
* command non-finite → the last command sent (one cycle old, finite and within the effort
  limits) is sent instead, fault; from the next cycle on the brakes compute a fresh one.

The command check is the chain's last word (``final_output``): it runs after every other plugin's
``on_output`` whatever the config's order — a NaN that collision avoidance's repulsion or any later
stage adds is caught — and also when one of them faulted. It then clamps every effort to
``effort_limit`` (the tightest the chain declares, ``torque_guard``'s): what it replays after a fault
is what it let through before, so the backend never gets a non-finite value nor an effort over its
limit. (The clamp runs on finite values only: ``np.clip`` and ``>`` let a NaN through.)
"""
from __future__ import annotations

import numpy as np

from ..data.faults import FAULT_NON_FINITE_OUTPUT, FAULT_NON_FINITE_SETPOINT, FAULT_NON_FINITE_STATE
from ..data.setpoint import Setpoint
from ..data.state import HardwareCommand, HardwareState
from . import kernels
from .base import SafetyPlugin


def _first_bad(x: np.ndarray, zeros: np.ndarray) -> int:
    """Column (joint) of the first non-finite entry of ``x`` (1-D or rows × joints), -1 if none.

    ``x · 0`` is NaN exactly when ``x`` holds a NaN or an inf (no overflow, one BLAS call)."""
    if np.dot(x.ravel(), zeros[:x.size]) == 0.0:
        return -1
    bad = np.flatnonzero(~np.isfinite(x))
    return int(bad[0] % x.shape[-1]) if len(bad) else -1


class FiniteGuard(SafetyPlugin):
    name = "finite_guard"
    final_output = True

    def __init__(self, n: int, effort_limit=None):
        """``effort_limit`` (n,) Nm: the |effort| bound of every command (None: the chain's, see ``SafetyChain``)."""
        super().__init__()
        if effort_limit is not None:
            self.effort_limit = np.asarray(effort_limit, float).copy()
        self.last_q = np.zeros(n)
        self.last_measured = np.zeros(n)
        self.last_cmd = np.zeros((3, n))  # the last command let through: finite, efforts within the limit
        self._zeros = np.zeros(4 * n)
        self._bad = np.zeros((3, n), dtype=bool)
        self._abs = np.zeros(n)
        self._over = np.zeros(n, dtype=bool)
        self.clamped = 0  # cycles in which the final clamp cut an effort (an earlier stage let it through)
        kernels.warm(n)

    def reset(self, hw: HardwareState, sp: Setpoint) -> None:
        self.last_q[:] = sp.q

    def on_state(self, hw: HardwareState) -> int:
        b = hw.block  # position, velocity, effort
        j = kernels.finite_state(b, hw.wrench, self.last_measured)  # (all finite: last_measured ← position)
        if j < 0:
            if j == -1:
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
        j = kernels.finite_setpoint(sp.block, self.last_q)  # (all finite: last_q ← q)
        if j >= 0:
            self.fault_joint = j
            self.interventions += 1
            self._hold_last(sp)
            return FAULT_NON_FINITE_SETPOINT
        return 0

    def on_output(self, hw: HardwareState, sp: Setpoint, cmd: HardwareCommand) -> int:
        lim = self.effort_limit
        if lim is not None:  # the check, the replay, the clamp and the copy in one kernel
            j, over = kernels.finite_output(cmd.block, self.last_cmd, lim)
            self.clamped += over
            if j < 0:
                return 0
            self.fault_joint = j
            self.interventions += 1
            return FAULT_NON_FINITE_OUTPUT
        code = 0
        j = _first_bad(cmd.block, self._zeros)
        if j >= 0:
            self.fault_joint = j
            self.interventions += 1
            cmd.block[:] = self.last_cmd
            code = FAULT_NON_FINITE_OUTPUT
        lim = self.effort_limit
        if lim is not None:  # (every value is finite here)
            tau = cmd.effort
            np.abs(tau, out=self._abs)
            if np.count_nonzero(np.greater(self._abs, lim, out=self._over)):
                np.clip(tau, -lim, lim, out=tau)
                self.clamped += 1
        self.last_cmd[:] = cmd.block
        return code
