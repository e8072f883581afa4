"""Endpoint wrench estimate from the joint-torque residual (pure, used by the state publisher).

    τ_ext = RNEA(q, v, a_d) − τ_measured        (quasi-static residual, low-pass filtered;
                                                τ_measured is link-side: after the joint's friction)
    F     = (J Jᵀ + λ²I)⁻¹ J τ_ext                   (damped least squares for Jᵀ F = τ_ext)

Returns the wrench the environment applies at the tip, in base axes (force N, torque Nm).
"""
from __future__ import annotations

import numpy as np

from ..model.robot_model import RobotModel


class WrenchEstimator:
    def __init__(self, rm: RobotModel, tip: str, alpha: float = 0.2, lam: float = 0.02):
        self.rm, self.tip = rm, tip
        self.alpha, self.lam = alpha, lam
        self.residual = np.zeros(len(rm.joint_names))
        self.n_arm = rm.cfg.n_arm

    def update(self, q, v, a_d, tau_meas, tau_model=None) -> np.ndarray:
        """``tau_model``: RNEA(q, v, a_d) when the caller has it already."""
        r = (self.rm.rnea(q, v, a_d) if tau_model is None else tau_model) - tau_meas
        self.residual += self.alpha * (r - self.residual)
        J = self.rm.jacobian(q, self.tip)[:, : self.n_arm]
        JJt = J @ J.T + (self.lam ** 2) * np.eye(6)
        return np.linalg.solve(JJt, J @ self.residual[: self.n_arm])
