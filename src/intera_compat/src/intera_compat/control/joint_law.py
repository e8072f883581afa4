"""Joint-space tracking law: inverse dynamics (pinocchio RNEA) with PID feedback.

    a_cmd = a_d + kp (q_d − q) + kd (v_d − v) + ki ∫(q_d − q)
    τ     = RNEA(q, v, a_cmd)            (gravity + Coriolis + inertial feed-forward)

Gains are per joint in acceleration units (1/s², 1/s, 1/s³), so the same numbers suit heavy
shoulder and light wrist joints. The integral (clamped) removes friction-induced offset so
position commands settle far inside Intera's 0.5° tolerance.
"""
from __future__ import annotations

import numpy as np

from ..model.robot_model import RobotModel


class JointTrackingLaw:
    def __init__(self, rm: RobotModel, kp, kd, ki, integral_limit, dt: float):
        self.rm = rm
        self.kp = np.asarray(kp, float)
        self.kd = np.asarray(kd, float)
        self.ki = np.asarray(ki, float)
        self.ilim = np.asarray(integral_limit, float)
        self.dt = dt
        n = len(self.kp)
        self.integral = np.zeros(n)  # rad/s² contribution
        self.a_cmd = np.zeros(n)
        self.tau = np.zeros(n)
        self.gravity = np.zeros(n)
        self._e = np.zeros(n)

    def reset(self) -> None:
        self.integral[:] = 0.0

    def compute(self, q, v, q_d, v_d, a_d, integrate: bool = True) -> np.ndarray:
        e = self._e
        np.subtract(q_d, q, out=e)
        if integrate:
            self.integral += self.ki * e * self.dt
            np.clip(self.integral, -self.ilim, self.ilim, out=self.integral)
        a = self.a_cmd
        np.multiply(self.kp, e, out=a)
        a += self.kd * (v_d - v)
        a += a_d
        a += self.integral
        self.rm.rnea(q, v, a, out=self.tau)
        return self.tau
