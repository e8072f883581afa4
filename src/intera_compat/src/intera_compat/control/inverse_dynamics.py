"""Torque arms: inverse dynamics (pinocchio RNEA) with PID feedback.

    a_cmd = a_d + kp (q_d − q) + kd (v_d − v) + ki ∫(q_d − q)
    τ     = RNEA(q, v, a_cmd) + b v_d + f_c sat(v_d / v_ε)   (rigid body + identified joint friction)

Gains are per joint in acceleration units (1/s², 1/s, 1/s³), so the same numbers suit heavy
shoulder and light wrist joints. The integral (clamped) removes friction-induced offset so
position commands settle far inside Intera's 0.5° tolerance. The friction feed-forward (viscous ``b``,
Coulomb ``f_c`` smoothed over ``v_ε``, on the desired velocity so measurement noise does not reach
it) takes the velocity-dependent share off the feedback, which is what keeps light wrist joints on
a fast trajectory. Joints flagged ``torque_only``
get gravity compensation plus the commanded torque and no feedback; ``gravity`` False removes
gravity compensation from every joint (``suppress_gravity_compensation``).
"""
from __future__ import annotations

import numpy as np

from ..data.setpoint import Setpoint
from ..data.state import HardwareCommand, HardwareState
from ..model.robot_model import RobotModel
from .base import ControlLaw


class InverseDynamicsLaw(ControlLaw):
    def __init__(self, rm: RobotModel, kp, kd, ki, integral_limit, dt: float, viscous=None, coulomb=None,
                 friction_velocity: float = 0.02):
        self.rm = rm
        self.kp = np.asarray(kp, float)
        self.kd = np.asarray(kd, float)
        self.ki_dt = np.asarray(ki, float) * dt
        self.ilim = np.asarray(integral_limit, float)
        self._nilim = -self.ilim
        n = len(self.kp)
        self.integral = np.zeros(n)  # rad/s² contribution
        self.a_cmd = np.zeros(n)
        self.gravity = np.zeros(n)  # of the last cycle where it was computed
        self._e = np.zeros(n)
        self.viscous = np.zeros(n) if viscous is None else np.asarray(viscous, float)
        self.coulomb = np.zeros(n) if coulomb is None else np.asarray(coulomb, float)
        self._inv_vf = 1.0 / friction_velocity
        self.friction = bool(np.any(self.viscous) or np.any(self.coulomb))
        self._f = np.zeros(n)

    def reset(self) -> None:
        self.integral[:] = 0.0

    def compute(self, hw: HardwareState, sp: Setpoint, cmd: HardwareCommand) -> None:
        q, v, free = hw.position, hw.velocity, sp.torque_only
        e, a = self._e, self.a_cmd
        if not self.freeze:
            np.subtract(sp.q, q, out=e)
            e *= self.ki_dt
            self.integral += e
            np.minimum(self.integral, self.ilim, out=self.integral)  # ufuncs: no np.clip wrapper overhead
            np.maximum(self.integral, self._nilim, out=self.integral)
        np.subtract(sp.q, q, out=e)
        np.multiply(self.kp, e, out=a)
        np.subtract(sp.v, v, out=e)
        e *= self.kd
        a += e
        a += sp.a
        a += self.integral
        any_free = np.count_nonzero(free) > 0
        if any_free:
            a[free] = 0.0
            self.integral[free] = 0.0
        tau = cmd.effort
        self.rm.rnea(q, v, a, out=tau)
        if self.friction:
            f = self._f
            np.multiply(sp.v, self._inv_vf, out=f)
            np.minimum(f, 1.0, out=f)
            np.maximum(f, -1.0, out=f)
            f *= self.coulomb
            np.multiply(sp.v, self.viscous, out=e)
            f += e
            tau += f
        if any_free or not sp.gravity:
            g = self.gravity
            self.rm.gravity(q, out=g)
            if any_free:
                np.add(g, sp.tau, out=e)
                tau[free] = e[free]
            if not sp.gravity:
                tau -= g
