"""Collision detection (Sawyer's contact safety): impact, squish and hand over-wrench from a
generalized-momentum observer on the measured joint torques.

The observer (De Luca et al.) needs no acceleration: with ``p = M(q) q̇``

    r = K_O ( p − p₀ − ∫ (τ_measured + C(q, q̇)ᵀ q̇ − g(q) + r) dt )

converges to the external joint torque τ_ext through a first-order lag of bandwidth ``K_O``.
``τ_measured`` is the link-side joint torque (after the joint's own friction and damping, as a
series-elastic or joint-torque sensor measures it), so the residual is zero in free motion up to
model error, whatever the speed.

* **impact**: the residual's fast part ``r − low-pass(r)`` over the per-joint ``impact`` threshold
  (the metric is the largest ratio) → stop and hold ``impact_hold`` s;
* **squish**: ``|r|`` over the per-joint ``squish`` threshold (pushing on something) → stop while it
  lasts (until it falls below half the threshold, and at least ``squish_hold`` s);
* **hand over-wrench**: the wrench at the tip that explains the residual (damped least squares of
  ``Jᵀ F = r``) over ``force`` N or ``torque`` Nm → stop and hold ``wrench_hold`` s.

Under interaction control the arm pushes on purpose: every threshold then allows the external torque and
wrench the controller itself commands (``allow``, ``allow_force``, ``allow_torque``, set by the loop every
cycle) on top — touching down and pressing a surface with 30 N is neither an impact nor a squish, and an
obstacle the impedance runs into is held by the impedance itself. Beyond what the controller pushes with,
detection works as ever.

The observer runs every cycle, also while detection is off (``suppress_contact_safety``, zero-G,
bypass), so it is settled when detection comes back; only the decisions are skipped.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from ..data.state import HardwareState
from ..model.robot_model import RobotModel
from . import kernels
from .base import SafetyContext, SafetyPlugin

NONE, IMPACT, SQUISH, OVER_WRENCH = 0, 1, 2, 3
CAUSES = {NONE: "", IMPACT: "impact", SQUISH: "squish", OVER_WRENCH: "hand over-wrench"}


class CollisionDetection(SafetyPlugin):
    name = "collision_detection"

    def __init__(self, rm: RobotModel, ctx: SafetyContext, dt: float, tip: str, n_arm: int,
                 impact, squish, force: float = 100.0, torque: float = 15.0, observer_gain: float = 100.0,
                 impact_filter: float = 0.05, impact_hold: float = 0.5, squish_hold: float = 0.1,
                 wrench_hold: float = 0.5):
        super().__init__()
        self.rm, self.ctx, self.dt = rm, ctx, dt
        self.model = m = rm.model
        self.data = m.createData()
        n = len(rm.joint_names)
        self.n_arm = n_arm
        self.force_thr, self.torque_thr = force, torque
        self.K = observer_gain
        self.lp = dt / impact_filter  # low-pass coefficient of the impact filter
        self.impact_hold, self.squish_hold, self.wrench_hold = impact_hold, squish_hold, wrench_hold
        self.tip_id = rm.frame_id(tip)
        self.perm = rm.perm
        self._qvt = np.zeros((3, m.nv))  # q, q̇, τ in pinocchio order
        self._q, self._v, self._tau = self._qvt
        self._zero = np.zeros(m.nv)
        # the observer's state (kernels.observe): integral, r (pinocchio order), residual, slow, fast, scratch
        self._S = np.zeros((6, n))
        self.integral, self.r_pin = self._S[0], self._S[1]
        self.residual = self._S[2]  # τ_ext estimate, config order (published)
        self.slow, self.fast = self._S[3], self._S[4]
        # squish and impact thresholds, and what the interaction controller pushes with (``allow``)
        self._T = np.zeros((3, n))
        self.squish_thr, self.impact_thr, self.allow = self._T  # Nm per joint: external torque the controller asks for
        self.squish_thr[:] = self.impact_thr[:] = np.inf
        self.impact_thr[:n_arm] = impact
        self.squish_thr[:n_arm] = squish
        if (self.impact_thr[:n_arm] <= 0).any() or (self.squish_thr[:n_arm] <= 0).any():
            raise ValueError("collision detection thresholds must be > 0")
        self._par = np.array([dt, self.K, self.lp])
        self._ratios = np.zeros(4)  # squish joint, squish ratio, impact joint, impact ratio (kernels.observe)
        self._perm = np.ascontiguousarray(self.perm, dtype=np.intp)
        self._inv = np.argsort(self._perm)  # pinocchio index → config index
        kernels.warm(n)
        self.allow_force = 0.0  # N, Nm: the same at the tip
        self.allow_torque = 0.0
        self.wrench = np.zeros(6)
        self._started = False
        # the decision (published)
        self.state = NONE  # the cause holding the arm now, NONE when free
        self.tripped = False  # a new detection this cycle
        self.hold_until = -1.0
        self.joint = -1
        self.value = 0.0
        self.threshold = 0.0
        self.metric = 0.0
        self.count = 0

    def _observe(self, hw: HardwareState) -> None:
        """The observer's step (``kernels.observe``); the squish and impact ratios in ``_ratios``."""
        m, d, qvt = self.model, self.data, self._qvt
        np.take(hw.block, self._inv, axis=1, out=qvt)  # q, q̇, τ → pinocchio order
        q, v = self._q, self._v
        g = pin.computeGeneralizedGravity(m, d, q)
        h = pin.rnea(m, d, q, self._zero, v)  # M q̇ + g (RNEA with q̇ as acceleration)
        C = pin.computeCoriolisMatrix(m, d, q, v)
        if not self._started:
            np.subtract(h, g, out=self.integral)  # r starts at 0
            self._started = True
        kernels.observe(self._S, v, self._tau, g, h, C, self._T, self._perm, self._par, self._ratios)

    def on_state(self, hw: HardwareState) -> int:
        self._observe(hw)
        ctx = self.ctx
        self.tripped = False
        now = ctx.now
        if not ctx.detection or not ctx.active:
            self.state, self.hold_until = NONE, -1.0
            return 0
        # squish: while it lasts (hysteresis: until half the threshold), at least squish_hold
        ks, squish, ki, impact = self._ratios.tolist()  # |r| / (squish + allow), |fast| / (impact + allow)
        if self.state == SQUISH and now >= self.hold_until and squish < 0.5:
            self.state = NONE
        if self.state != NONE and now < self.hold_until:
            if self.state == SQUISH and squish >= 0.5:
                self.hold_until = max(self.hold_until, now + self.dt)
            return 0
        if self.state != NONE and self.state != SQUISH:
            self.state = NONE  # an impact / over-wrench hold ran out
        if squish > 1.0:
            k = int(ks)
            return self._trip(SQUISH, k, self.residual[k], self.squish_thr[k] + self.allow[k], squish,
                              now + self.squish_hold)
        if impact > 1.0:
            k = int(ki)
            return self._trip(IMPACT, k, self.fast[k], self.impact_thr[k] + self.allow[k], impact,
                              now + self.impact_hold)
        if squish > 0.25:  # only worth a Jacobian when the joints feel something
            self._estimate_wrench()
            f, t = np.linalg.norm(self.wrench[:3]), np.linalg.norm(self.wrench[3:])
            fthr, tthr = self.force_thr + self.allow_force, self.torque_thr + self.allow_torque
            if f > fthr or t > tthr:
                over_f = f / fthr >= t / tthr
                return self._trip(OVER_WRENCH, -1, f if over_f else t, fthr if over_f else tthr,
                                  max(f / fthr, t / tthr), now + self.wrench_hold)
        return 0

    def _trip(self, cause: int, joint: int, value: float, threshold: float, metric: float, until: float) -> int:
        self.state, self.tripped = cause, True
        self.joint, self.value, self.threshold, self.metric = joint, float(value), float(threshold), float(metric)
        self.hold_until = until
        self.count += 1
        return 0

    def _estimate_wrench(self) -> None:
        """F with Jᵀ F = r on the arm joints (damped least squares), base axes, at the tip."""
        m, d = self.model, self.data
        J = pin.computeFrameJacobian(m, d, self._q, self.tip_id, pin.LOCAL_WORLD_ALIGNED)[:, self.perm[:self.n_arm]]
        A = J @ J.T
        A[np.diag_indices(6)] += 1e-4
        self.wrench[:] = np.linalg.solve(A, J @ self.residual[:self.n_arm])

    @property
    def holding(self) -> bool:
        return self.state != NONE
