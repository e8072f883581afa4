"""Position IK for a named tip: damped least squares with joint limits and a nullspace bias.

For each seed: iterate ``dq = Jᵀ(JJᵀ + λ²I)⁻¹ e`` with the 6-D error
``e = log(T_tip⁻¹ T_goal)`` expressed at the tip (LOCAL), clamp to the joint limits, and stop when
position and orientation errors are below tolerance. λ adapts to the error so steps stay
well-conditioned near singularities. With a nullspace goal, the solved configuration is then
polished: steps ``(I − J⁺J) k (q_ns − q)`` on the chosen joints, each followed by re-converging
the task, so the bias never costs accuracy.
Failing seeds restart from random in-limit configurations (seeded RNG, reproducible).
Only the arm joints move; others (the head) stay where the reference configuration has them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..model.robot_model import RobotModel


@dataclass
class IKResult:
    success: bool
    q: np.ndarray  # full config-order vector
    pos_err: float  # m
    rot_err: float  # rad
    in_collision: bool = False
    seed_index: int = -1  # which of the given seeds succeeded (-1: a random restart)
    iterations: int = 0


class IKSolver:
    def __init__(self, rm: RobotModel, pos_tol: float = 1e-5, rot_tol: float = 1e-4, max_iter: int = 60,
                 restarts: int = 20, seed: int = 0):
        self.rm = rm
        self.model, self.data = rm.model, rm.model.createData()
        self.n_arm = rm.cfg.n_arm
        self.arm_pin = rm.perm[: self.n_arm]  # pinocchio q indices of the arm joints
        self.lower = rm.cfg.limits.lower[: self.n_arm]
        self.upper = rm.cfg.limits.upper[: self.n_arm]
        self.pos_tol, self.rot_tol = pos_tol, rot_tol
        self.max_iter, self.restarts = max_iter, restarts
        self.rng = np.random.default_rng(seed)

    def random_arm(self) -> np.ndarray:
        return self.rng.uniform(self.lower, self.upper)

    def _iterate(self, fid: int, goal: pin.SE3, q_full_pin: np.ndarray, max_iter: int):
        model, data, arm = self.model, self.data, self.arm_pin
        q = q_full_pin.copy()
        pos_err = rot_err = np.inf
        best, best_it = np.inf, 0
        for it in range(max_iter):
            pin.forwardKinematics(model, data, q)
            T = pin.updateFramePlacement(model, data, fid)
            err = pin.log6(T.actInv(goal)).vector  # LOCAL frame error
            pos_err = np.linalg.norm(T.translation - goal.translation)
            rot_err = np.linalg.norm(err[3:])
            if pos_err < self.pos_tol and rot_err < self.rot_tol:
                return q, pos_err, rot_err, it
            e2 = float(err @ err)
            if e2 < 0.8 * best:
                best, best_it = e2, it
            elif it - best_it > 8:  # stalled (local minimum or joint limit): give up on this seed
                break
            J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL)[:, arm]
            lam2 = min(1e-2, 1e-5 + 0.1 * float(err @ err))
            JJt = J @ J.T
            JJt[np.diag_indices(6)] += lam2
            dq = J.T @ np.linalg.solve(JJt, err)
            # limit the step, keep inside the joint limits
            nrm = np.abs(dq).max()
            if nrm > 0.5:
                dq *= 0.5 / nrm
            q[arm] = np.clip(q[arm] + dq, self.lower, self.upper)
        pin.forwardKinematics(model, data, q)
        T = pin.updateFramePlacement(model, data, fid)
        pos_err = np.linalg.norm(T.translation - goal.translation)
        rot_err = np.linalg.norm(pin.log3(T.rotation.T @ goal.rotation))
        return q, pos_err, rot_err, max_iter

    def solve(self, tip: str, goal: pin.SE3, seeds: list[np.ndarray], reference: np.ndarray,
              nullspace: dict[int, float] | None = None, ns_gain: float = 0.4, random_restarts: int | None = None,
              check_collision: bool = True) -> IKResult:
        """Try each seed (arm vectors) in order, then random restarts.

        Returns the first collision-free solution (its ``seed_index`` tells which seed), or the best
        colliding one flagged ``in_collision``, or a failure. ``reference`` is a full config-order
        vector supplying the non-arm joints. ``nullspace`` maps arm joint index → goal angle.
        """
        fid = self.rm.frame_id(tip)
        ns_idx = ns_goal = None
        if nullspace:
            ns_idx = np.array(sorted(nullspace))
            ns_goal = np.array([nullspace[i] for i in ns_idx])
        base = self.rm.to_pin(reference)
        restarts = self.restarts if random_restarts is None else random_restarts
        candidates = [(i, s) for i, s in enumerate(seeds)] + [(-1, None)] * restarts
        colliding = None
        best = None
        for idx, seed in candidates:
            qp = base.copy()
            qp[self.arm_pin] = np.clip(seed if seed is not None else self.random_arm(), self.lower, self.upper)
            q, pe, re, it = self._iterate(fid, goal, qp, self.max_iter)
            if pe < self.pos_tol and re < self.rot_tol:
                if ns_idx is not None:  # converge the nullspace bias without leaving the goal
                    qb, peb, reb = self._polish(fid, goal, q, ns_idx, ns_goal, ns_gain)
                    if peb < self.pos_tol and reb < self.rot_tol:
                        q, pe, re = qb, peb, reb
                qc = self.rm.from_pin(q)
                hit = check_collision and self.rm.in_collision(qc)
                res = IKResult(True, qc, pe, re, hit, idx, it)
                if not hit:
                    return res
                colliding = colliding or res
            elif best is None or pe + re < best.pos_err + best.rot_err:
                best = IKResult(False, self.rm.from_pin(q), pe, re, False, idx, it)
        return colliding if colliding is not None else best

    def _polish(self, fid, goal, q, ns_idx, ns_goal, ns_gain, rounds: int = 10):
        """Nullspace steps toward the bias goal, each followed by re-converging the task."""
        pe = re = 0.0
        for _ in range(rounds):
            q, pe, re, _ = self._iterate(fid, goal, self._ns_step(fid, q, ns_idx, ns_goal, ns_gain), 30)
        return q, pe, re

    def _ns_step(self, fid, q, ns_idx, ns_goal, gain):
        model, data, arm = self.model, self.data, self.arm_pin
        J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL)[:, arm]
        z = np.zeros(self.n_arm)
        z[ns_idx] = gain * (ns_goal - q[arm][ns_idx])
        Jpinv = np.linalg.pinv(J, rcond=1e-4)
        q = q.copy()
        q[arm] = np.clip(q[arm] + z - Jpinv @ (J @ z), self.lower, self.upper)
        return q
