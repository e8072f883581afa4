"""Position IK for a named tip: damped least squares with joint limits and a nullspace bias.

For each seed: iterate ``dq = Jᵀ(JJᵀ + λ²I)⁻¹ e`` with the 6-D error
``e = log(T_tip⁻¹ T_goal)`` expressed at the tip (LOCAL), clamp to the joint limits, and stop when
position and orientation errors are below tolerance. λ adapts to the error so steps stay
well-conditioned near singularities. A joint resting on a limit that the gradient pushes further
out is left out of that step's Jacobian, so the other joints take up its share instead of the
solve stalling against the limit; a joint with more than a turn of travel that passes a limit
goes a turn back instead (same pose). A seed whose error stops shrinking is abandoned. With a
nullspace goal, the solved configuration is then polished: steps ``(I − J⁺J) k (q_ns − q)`` on the
chosen joints, each followed by re-converging the task, so the bias never costs accuracy.

Failing seeds restart from a seed map: ``map_size`` collision-free in-limit configurations drawn
at construction from an RNG seeded with ``seed``, tried nearest-first by their tip pose's distance
to the goal, each with a smaller budget (``restart_iter``, ``restart_stall``) than a given seed.
Nothing random happens in a solve, so its answer depends only on its inputs and the solver's
parameters, not on earlier calls. Only the arm joints move; others (the head) stay where the
reference configuration has them.
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
    seed_index: int = -1  # which of the given seeds succeeded (-1: a restart from the seed map)
    iterations: int = 0


class IKSolver:
    MAX_STEP = 1.0  # rad, largest joint step (2-norm) per iteration
    ROT_WEIGHT = 0.2  # m per unit of ‖R − R_goal‖_F when ranking seed-map entries

    def __init__(self, rm: RobotModel, pos_tol: float = 1e-5, rot_tol: float = 1e-4, max_iter: int = 60,
                 restarts: int = 20, seed: int = 0, stall: int = 8, restart_iter: int = 25,
                 restart_stall: int = 3, map_size: int = 512):
        self.rm = rm
        self.model, self.data = rm.model, rm.model.createData()
        self.n_arm = n = rm.cfg.n_arm
        self.arm_pin = rm.perm[:n]  # pinocchio q indices of the arm joints
        self.fixed_pin = rm.perm[n:]  # the others (the head): never moved
        self.lower = rm.cfg.limits.lower[:n]
        self.upper = rm.cfg.limits.upper[:n]
        self.pos_tol, self.rot_tol = pos_tol, rot_tol
        self.max_iter, self.stall, self.restarts = max_iter, stall, restarts
        self.restart_iter, self.restart_stall = restart_iter, restart_stall
        self.seed_map = self._draw_map(map_size, np.random.default_rng(seed))  # config order, arm joints
        self._map_poses: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # frame id → positions, rotations
        self._fixed_moving: dict[int, np.ndarray | None] = {}  # frame id → fixed joints that move it
        # pinocchio-order bounds; a solve pins the fixed joints to their reference values
        self._lo, self._hi = np.empty(self.model.nq), np.empty(self.model.nq)
        self._lo[self.arm_pin], self._hi[self.arm_pin] = self.lower, self.upper
        self._wrap = [int(self.arm_pin[i]) for i in np.flatnonzero(self.upper - self.lower >= 2 * np.pi)]

    def _draw_map(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` in-limit arm configurations, collision-free with the other joints at zero."""
        q = np.zeros(len(self.rm.cfg.all_joints))
        out = []
        while len(out) < size:
            for arm in rng.uniform(self.lower, self.upper, (size, self.n_arm)):
                q[: self.n_arm] = arm
                if not self.rm.in_collision(q):
                    out.append(arm)
        return np.array(out[:size]).reshape(size, self.n_arm)

    def _nearest_map(self, fid: int, goal: pin.SE3, k: int) -> np.ndarray:
        """Indices of the ``k`` seed-map entries whose tip pose is nearest ``goal``, nearest first."""
        if fid not in self._map_poses:
            q = np.zeros(self.model.nq)
            pos, rot = np.empty((len(self.seed_map), 3)), np.empty((len(self.seed_map), 9))
            for i, arm in enumerate(self.seed_map):
                q[self.arm_pin] = arm
                pin.forwardKinematics(self.model, self.data, q)
                T = pin.updateFramePlacement(self.model, self.data, fid)
                pos[i], rot[i] = T.translation, T.rotation.ravel()
            self._map_poses[fid] = pos, rot
        pos, rot = self._map_poses[fid]
        cost = np.linalg.norm(pos - goal.translation, axis=1)
        # ‖R − R_goal‖_F² = 2(3 − tr(Rᵀ R_goal)), and the trace is a row-wise dot product
        cost += self.ROT_WEIGHT * np.sqrt(np.maximum(6.0 - 2.0 * (rot @ goal.rotation.ravel()), 0.0))
        near = np.argpartition(cost, k - 1)[:k]
        return near[np.argsort(cost[near])]

    def _moves_fixed(self, fid: int) -> np.ndarray | None:
        """Pinocchio indices of the fixed joints that move frame ``fid`` (None if there are none)."""
        if fid not in self._fixed_moving:
            support = self.model.supports[self.model.frames[fid].parentJoint]
            moving = {self.model.joints[j].idx_v for j in support[1:]}
            fixed = [i for i in self.fixed_pin if i in moving]
            self._fixed_moving[fid] = np.array(fixed) if fixed else None
        return self._fixed_moving[fid]

    def _iterate(self, fid: int, goal: pin.SE3, q: np.ndarray, max_iter: int, stall: int):
        """Damped least squares from ``q`` (pinocchio order, updated in place).

        Gives up after ``max_iter`` steps or once ``stall`` steps in a row cut the squared error by
        less than 20 %. Returns ``(converged, pos_err, rot_err, iterations)``.
        """
        model, data, lo, hi = self.model, self.data, self._lo, self._hi
        fixed = self._moves_fixed(fid)
        goal_t, pt2, rt2 = goal.translation, self.pos_tol ** 2, self.rot_tol ** 2
        best, best_it = np.inf, 0
        limited = True  # a joint may rest on a limit (checked only then: the check is not free)
        it = 0
        while True:
            pin.computeJointJacobians(model, data, q)
            T = pin.updateFramePlacement(model, data, fid)
            err = pin.log6(T.actInv(goal)).vector  # LOCAL frame error
            w = err[3:]
            re2 = w @ w
            if re2 < rt2:  # only then is the position error worth computing
                dp = T.translation - goal_t
                if dp @ dp < pt2:
                    return True, np.sqrt(dp @ dp), np.sqrt(re2), it
            e2 = err @ err
            if e2 < 0.8 * best:
                best, best_it = e2, it
            if it == max_iter or it - best_it > stall:
                return False, np.linalg.norm(T.translation - goal_t), np.sqrt(re2), it
            it += 1
            J = pin.getFrameJacobian(model, data, fid, pin.LOCAL)
            if fixed is not None:
                J[:, fixed] = 0.0
            if limited:
                g = J.T @ err  # steepest descent of ½‖e‖²: a joint it drives into a limit sits out
                blocked = (q <= lo) & (g < 0.0) | (q >= hi) & (g > 0.0)
                limited = bool(blocked.any())
                if limited:
                    J[:, blocked] = 0.0
            JJt = J @ J.T
            JJt.flat[::7] += min(1e-2, 1e-5 + 0.1 * e2)  # λ² on the 6×6 diagonal
            dq = J.T @ np.linalg.solve(JJt, err)
            n2 = dq @ dq
            if n2 > self.MAX_STEP ** 2:
                dq *= self.MAX_STEP / np.sqrt(n2)
            x = q + dq
            np.clip(x, lo, hi, out=q)
            if np.count_nonzero(x != q):  # something reached a limit
                limited = True
                for j in self._wrap:
                    if x[j] > hi[j]:
                        q[j] = x[j] - 2 * np.pi
                    elif x[j] < lo[j]:
                        q[j] = x[j] + 2 * np.pi

    def solve(self, tip: str, goal: pin.SE3, seeds: list[np.ndarray], reference: np.ndarray,
              nullspace: dict[int, float] | None = None, ns_gain: float = 0.4, random_restarts: int | None = None,
              check_collision: bool = True) -> IKResult | None:
        """Try each seed (arm vectors) in order, then up to ``random_restarts`` seed-map entries.

        Returns the first collision-free solution (its ``seed_index`` tells which seed), or the best
        colliding one flagged ``in_collision``, or the failure closest to the goal (None if nothing
        was tried). ``reference`` is a full config-order vector supplying the non-arm joints.
        ``nullspace`` maps arm joint index → goal angle. Restarts default to ``restarts`` and are
        capped at ``map_size``.
        """
        fid = self.rm.frame_id(tip)
        ns_idx = ns_goal = None
        if nullspace:
            ns_idx = np.array(sorted(nullspace))
            ns_goal = np.array([nullspace[i] for i in ns_idx])
        base = self.rm.to_pin(reference)
        self._lo[self.fixed_pin] = self._hi[self.fixed_pin] = base[self.fixed_pin]
        restarts = self.restarts if random_restarts is None else random_restarts
        restarts = min(restarts, len(self.seed_map))
        near = None
        colliding = best = None
        for k in range(len(seeds) + restarts):
            if k < len(seeds):
                idx, arm, budget, stall = k, seeds[k], self.max_iter, self.stall
            else:
                if near is None:
                    near = self._nearest_map(fid, goal, restarts)
                arm = self.seed_map[near[k - len(seeds)]]
                idx, budget, stall = -1, self.restart_iter, self.restart_stall
            q = base.copy()
            q[self.arm_pin] = np.clip(arm, self.lower, self.upper)
            ok, pe, re, it = self._iterate(fid, goal, q, budget, stall)
            if ok:
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
            q = self._ns_step(fid, q, ns_idx, ns_goal, ns_gain)
            _, pe, re, _ = self._iterate(fid, goal, q, 30, self.stall)
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
