"""Torque-mode guard and effort limits.

Joints driven by commanded torque (TORQUE_MODE) have no position feedback, so this plugin keeps
them inside their range and speed the way Sawyer does: inside ``zone`` (rad) of a position limit
a spring/damper pushes back (full effort at the limit), and beyond ``v_max`` a damper brakes
(full effort at ``overspeed`` × v_max over). Finally every joint's effort is clamped to its
limit (counted). A non-finite effort is left as it is, never clipped into a finite one (``np.clip``
makes an inf a full effort and lets a NaN through): ``finite_guard``, whose check of the command
always runs last (``SafetyChain``), faults on it and enforces these limits (``effort_limit``) on
whatever it sends instead.
"""
from __future__ import annotations

import numpy as np

from ..data.setpoint import Setpoint
from ..data.state import HardwareCommand, HardwareState
from . import kernels
from .base import SafetyPlugin


class TorqueGuard(SafetyPlugin):
    name = "torque_guard"

    def __init__(self, lower, upper, vmax, emax, zone: float = 0.15, overspeed: float = 0.1):
        super().__init__()
        self.emax = np.ascontiguousarray(emax, dtype=float)
        self.effort_limit = self.emax  # (the chain's final stage enforces it too: SafetyChain)
        self.vmax = np.asarray(vmax, float)
        self.soft_lo = np.asarray(lower, float) + zone
        self.soft_hi = np.asarray(upper, float) - zone
        self.k = self.emax / zone  # Nm/rad
        self.d_limit = self.emax / self.vmax  # Nm s/rad inside the zone
        self.d_speed = self.emax / (overspeed * self.vmax)  # Nm s/rad above v_max
        n = len(self.emax)
        self._t, self._u = np.zeros(n), np.zeros(n)
        self._b = np.zeros(n, dtype=bool)
        self.clamped = 0  # cycles with a clamped effort
        kernels.warm(n)

    def on_output(self, hw: HardwareState, sp: Setpoint, cmd: HardwareCommand) -> int:
        tau = cmd.effort
        free = sp.torque_only
        if np.count_nonzero(free):
            q, v, t, u = hw.position, hw.velocity, self._t, self._u
            # soft position limits: spring on the penetration, damping on the outward speed
            np.subtract(q, self.soft_hi, out=t)
            np.maximum(t, 0.0, out=t)
            np.subtract(q, self.soft_lo, out=u)
            np.minimum(u, 0.0, out=u)
            t += u  # signed penetration (0 inside the soft range)
            np.not_equal(t, 0.0, out=self._b)
            self._b &= free
            if np.count_nonzero(self._b):
                np.multiply(self.k, t, out=u)
                out_speed = np.where(t * v > 0.0, v, 0.0)
                u += self.d_limit * out_speed
                u *= free
                tau -= u
                self.interventions += 1
            # speed cap
            np.clip(v, -self.vmax, self.vmax, out=t)
            np.subtract(v, t, out=t)
            t *= free
            if np.count_nonzero(t):
                t *= self.d_speed
                tau -= t
                self.interventions += 1
        # |τ| over the limit (an inf too, never a NaN) → clipped, but for a non-finite value: no clip turns an inf into
        # a full effort, finite_guard's final check faults on it
        if kernels.clip_over(tau, self.emax) == 1:
            self.clamped += 1
        return 0
