"""Self-collision avoidance in the loop: a distance-based, direction-aware step limit on the
reference (hector's SafetyPositionController) and Sawyer's repulsive torques.

* **Step limit** (every backend; POSITION, VELOCITY and held references — not TRAJECTORY mode
  nor whole trajectories, which Sawyer leaves unaltered): the reference may step at most
  ``block_velocity_scaling × v_max·dt`` per joint and cycle; for every pair of the *tight* model
  closer than ``zone`` whose distance the step shrinks (``ḋ = ∇d·step < 0``, ``∇d = nᵀ(J₂ − J₁)``
  at the witness points; with ``directional`` off, every pair in the zone), that speed limit is
  scaled by ``(d − padding)/(zone − padding)``: 100 % at the zone's edge, 0 at the padding
  (blocked). A step that fits under the limit passes untouched; a longer one is scaled down as a
  whole (its direction kept), and never eats more than half of the clearance left above the
  padding, so the first-order prediction cannot overshoot it. Beyond the zone (up to
  ``braking_band`` further) and inside it, a pair also never closes faster than it could still
  brake at ``closing_decel`` before the padding (``√(2·a·clearance)``): the zone alone stops a
  reference, not an arm with inertia coming in fast. The reference is kept
  ``tracking_margin`` above the padding: the arm lags its reference on the way in and may
  overshoot it by that much when the reference stops short.
* **Repulsion** (torque backends, every mode but TRAJECTORY, measured configuration): where the
  larger *avoidance* shapes (``/robot/armnav_robot_description``) overlap, a force
  ``stiffness × overlap − damping × ḋ`` (never pulling; the overlap counted at most up to where the
  tight shapes touch) pushes the pair apart through ``τ += F ∇d``.

Cost: distances are exact only where they matter. After a full distance pass at a pose ``q₀``
(all pairs, coal), a pair's distance at ``q`` is at least ``d(q₀) − Σᵢ Rᵢ|qᵢ − q₀ᵢ|``, where
``Rᵢ`` bounds how far joint ``i`` can carry any point of exactly one of the pair's bodies from
its axis (joints that move both bodies do not change their distance). Pairs whose bound stays
outside the zone cost nothing; pairs that may be inside are computed exactly; a new full pass
runs when some bound has dropped by ``slack``. In free space a cycle costs a 61×8 mat-vec.
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from ..hardware.base import HardwareCommand, HardwareState
from ..model.robot_model import RobotModel
from ..sources.base import Setpoint
from .base import SafetyContext, SafetyPlugin


CACHE_EPSILON = 1e-9  # rad: a pose this close to the last one reuses its distances (hector's collision cache)


def _reach_bound(model: pin.Model, joint: int, obj) -> float:
    """Upper bound on the distance from ``joint``'s origin to any point of geometry ``obj``."""
    g = obj.geometry
    g.computeLocalAABB()
    r = float(np.linalg.norm(obj.placement.act(np.asarray(g.aabb_center)))) + float(g.aabb_radius)
    chain = list(model.supports[obj.parentJoint])
    for j in chain[chain.index(joint) + 1:]:
        r += float(np.linalg.norm(model.jointPlacements[j].translation))
    return r


class PairDistances:
    """Signed distances of a geometry model's pairs, exact where they may be below ``near``."""

    def __init__(self, rm: RobotModel, geom: pin.GeometryModel, near: float, slack: float):
        m = rm.model
        self.rm, self.model, self.geom = rm, m, geom
        self.data = m.createData()
        self.gdata = pin.GeometryData(geom)
        self.near, self.slack = near, slack
        pairs = [(cp.first, cp.second) for cp in geom.collisionPairs]
        self.P = P = len(pairs)
        n = len(rm.joint_names)
        cfg_of_joint = {int(p): i for i, p in enumerate(rm.perm)}  # pinocchio idx_q -> config index
        self.W = np.zeros((P, n))
        for k, (a, b) in enumerate(pairs):
            oa, ob = geom.geometryObjects[a], geom.geometryObjects[b]
            sa, sb = set(m.supports[oa.parentJoint]) - {0}, set(m.supports[ob.parentJoint]) - {0}
            for j in sa ^ sb:
                obj = oa if j in sa else ob
                self.W[k, cfg_of_joint[m.joints[j].idx_q]] = _reach_bound(m, j, obj)
        self.parents = [(geom.geometryObjects[a].parentJoint, geom.geometryObjects[b].parentJoint) for a, b in pairs]
        self.w_max = self.W.max(axis=0)  # per joint: the largest reach of any pair
        self.d = np.full(P, np.inf)  # exact where ``exact``, a lower bound elsewhere
        self.lazy = False  # no pair near: ``d`` not refreshed by the last update (see bounds())
        self.d_ref_min = -np.inf
        self.exact = np.zeros(P, dtype=bool)
        self.q_ref = np.zeros(n)
        self.q_last = np.full(n, np.nan)
        self._tc = np.zeros(n)
        self.d_ref = np.full(P, -np.inf)  # nothing known yet: the first call makes a full pass
        self.q_pin = np.zeros(m.nq)
        self._w6 = np.zeros(6)
        self._gpin = np.zeros(m.nv)
        self._side = np.zeros(m.nv)
        self.chain = np.zeros((m.njoints, m.nv))  # per joint: 1 on the velocity columns of the joints that move it
        for j in range(1, m.njoints):
            for i in m.supports[j][1:]:
                self.chain[j, m.joints[i].idx_v] = 1.0
        self._t = np.zeros(n)
        self._drift = np.zeros(P)
        self._near = np.zeros(P, dtype=bool)
        self.full_passes = 0
        self.pair_queries = 0
        self._posed = self._jacobians = False

    def invalidate(self) -> None:
        self.d_ref[:] = -np.inf
        self.q_last[:] = np.nan

    def update(self, q: np.ndarray) -> None:
        """Distances at config-ordered ``q``: ``d`` exact for every pair that may be below ``near``."""
        if self.bound(q):
            return
        np.less(self.d, self.near, out=self._near)
        if np.count_nonzero(self._near):
            self.refine(np.flatnonzero(self._near))

    def bound(self, q: np.ndarray) -> bool:
        """Lower bounds at ``q`` in ``d`` (``exact`` where known); True when nothing can be below
        ``near`` (``lazy``: ``d`` is then stale and ``bounds()`` fills it). A pose equal to the last
        one keeps everything; a drift beyond ``slack`` makes a full pass (all exact)."""
        np.subtract(q, self.q_last, out=self._tc)
        np.abs(self._tc, out=self._tc)
        if self._tc.max() <= CACHE_EPSILON and self.d_ref[0] != -np.inf:
            return self.lazy  # the same pose as last time (a blocked or held reference): everything still holds
        self.q_last[:] = q
        self._posed = self._jacobians = False
        np.subtract(q, self.q_ref, out=self._t)
        np.abs(self._t, out=self._t)
        drift = float(np.dot(self.w_max, self._t))  # ≥ every pair's drift
        if drift > self.slack or self.d_ref[0] == -np.inf:
            self._pose(q)
            pin.computeDistances(self.geom, self.gdata)
            for k, r in enumerate(self.gdata.distanceResults):
                self.d_ref[k] = r.min_distance
            self.d_ref_min = float(self.d_ref.min())
            self.q_ref[:] = q
            self.d[:] = self.d_ref
            self.exact[:] = True
            self.lazy = False
            self.full_passes += 1
            return False
        self.lazy = self.d_ref_min - drift >= self.near
        if not self.lazy:
            self.bounds()
        return self.lazy

    def refine(self, pairs) -> None:
        """Exact distances for ``pairs`` (indices) at the pose of the last ``bound``."""
        for k in pairs:
            if self.exact[k]:
                continue
            if not self._posed:
                self._pose(self.q_last)
            self.d[k] = pin.computeDistance(self.geom, self.gdata, int(k)).min_distance
            self.exact[k] = True
            self.pair_queries += 1

    def bounds(self) -> None:
        """``d`` = the lower bounds at the last ``update``'s pose (nothing exact)."""
        np.dot(self.W, self._t, out=self._drift)
        np.subtract(self.d_ref, self._drift, out=self.d)
        self.exact[:] = False
        self.lazy = False

    def _pose(self, q: np.ndarray) -> None:
        self.rm.to_pin(q, self.q_pin)
        pin.forwardKinematics(self.model, self.data, self.q_pin)
        pin.updateGeometryPlacements(self.model, self.data, self.geom, self.gdata)
        self._posed, self._jacobians = True, False

    def gradient(self, k: int, out: np.ndarray) -> np.ndarray:
        """∂d_k/∂q (config order) at the pose of the last ``update``; pair ``k`` must be exact."""
        if not self._posed:
            raise RuntimeError("gradient() needs an exact distance at the current pose")
        if not self._jacobians:
            pin.computeJointJacobians(self.model, self.data, self.q_pin)
            self._jacobians = True
        res = self.gdata.distanceResults[k]
        n = res.normal  # from the first object toward the second
        J = self.data.J  # WORLD: column i = joint i's twist, linear part at the world origin
        w, g = self._w6, self._gpin
        g[:] = 0.0
        for sign, joint, p in ((-1.0, self.parents[k][0], res.getNearestPoint1()),
                               (1.0, self.parents[k][1], res.getNearestPoint2())):
            if joint == 0:
                continue
            # the witness point p moves as v = v₀ + ω × p, so nᵀv = [n, p × n]ᵀ [v₀; ω], over its chain's joints
            w[0], w[1], w[2] = sign * n[0], sign * n[1], sign * n[2]
            w[3], w[4], w[5] = (sign * (p[1] * n[2] - p[2] * n[1]), sign * (p[2] * n[0] - p[0] * n[2]),
                                sign * (p[0] * n[1] - p[1] * n[0]))
            np.dot(w, J, out=self._side)
            self._side *= self.chain[joint]
            g += self._side
        return self.rm.from_pin(g, out)


class CollisionAvoidance(SafetyPlugin):
    name = "collision_avoidance"

    def __init__(self, rm: RobotModel, ctx: SafetyContext, dt: float, vmax, padding: float = 0.01,
                 zone: float = 0.05, block_velocity_scaling: float = 1.5, directional: bool = True,
                 slack: float = 0.05, stiffness: float = 300.0, damping: float = 10.0, torque: bool = True,
                 tracking_margin: float = 0.006, closing_decel: float = 5.0, braking_band: float = 0.05):
        super().__init__()
        if not 0.0 <= padding and padding + tracking_margin < zone and tracking_margin >= 0.0:
            raise ValueError(f"collision avoidance: need 0 <= padding ({padding}), 0 <= tracking_margin "
                             f"({tracking_margin}) and padding + tracking_margin < safety_zone ({zone})")
        self.ctx, self.dt = ctx, dt
        self.padding, self.zone, self.directional = padding, zone, directional
        self.ref_padding = padding + tracking_margin  # where the reference itself is blocked
        self.stiffness, self.damping, self.torque = stiffness, damping, torque
        n = len(rm.joint_names)
        self.step_max = np.asarray(vmax, float) * dt * block_velocity_scaling
        self.tight = PairDistances(rm, rm.tight, zone + braking_band, slack)
        self.brake_dt = np.sqrt(2.0 * closing_decel) * dt  # closing step allowed at clearance c: brake_dt·√c
        self.avoid = PairDistances(rm, rm.avoid, 0.0, slack) if torque and stiffness > 0 else None
        self.max_overlap = 2.0 * float(rm.cfg.avoidance_margin)
        self.pair_names = rm.pair_names()
        self.P = self.tight.P
        self.prev = np.zeros(n)
        self._primed = False
        self._step = np.zeros(n)
        self._free = np.zeros(n, dtype=bool)
        P = self.tight.P
        self._absstep = np.zeros(n)
        self._closing, self._c, self._lim = np.zeros(P), np.zeros(P), np.zeros(P)
        self._need, self._zone_bind, self._in = (np.zeros(P, dtype=bool) for _ in range(3))
        self._g = np.zeros(n)
        self._r = np.zeros(n)
        # what the last cycle did (published at 100 Hz)
        self.active = np.zeros(self.P, dtype=bool)  # pairs the layer slowed or repelled
        self.distance_scale = 1.0  # the zone's factor alone
        self.effective_scale = 1.0  # what was applied (velocity block × zone)
        self.worst_derivative = 0.0  # most negative ḋ of a step (m per cycle) among pairs in the zone
        self.in_zone = 0
        self.repelling = 0
        self.engaged = False

    # ---- the step limit ------------------------------------------------------------------
    def on_setpoint(self, hw: HardwareState, sp: Setpoint) -> int:
        ctx = self.ctx
        self.active[:] = False
        self.distance_scale = self.effective_scale = 1.0
        self.worst_derivative, self.in_zone = 0.0, 0
        self.engaged = ctx.avoidance and ctx.active
        if not self.engaged or ctx.trajectory or not self._primed:
            return 0
        step = self._step
        np.subtract(sp.q, self.prev, out=step)
        np.copyto(step, 0.0, where=sp.torque_only)
        if not np.count_nonzero(step):
            return 0
        np.abs(step, out=self._r)
        self._r /= self.step_max
        used = self._r.max()  # the step as a fraction of the block speed (1.5 v_max per cycle)
        span = self.zone - self.ref_padding
        tight = self.tight
        if tight.bound(self.prev):  # nothing within the zone + braking band: only the block speed
            near = ()
        else:
            # which pairs could bind this step? a conservative test on the lower bounds (a smaller
            # clearance only makes it stricter): the rest need neither an exact distance nor a gradient
            d = tight.d
            np.abs(step, out=self._absstep)
            np.dot(tight.W, self._absstep, out=self._closing)  # ≥ |ḋ| of the step, per pair
            c, lim = self._c, self._lim
            np.subtract(d, self.ref_padding, out=c)
            np.maximum(c, 0.0, out=c)
            np.sqrt(c, out=lim)
            lim *= self.brake_dt
            c *= 0.5
            np.minimum(lim, c, out=lim)
            np.greater(self._closing, lim, out=self._need)
            np.less(d, tight.near, out=self._in)  # (the braking limit applies within the zone + band)
            self._need &= self._in
            np.multiply(d, 1.0, out=c)
            c -= self.ref_padding
            c /= span
            np.less(c, used, out=self._zone_bind)  # the zone's speed fraction could be below the step's
            np.less(d, self.zone, out=self._in)
            self._zone_bind &= self._in
            self._need |= self._zone_bind
            self.in_zone = int(np.count_nonzero(self._in))
            near = np.flatnonzero(self._need)
            tight.refine(near)
        d = tight.d  # exact for the pairs in ``near``
        allowed = 1.0  # the fraction of the block speed the zone allows
        guard = np.inf  # the fraction of this step that keeps half the clearance above the padding
        for k in near:
            clear = d[k] - self.ref_padding
            rate = float(tight.gradient(int(k), self._g) @ step)  # ḋ of the whole step
            if rate < 0.0:  # closing: no faster than it can still brake, never half the clearance in one step
                c = max(clear, 0.0)
                g = min(self.brake_dt * math.sqrt(c), 0.5 * c) / -rate
                if g < guard:
                    guard = g
                    if g < 1.0:
                        self.active[k] = True
            if d[k] >= self.zone:
                continue
            if rate < self.worst_derivative:
                self.worst_derivative = rate
            if self.directional and rate >= 0.0:
                continue
            s = min(max(clear / span, 0.0), 1.0)
            if s < allowed:
                allowed = s
            self.active[k] = True
        self.distance_scale = allowed
        f = min(1.0, allowed / used, guard)
        self.effective_scale = f
        if f < 1.0:
            step *= f
            np.add(self.prev, step, out=self._r)
            np.copyto(sp.q, self._r, where=np.logical_not(sp.torque_only, out=self._free))
            sp.v *= f
            sp.a *= f
            self.interventions += 1
        return 0

    def commit(self, sp: Setpoint) -> None:
        self.prev[:] = sp.q
        self._primed = True

    def reset(self, hw: HardwareState, sp: Setpoint) -> None:
        self.prev[:] = sp.q
        self._primed = True

    # ---- repulsion -----------------------------------------------------------------------
    def on_output(self, hw: HardwareState, sp: Setpoint, cmd: HardwareCommand) -> int:
        self.repelling = 0
        if self.avoid is None or not self.engaged or self.ctx.trajectory:
            return 0
        av = self.avoid
        av.update(hw.position)  # exact wherever the avoidance shapes may overlap: every d < 0 is exact
        if av.lazy or av.d.min() >= 0.0:
            return 0
        for k in np.flatnonzero(av.d < 0.0):
            k = int(k)
            overlap = min(-av.d[k], self.max_overlap)  # deeper than touching tight shapes: no stiffer
            g = av.gradient(k, self._g)
            f = self.stiffness * overlap - self.damping * float(g @ hw.velocity)
            if f > 0.0:
                cmd.effort += f * g
                self.repelling += 1
                self.active[k] = True
        return 0
