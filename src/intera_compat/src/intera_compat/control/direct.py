"""Position / velocity arms: the setpoint goes to the backend as it is (the arm's own servo tracks).

Velocity backends get ``v_d + kp (q_d − q)`` so the position setpoint is still tracked
(drift-free), within the joints' velocity limits (``vmax``); position backends get ``q_d`` with ``v_d`` as velocity
feed-forward.
"""
from __future__ import annotations

import numpy as np

from ..data.setpoint import Setpoint
from ..data.state import HardwareCommand, HardwareState
from .base import ControlLaw


class DirectLaw(ControlLaw):
    def __init__(self, n: int, kp_velocity: float = 10.0, vmax=None):
        self.kp = kp_velocity  # 1/s, velocity backends only
        self._e = np.zeros(n)
        self._vmax = np.full(n, np.inf) if vmax is None else np.asarray(vmax, float).copy()
        self._vmin = -self._vmax

    def compute(self, hw: HardwareState, sp: Setpoint, cmd: HardwareCommand) -> None:
        cmd.position[:] = sp.q
        e = self._e
        np.subtract(sp.q, hw.position, out=e)
        e *= self.kp
        np.add(sp.v, e, out=cmd.velocity)
        np.clip(cmd.velocity, self._vmin, self._vmax, out=cmd.velocity)  # (a P-term on a large error: no faster)
        cmd.effort[:] = 0.0
