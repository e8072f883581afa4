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
  tight shapes touch) pushes the pair apart through ``τ += F ∇d``. A non-finite distance or gradient
  is a fault (FAULT_NON_FINITE_OUTPUT), never a repulsion silently skipped or a NaN added.

Cost: distances are exact only where they matter. After a full distance pass at a pose ``q₀``
(all pairs, coal), a pair's distance at ``q`` is at least ``d(q₀) − Σᵢ Rᵢ|qᵢ − q₀ᵢ|``, where
``Rᵢ`` bounds how far joint ``i`` can carry any point of exactly one of the pair's bodies from
its axis (joints that move both bodies do not change their distance). A new full pass runs when
the pose has drifted by ``slack`` (in reach-weighted terms), so only the pairs within
``zone + band + slack`` at the last full pass (the candidates, a handful) are looked at between
passes; a candidate whose bound stays outside the band costs a row of a mat-vec, one that could
bind this step gets an exact distance and a gradient.
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from ..data.faults import FAULT_NON_FINITE_OUTPUT
from ..data.setpoint import Setpoint
from ..data.state import HardwareCommand, HardwareState
from ..model.robot_model import RobotModel
from . import kernels
from .base import SafetyContext, SafetyPlugin


def _reach_bound(model: pin.Model, joint: int, obj) -> float:
    """Upper bound on the distance from ``joint``'s origin to any point of geometry ``obj``."""
    g = obj.geometry
    g.computeLocalAABB()
    r = float(np.linalg.norm(obj.placement.act(np.asarray(g.aabb_center)))) + float(g.aabb_radius)
    chain = list(model.supports[obj.parentJoint])
    for j in chain[chain.index(joint) + 1:]:
        r += float(np.linalg.norm(model.jointPlacements[j].translation))
    return r


LIMIT_BAND = 0.02  # rad inside a position limit where the repulsion pushes a joint no further out


class PairDistances:
    """Signed distances of a geometry model's pairs, exact where they may be below ``near``.

    A full pass (every pair, coal) at ``q_ref`` names the *candidates*: pairs with
    ``d(q_ref) < near + slack``. Until the next full pass (when the pose has drifted by ``slack``
    in reach-weighted terms) no other pair can come below ``near``, so a cycle looks at the
    candidates only: their lower bounds ``dc``, exact distances where a caller asks (``refine``)."""

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
        self.d = np.full(P, np.inf)  # exact where ``exact`` (else stale: see ``dc`` and fill())
        self.exact = np.zeros(P, dtype=bool)
        self.lazy = False  # True: nothing can be below ``near`` at the last pose
        self.d_ref = np.zeros(P)  # distances at q_ref
        self.q_ref = np.zeros(n)
        self.q_last = np.zeros(n)
        self._key = None  # q_last's bytes: the same pose again reuses everything (hector's collision cache)
        self._known = False  # False: the next bound() makes a full pass
        # candidates (views of fixed buffers, re-cut at each full pass); row 0 of _Wx: the drift
        # bound of every pair (w_max), rows 1..C: the candidates' reach rows
        self._cand_buf, self._Wx_buf = np.zeros(P, dtype=np.intp), np.zeros((P + 1, n))
        self._Wx_buf[0] = self.w_max
        self._wx_buf, self._dref_buf, self._dc_buf = np.zeros(P + 1), np.zeros(P), np.zeros(P)
        self._aux_buf = np.zeros(P)
        self._cut(0)
        self._t = np.zeros(n)
        self.q_pin = np.zeros(m.nq)
        self._w2, self._s2 = np.zeros((2, 6)), np.zeros((2, m.nv))
        self._s2a, self._s2b = self._s2[0], self._s2[1]
        self._gpin = np.zeros(m.nv)
        chain = np.zeros((m.njoints, m.nv))  # per joint: 1 on the velocity columns of the joints that move it
        for j in range(1, m.njoints):
            for i in m.supports[j][1:]:
                chain[j, m.joints[i].idx_v] = 1.0
        self.masks = np.array([[chain[ja], chain[jb]] for ja, jb in self.parents])  # per pair: each body's chain
        self._all = np.zeros(P)
        self._stale = np.zeros(P, dtype=bool)
        self.full_passes = 0
        self.pair_queries = 0
        self._posed = self._jacobians = False

    def _cut(self, C: int) -> None:
        self.cand, self.Wc, self._Wx = self._cand_buf[:C], self._Wx_buf[1:C + 1], self._Wx_buf[:C + 1]
        self._wx, self._drops = self._wx_buf[:C + 1], self._wx_buf[1:C + 1]
        self._dc_ref, self.dc, self.aux = self._dref_buf[:C], self._dc_buf[:C], self._aux_buf[:C]
        self.cand_list = self.cand.tolist()

    def invalidate(self) -> None:
        self._known, self._key = False, None

    def update(self, q: np.ndarray) -> list:
        """Distances at config-ordered ``q``; returns the pairs below ``near`` (their ``d`` exact)."""
        if self.bound(q):
            return []
        below = [k for k, dk in zip(self.cand_list, self.dc.tolist()) if dk < self.near]
        self.refine(below)
        d = self.d
        return [k for k in below if d[k] < self.near]

    def bound(self, q: np.ndarray) -> bool:
        """Lower bounds at ``q`` for the candidates in ``dc`` (``d`` exact where ``exact``);
        True when nothing can be below ``near``. A pose equal to the last one keeps everything; a
        drift beyond ``slack`` makes a full pass (every pair exact, new candidates)."""
        key = q.tobytes()
        if key == self._key:
            return self.lazy  # the same pose as last time (a blocked or held reference): everything still holds
        self._key = key
        self.q_last[:] = q
        self._posed = self._jacobians = False
        np.subtract(q, self.q_ref, out=self._t)
        np.abs(self._t, out=self._t)
        np.dot(self._Wx, self._t, out=self._wx)  # [≥ every pair's drop; each candidate's drop]
        if not self._known or self._wx[0] > self.slack:
            self._full_pass(q)
            return self.lazy
        self.exact.fill(False)
        if self.cand_list:
            np.subtract(self._dc_ref, self._drops, out=self.dc)
            self.lazy = min(self.dc.tolist()) >= self.near
        return self.lazy

    def _full_pass(self, q: np.ndarray) -> None:
        self._pose(q)
        pin.computeDistances(self.geom, self.gdata)
        for k, r in enumerate(self.gdata.distanceResults):
            self.d_ref[k] = r.min_distance
        self.q_ref[:] = q
        self._t[:] = 0.0
        self.d[:] = self.d_ref
        self.exact[:] = True
        cand = np.flatnonzero(self.d_ref < self.near + self.slack)
        C = len(cand)
        self._cand_buf[:C] = cand
        self._Wx_buf[1:C + 1] = self.W[cand]
        self._dref_buf[:C] = self.d_ref[cand]
        self._dc_buf[:C] = self.d_ref[cand]
        self._cut(C)
        self.lazy = not C or float(self.dc.min()) >= self.near
        self._known = True
        self.full_passes += 1

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

    def fill(self) -> None:
        """``d`` everywhere at the last ``bound``'s pose: lower bounds, exact values kept (for reports)."""
        np.dot(self.W, self._t, out=self._all)
        np.subtract(self.d_ref, self._all, out=self._all)
        np.logical_not(self.exact, out=self._stale)
        np.copyto(self.d, self._all, where=self._stale)

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
        nx, ny, nz = res.normal.tolist()  # from the first object toward the second
        ax, ay, az = res.getNearestPoint1().tolist()
        bx, by, bz = res.getNearestPoint2().tolist()
        # a witness point p moves as v = v₀ + ω × p, so nᵀv = [n, p × n]ᵀ [v₀; ω] with the WORLD
        # joint twists (data.J: linear part at the world origin), over the joints that move its body;
        # the distance grows as the second point moves along n and the first against it
        self._w2[:] = ((-nx, -ny, -nz, az * ny - ay * nz, ax * nz - az * nx, ay * nx - ax * ny),
                       (nx, ny, nz, by * nz - bz * ny, bz * nx - bx * nz, bx * ny - by * nx))
        np.dot(self._w2, self.data.J, out=self._s2)
        self._s2 *= self.masks[k]
        np.add(self._s2a, self._s2b, out=self._gpin)
        return self.rm.from_pin(self._gpin, out)


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
        self._absstep = np.zeros(n)
        self._g = np.zeros(n)
        self._r = np.zeros(n)
        self._push = np.zeros(n)  # this cycle's repulsion
        self._at = np.zeros(n, dtype=bool)
        lim = rm.cfg.limits  # the repulsion never pushes a joint on past a position limit it is at
        self._hi, self._lo = lim.upper[:n] - LIMIT_BAND, lim.lower[:n] + LIMIT_BAND
        # what the last cycle did (published at 100 Hz)
        self.active = np.zeros(self.P, dtype=bool)  # pairs the layer slowed or repelled
        self.distance_scale = 1.0  # the zone's factor alone
        self.effective_scale = 1.0  # what was applied (velocity block × zone)
        self.worst_derivative = 0.0  # most negative ḋ of a step (m per cycle) among pairs in the zone
        self.in_zone = 0
        self.repelling = 0
        self.engaged = False
        kernels.warm(n)

    # ---- the step limit ------------------------------------------------------------------
    def on_setpoint(self, hw: HardwareState, sp: Setpoint) -> int:
        ctx = self.ctx
        self.active[:] = False
        self.distance_scale = self.effective_scale = 1.0
        self.worst_derivative, self.in_zone = 0.0, 0
        self.engaged = ctx.avoidance and ctx.active
        if not self.engaged or ctx.trajectory or not self._primed:
            return 0
        step = self._step  # (0 for torque-driven joints) and the step as a fraction of the block speed (1.5 v_max per cycle)
        used = kernels.step_fraction(step, sp.q, self.prev, sp.torque_only, self.step_max, self._r)
        if used == 0.0:
            return 0
        span = self.zone - self.ref_padding
        tight = self.tight
        near = []
        if not tight.bound(self.prev):
            # which candidates could bind this step? a conservative test on their lower bounds (a
            # smaller clearance only makes it stricter): the rest need neither an exact distance nor a gradient
            np.abs(step, out=self._absstep)
            np.dot(tight.Wc, self._absstep, out=tight.aux)  # ≥ |ḋ| of the step, per candidate
            pad, band, zone, bdt = self.ref_padding, tight.near, self.zone, self.brake_dt
            for k, dk, closing in zip(tight.cand_list, tight.dc.tolist(), tight.aux.tolist()):
                if dk >= band:
                    continue
                c = dk - pad if dk > pad else 0.0
                if dk < zone:
                    self.in_zone += 1
                    if c < used * span:  # the zone's speed fraction could be below the step's
                        near.append(k)
                        continue
                if closing > min(bdt * math.sqrt(c), 0.5 * c):  # the braking limit (zone + band)
                    near.append(k)
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
        overlapping = av.update(hw.position)  # the pairs whose avoidance shapes overlap (d < 0, exact)
        push = self._push
        push[:] = 0.0
        for k in overlapping:
            overlap = min(-av.d[k], self.max_overlap)  # deeper than touching tight shapes: no stiffer
            g = av.gradient(k, self._g)
            f = self.stiffness * overlap - self.damping * float(g @ hw.velocity)
            if not (math.isfinite(f) and math.isfinite(float(g @ g))):
                # a broken distance or gradient: no silent loss of the repulsion (NaN > 0 is False) and no
                # NaN added to the command: fault (the robot stops), the command left as it is
                self.fault_joint = -1
                return FAULT_NON_FINITE_OUTPUT
            if f > 0.0:
                push += f * g
                self.repelling += 1
                self.active[k] = True
        if self.repelling:
            # (not outward at a position limit: a fuzz run's find — the repulsion pushed a wrist resting at its limit
            # 35 mrad past it while a collision hold stopped the shoulder)
            q, at = hw.position, self._at
            np.minimum(push, 0.0, out=push, where=np.greater_equal(q, self._hi, out=at))
            np.maximum(push, 0.0, out=push, where=np.less_equal(q, self._lo, out=at))
            cmd.effort += push
        return 0
