"""CARTESIAN interpolation (Intera motion controller, CARTESIAN mode): the tip moves along straight
lines between the waypoint poses, optionally blended by circular arcs at the corners, and IK turns
that path into joint knots for the loop's trajectory channel. No ROS here.

Path. From the current tip pose through every waypoint pose: positions on straight lines, the
orientation slerped along each segment in proportion to the segment's progress (a segment that only
rotates is parameterised by its angle, ``ROT_LENGTH`` metres per radian). A waypoint with
``corner_distance`` d > 0 between two moving segments is replaced by a circular arc tangent to both
lines, from d before the corner to d after it (d clamped to half of each adjacent segment, so blends
never overlap); a collinear corner keeps the line. Across a blend the orientation hands over from the
incoming slerp to the outgoing one: in the corner's frame its rotation vector is
``d (σ g_in + (σ + 1)² (g_out − g_in) / 4)`` (g: each segment's rotation per metre; σ ∈ [−1, 1] runs
along the arc, reparameterised so that dσ/da = 1/d at both ends), whose rate turns linearly from the
incoming to the outgoing one: the tip's angular velocity is continuous and its peak angular
acceleration least. At the arc's midpoint, the point nearest the corner (the time reported for the
waypoint), the orientation is within d |g_out − g_in| / 4 of the waypoint's. A corner that cannot be
blended (d = 0, a rotation-only neighbour, a reversal) is a stop. A waypoint within ``SAME_POSITION``
and ``SAME_ROTATION`` of the previous pose is merged into it (the later one kept, the start stays).

Timing. Time-optimal under each segment's ``max_linear_speed/accel`` (tip translation) and
``max_rotational_speed/accel`` (tip angular velocity), at rest at the start, the end and every stop.
On a grid along the path (≤ ``STEP`` of travel and ≤ ``ROT_STEP`` of rotation apart, joined pieces
sharing a point) the squared path speed ṡ² is capped by the speed limits and by the curvature terms
of the acceleration limits; a backward and a forward pass then take the largest path acceleration s̈
that keeps both |p′ s̈ + p″ ṡ²| and |ω s̈ + ω′ ṡ²| within their limits (a trapezoid on a straight
line). Blends take the stricter limits of their two segments.

IK. At every grid point, in order: a prediction from the previous point's dq/ds, then damped
least-squares Newton steps until the pose is reached to ``IK_POS_EPS`` / ``IK_ROT_EPS`` (far below the
IKSolver's tolerances, so that the knots carry no noise the loop's cubics would see as acceleration).
dq/ds is the least-norm joint motion along the path plus a self-motion in the Jacobian's nullspace:
toward the segment's bias (``Waypoint.joint_positions``, blended across corners; its rate per metre
capped by ``NS_RATE``) and away from joint limits closer than ``LIMIT_ZONE``. The plan fails with
CARTESIAN_INTERPOLATION_FAILED where a pose cannot be reached, a joint would have to pass its limit,
or a joint jumps more than ``MAX_JOINT_JUMP`` between grid points (a branch flip).

Knots. The grid points, plus points evenly in time wherever grid points are more than ``sample_dt``
apart; those take the cubic Hermite in s through the neighbouring solutions and slopes, checked
against their pose (Newton-corrected when off by more than ``CORRECT_BELOW`` of the IK tolerances).
Joint velocities are dq/ds · ṡ. If they, the mean speeds between knots or the peak accelerations of
the cubic Hermite the loop runs between knots exceed a segment's ``speed_ratio × v_max`` or
``max_joint_accel`` by more than ``STRETCH_TOL``, the plan fails with PLANNED_JOINT_ACCEL_LIMIT
("reduce the Cartesian speeds/accelerations", as Intera says); within it, time is stretched to fit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..kinematics.ik import IKSolver
from ..model.robot_model import RobotModel
from ..trajectory.spline import cubic_peak_acceleration
from .errors import (CARTESIAN_INTERPOLATION_FAILED, ENDPOINT_DOES_NOT_EXIST, FAILED_TO_PARAMETERIZE,
                     INVALID_TRAJECTORY_MESSAGE, PLANNED_JOINT_ACCEL_LIMIT, MotionError)
from .joint_planner import MIN_ACCEL, MIN_RATIO, JointPlan, clip_start

STEP = 0.005  # m: largest tip travel between path samples (the line is kept to µm between them)
ROT_STEP = 0.01  # rad: largest tip rotation between path samples
ROT_LENGTH = STEP / ROT_STEP  # m per rad: the path parameter of a rotation-only segment
SAME_POSITION = 1e-4  # m and
SAME_ROTATION = 1e-3  # rad: a waypoint this close to the previous pose is merged into it
MIN_BLEND = 1e-4  # m: a corner distance that clamps below this stops at the waypoint instead
STRAIGHT = 1e-6  # rad: a corner deflecting less is collinear (no arc)
REVERSAL = np.pi - 1e-3  # rad: a corner deflecting more turns back on itself: stop there
MIN_INTERVALS = 4  # grid intervals per path piece at least
IK_POS_EPS = 1e-10  # m and
IK_ROT_EPS = 1e-9  # rad: Newton iterates to these (knots must agree far below the IK tolerances, or
# the loop's cubics between knots 5 ms apart would see the noise as acceleration)
IK_ITER = 30  # Newton steps per knot at most
MAX_STEP = 0.5  # rad: largest Newton step (2-norm)
CORRECT_BELOW = 0.01  # a knot interpolated between path samples is Newton-corrected when its pose
# error exceeds this fraction of the IK tolerances
SINGULAR = 0.02  # smallest singular value of the tip Jacobian below which a failure is called a singularity
MAX_JOINT_JUMP = 0.25  # rad between consecutive knots (a few mm apart): more is a branch flip
NS_GAIN = 5.0  # 1/m: the bias self-motion closes this fraction of the gap per metre of path …
NS_RATE = 1.0  # rad/m: … at most this fast (2-norm, before the nullspace projection)
LIMIT_ZONE = 0.1  # rad: inside this band a joint is pushed away from its limit through the nullspace …
LIMIT_GAIN = 10.0  # 1/m: … at this rate per metre of path
STRETCH_TOL = 1.05  # joint limits exceeded by at most this factor: time is stretched instead of failing
ROTATION_CHECK = 1e-6  # |RᵀR − I| and |det R − 1| allowed in a waypoint's rotation


@dataclass
class CartesianWaypoint:
    """One CARTESIAN waypoint; its options apply to the segment that ends here."""

    pose: pin.SE3  # goal pose of the tip in the base frame
    bias: np.ndarray | None  # (n_arm,) rad, IK nullspace bias along the segment ending here (None: none)
    max_linear_speed: float = 0.6  # m/s
    max_linear_accel: float = 0.6  # m/s²
    max_rotational_speed: float = 1.57  # rad/s
    max_rotational_accel: float = 1.57  # rad/s²
    corner_distance: float = 0.0  # m: blend distance at this waypoint (0: stop here; the last one always stops)
    speed_ratio: float = 0.7  # max_joint_speed_ratio: joint velocity limit = ratio × v_max
    accel: np.ndarray | None = None  # (n_arm,) rad/s², max_joint_accel (None: the robot's limits)


@dataclass
class _Segment:
    """Straight motion between two kept poses with the options of the waypoint it ends at."""

    p0: np.ndarray
    p1: np.ndarray
    R0: np.ndarray
    R1: np.ndarray
    index: int  # the requested waypoint it ends at (for messages)
    cart: np.ndarray  # (4,) linear speed, linear accel, rotational speed, rotational accel
    vj: np.ndarray  # (n,) joint velocity limits
    aj: np.ndarray  # (n,) joint acceleration limits
    bias: np.ndarray | None
    corner: float

    def __post_init__(self):
        self.dp = self.p1 - self.p0
        self.L = float(np.linalg.norm(self.dp))
        self.w = pin.log3(self.R0.T @ self.R1)  # rotation over the segment, in R0's frame
        self.theta = float(np.linalg.norm(self.w))
        self.moves = self.L >= SAME_POSITION  # False: rotation only (parameterised by ROT_LENGTH × angle)
        self.ell = self.L if self.moves else max(ROT_LENGTH * self.theta, self.L)


class _Line:
    """Part [f0, f1] of a segment: position and slerp linear in the segment's fraction f."""

    def __init__(self, seg: _Segment, f0: float, f1: float):
        self.seg, self.f0 = seg, f0
        self.length = seg.ell * (f1 - f0)
        self.cart = seg.cart
        self.n = max(MIN_INTERVALS, int(np.ceil(max(seg.L * (f1 - f0) / STEP, seg.theta * (f1 - f0) / ROT_STEP))))

    def pose(self, x: np.ndarray):
        seg = self.seg
        f = self.f0 + x / seg.ell
        return seg.p0 + f[:, None] * seg.dp, seg.R0 @ _exp3_axis(seg.w, f)

    def tangent(self, x: np.ndarray):
        """p′ and ω (world frame, per unit of the path parameter) at local parameters x."""
        seg = self.seg
        om = seg.R0 @ seg.w / seg.ell  # the slerp axis is fixed: ω is constant along the line
        return np.tile(seg.dp / seg.ell, (len(x), 1)), np.tile(om, (len(x), 1))

    def derivatives(self, x: np.ndarray):
        """p′, p″, ω, ω′ at local parameters x."""
        dp, om = self.tangent(x)
        return dp, np.zeros_like(dp), om, np.zeros_like(om)


class _Blend:
    """The circular arc (or collinear line) replacing the corner at P with orientation R.

    Arc length a ∈ [0, length] runs from d before the corner to d after it; ``half`` 0 or 1 selects
    the part before or after the midpoint (the point nearest the corner), each a piece of its own.
    """

    def __init__(self, P, R, u_in, u_out, d, g_in, g_out, cart, half: int):
        self.P, self.R, self.d, self.cart = P, R, d, cart
        self.g_in, self.dg = g_in, g_out - g_in
        A, B = P - d * u_in, P + d * u_out
        cphi = float(np.clip(u_in @ u_out, -1.0, 1.0))
        phi = float(np.arccos(cphi))
        if phi < STRAIGHT:
            self.r, self.A = np.inf, A
            self.full = float(np.linalg.norm(B - A))
            self.u = (B - A) / self.full
        else:
            self.r = d / np.tan(0.5 * phi)
            n = u_out - cphi * u_in
            n /= np.linalg.norm(n)
            self.C, self.e1, self.e2 = A + self.r * n, -n, u_in
            self.full = self.r * phi
        self.c = self.full / (2.0 * d)  # dσ/du / 2 at both ends: |dσ/da| = 1/d, the lines' own rate
        self.a0 = 0.5 * self.full * half
        self.length = 0.5 * self.full
        rot = 1.5 * d * max(np.linalg.norm(g_in), np.linalg.norm(g_out))
        self.n = max(MIN_INTERVALS, int(np.ceil(max(self.length / STEP, rot / ROT_STEP))))

    def _position(self, a):
        if np.isinf(self.r):
            k = len(a)
            return self.A + a[:, None] * self.u, np.tile(self.u, (k, 1)), np.zeros((k, 3))
        al = a / self.r
        c, s = np.cos(al)[:, None], np.sin(al)[:, None]
        radial = c * self.e1 + s * self.e2
        return self.C + self.r * radial, -s * self.e1 + c * self.e2, -radial / self.r

    def _h(self, a):
        """(σ + 1) / 2 and its derivative along the arc: a cubic with slope 1/(2d) at both ends."""
        u = a / self.full
        c = self.c
        h = c * u + (3.0 - 3.0 * c) * u * u + (2.0 * c - 2.0) * u ** 3
        hp = c + 2.0 * (3.0 - 3.0 * c) * u + 3.0 * (2.0 * c - 2.0) * u * u
        return h, hp / self.full

    def progress(self, x):
        """How far across the blend (0 → 1) local parameter x is, in the orientation's terms."""
        return self._h(self.a0 + x)[0]

    def _rotation(self, a):
        # rotation vector in the corner's frame: v(σ) = d (g_in σ + Δg (σ + 1)² / 4), so dv/dσ = d g_in
        # at σ = −1 turns linearly into d g_out at σ = 1 (the least peak angular acceleration)
        y, dy = self._h(a)
        sig, dsig = 2.0 * y - 1.0, 2.0 * dy
        v = self.d * (sig[:, None] * self.g_in + (y * y)[:, None] * self.dg)
        dv = self.d * (self.g_in + y[:, None] * self.dg)
        R = np.empty((len(a), 3, 3))
        om = np.empty((len(a), 3))
        for i in range(len(a)):
            R[i] = self.R @ pin.exp3(v[i])
            om[i] = R[i] @ (pin.Jexp3(v[i]) @ dv[i]) * dsig[i]
        return R, om

    def pose(self, x):
        a = self.a0 + x
        return self._position(a)[0], self._rotation(a)[0]

    def tangent(self, x):
        a = self.a0 + x
        return self._position(a)[1], self._rotation(a)[1]

    def derivatives(self, x):
        a = self.a0 + x
        _, dp, ddp = self._position(a)
        _, om = self._rotation(a)
        h = 1e-5 * self.full
        dom = (self._rotation(a + h)[1] - self._rotation(a - h)[1]) / (2.0 * h)
        return dp, ddp, om, dom


def _exp3_axis(w: np.ndarray, f: np.ndarray) -> np.ndarray:
    """exp(f_i [w]×) for every fraction f_i (Rodrigues about the fixed axis of w), (k, 3, 3)."""
    th = float(np.linalg.norm(w))
    out = np.broadcast_to(np.eye(3), (len(f), 3, 3)).copy()
    if th < 1e-15:
        return out
    K = pin.skew(w / th)
    out += np.sin(f * th)[:, None, None] * K + (1.0 - np.cos(f * th))[:, None, None] * (K @ K)
    return out


def _fail(msg: str):
    return MotionError(CARTESIAN_INTERPOLATION_FAILED, msg)


def _check_inputs(waypoints, n):
    if len(waypoints) == 0:
        raise MotionError(INVALID_TRAJECTORY_MESSAGE, "a CARTESIAN trajectory needs at least one waypoint")
    for k, wp in enumerate(waypoints):
        p, R = np.asarray(wp.pose.translation, float), np.asarray(wp.pose.rotation, float)
        if not (np.isfinite(p).all() and np.isfinite(R).all()):
            raise _fail(f"waypoint {k} pose is not finite")
        if (np.abs(R.T @ R - np.eye(3)).max() > ROTATION_CHECK or abs(np.linalg.det(R) - 1.0) > ROTATION_CHECK):
            raise _fail(f"waypoint {k} orientation is not a rotation (quaternion not normalised?)")
        for name in ("max_linear_speed", "max_linear_accel", "max_rotational_speed", "max_rotational_accel"):
            x = getattr(wp, name)
            if not (np.isfinite(x) and x > 0.0):
                raise MotionError(INVALID_TRAJECTORY_MESSAGE, f"waypoint {k} {name} = {x} must be > 0")
        if not (np.isfinite(wp.corner_distance) and wp.corner_distance >= 0.0):
            raise MotionError(INVALID_TRAJECTORY_MESSAGE, f"waypoint {k} corner_distance = {wp.corner_distance} "
                              "must be >= 0")
        if not (np.isfinite(wp.speed_ratio) and 0.0 < wp.speed_ratio <= 1.0):
            raise MotionError(INVALID_TRAJECTORY_MESSAGE, f"waypoint {k} max_joint_speed_ratio {wp.speed_ratio} "
                              "outside (0, 1]")
        if wp.accel is not None:
            a = np.asarray(wp.accel, float)
            if a.shape != (n,) or not np.isfinite(a).all() or (a < MIN_ACCEL).any():
                raise MotionError(INVALID_TRAJECTORY_MESSAGE, f"waypoint {k} max_joint_accel must be {n} values "
                                  f">= {MIN_ACCEL}, got {a}")
        if wp.bias is not None:
            b = np.asarray(wp.bias, float)
            if b.shape != (n,) or not np.isfinite(b).all():
                raise MotionError(INVALID_TRAJECTORY_MESSAGE, f"waypoint {k} joint_positions (IK bias) must be "
                                  f"{n} finite values, got {b}")


def _segments(start: pin.SE3, waypoints, vmax, amax):
    """Merge near-duplicate poses; one _Segment per remaining move. Returns the segments and, for
    the start and each requested waypoint, the kept point it became (0 = the start)."""
    segs: list[_Segment] = []
    owner = [0]
    p_prev, R_prev = start.translation.copy(), start.rotation.copy()
    for k, wp in enumerate(waypoints):
        p, R = np.array(wp.pose.translation, float), np.array(wp.pose.rotation, float)
        cart = np.array([wp.max_linear_speed, wp.max_linear_accel, wp.max_rotational_speed, wp.max_rotational_accel])
        vj = max(wp.speed_ratio, MIN_RATIO) * vmax
        aj = amax if wp.accel is None else np.minimum(np.asarray(wp.accel, float), amax)
        bias = None if wp.bias is None else np.asarray(wp.bias, float)
        same = (np.linalg.norm(p - p_prev) < SAME_POSITION
                and np.linalg.norm(pin.log3(R_prev.T @ R)) < SAME_ROTATION)
        last_collapsing = same and not segs and k == len(waypoints) - 1 and (
            not np.array_equal(p, start.translation) or not np.array_equal(R, start.rotation))
        if same and segs:  # merged: the later pose is kept, the stricter options bind the move into it
            s = segs[-1]
            segs[-1] = _Segment(s.p0, p, s.R0, R, k, np.minimum(s.cart, cart), np.minimum(s.vj, vj),
                                np.minimum(s.aj, aj), bias if bias is not None else s.bias, wp.corner_distance)
        elif not same or last_collapsing:  # (every target within tolerance of the start: still end on the last)
            segs.append(_Segment(p_prev, p, R_prev, R, k, cart, vj, aj, bias, wp.corner_distance))
        owner.append(len(segs))
        if segs:
            p_prev, R_prev = segs[-1].p1, segs[-1].R1
    return segs, owner


def _pieces(segs: list[_Segment]):
    """Lines and blend halves along the path; which corners stop; for each piece its segment index."""
    K = len(segs)
    d = np.zeros(K + 1)  # blend distance at kept point j (0: stop)
    for j in range(1, K):
        a, b = segs[j - 1], segs[j]
        if a.corner <= 0.0 or not (a.moves and b.moves):
            continue
        if np.arccos(np.clip((a.dp / a.L) @ (b.dp / b.L), -1.0, 1.0)) > REVERSAL:
            continue
        dj = min(a.corner, 0.5 * a.L, 0.5 * b.L)
        if dj >= MIN_BLEND:
            d[j] = dj
    pieces, owner = [], []
    for j, seg in enumerate(segs, start=1):
        if d[j - 1] > 0:
            pieces.append(_corner(segs, j - 1, d[j - 1], 1))
            owner.append(j - 1)
        f0 = d[j - 1] / seg.L if d[j - 1] > 0 else 0.0
        f1 = 1.0 - d[j] / seg.L if d[j] > 0 else 1.0
        if (f1 - f0) * seg.ell > 1e-9:
            pieces.append(_Line(seg, f0, f1))
            owner.append(j - 1)
        if d[j] > 0:
            pieces.append(_corner(segs, j, d[j], 0))
            owner.append(j - 1)
    return pieces, owner, d


def _corner(segs, j, d, half):
    a, b = segs[j - 1], segs[j]
    return _Blend(a.p1, a.R1, a.dp / a.L, b.dp / b.L, d, a.w / a.L, b.w / b.L, np.minimum(a.cart, b.cart), half)


def _accel_rows(dp, ddp, om, dom, cart):
    """Rows (aa, ab, bb, c²) of |A s̈ + B ṡ²| ≤ c for translation and rotation, and the bound on ṡ²
    from the speed limits and from keeping s̈ = 0 feasible (curvature)."""
    rows = []
    cap = np.full(len(dp), np.inf)
    for A, B, v, c in ((dp, ddp, cart[0], cart[1]), (om, dom, cart[2], cart[3])):
        aa = np.einsum("ij,ij->i", A, A)
        ab = np.einsum("ij,ij->i", A, B)
        bb = np.einsum("ij,ij->i", B, B)
        with np.errstate(divide="ignore"):
            cap = np.minimum(cap, np.where(aa > 0, v * v / aa, np.inf))
            cap = np.minimum(cap, np.where(bb > 0, c / np.sqrt(bb), np.inf))
        rows.append(np.stack((aa, ab, bb, np.full(len(aa), c * c)), axis=1))
    return np.concatenate(rows, axis=1).reshape(len(dp), 2, 4), cap


def _urange(rows, x):
    """The path accelerations s̈ allowed at squared speed x by every row (aa, ab, bb, c²)."""
    lo, hi = -np.inf, np.inf
    for aa, ab, bb, c2 in rows:
        if aa <= 1e-18:
            continue
        q = ab * x
        r = np.sqrt(max(q * q - aa * (bb * x * x - c2), 0.0))
        lo = max(lo, (-q - r) / aa)
        hi = min(hi, (-q + r) / aa)
    return lo, hi


def _profile(s, rows, cap):
    """Squared path speed per grid point: a backward pass (how fast one may be and still brake for
    what follows), then a forward pass (accelerate as hard as allowed below it)."""
    N = len(s)
    ds = np.diff(s)
    xb = np.empty(N)
    xb[-1] = cap[-1]
    for i in range(N - 2, -1, -1):
        x = min(xb[i + 1] - 2.0 * ds[i] * _urange(rows[i + 1], xb[i + 1])[0], cap[i])
        x = min(x, xb[i + 1] - 2.0 * ds[i] * _urange(rows[i], x)[0])  # the braking bound where it starts
        xb[i] = max(x, 0.0)
    xf = np.empty(N)
    xf[0] = min(cap[0], xb[0])
    for i in range(N - 1):
        x = min(xf[i] + 2.0 * ds[i] * _urange(rows[i], xf[i])[1], xb[i + 1])
        x = min(x, xf[i] + 2.0 * ds[i] * _urange(rows[i + 1], x)[1])
        xf[i + 1] = max(x, 0.0)
    return xf


def _grid(pieces, owner, d):
    """Grid points along the path (each piece's own points, shared at the joins).

    Returns a dict: path parameter ``s``; poses ``P``/``R``; piece ``pid`` and local parameter
    ``loc`` of the interval starting at each point; acceleration ``rows`` and squared-speed ``cap``
    (at a join: both pieces'); tangents p′/ω of the piece after (``dpA``/``omA``) and before
    (``dpB``/``omB``) each point; ``rest`` points; and ``mids``, the grid index of each blend's
    midpoint by kept point."""
    parts = []
    for pc in pieces:
        x = np.linspace(0.0, pc.length, pc.n + 1)
        P, R = pc.pose(x)
        dp, ddp, om, dom = pc.derivatives(x)
        rows, cap = _accel_rows(dp, ddp, om, dom, pc.cart)
        parts.append((x, P, R, rows, cap, dp, om))
    off = np.concatenate(([0], np.cumsum([pc.n for pc in pieces])))
    start = np.concatenate(([0.0], np.cumsum([pc.length for pc in pieces])))
    last = parts[-1]

    def after(i):  # values at each point from the piece that starts there (the last point: the last piece)
        return np.concatenate([p[i][:-1] for p in parts] + [last[i][-1:]])

    def before(i):  # … from the piece that ends there (the first point: the first piece)
        return np.concatenate([parts[0][i][:1]] + [p[i][1:] for p in parts])

    g = dict(s=np.concatenate([start[k] + p[0][:-1] for k, p in enumerate(parts)] + [start[-1:]]),
             P=after(1), R=after(2), loc=after(0), dpA=after(5), omA=after(6), dpB=before(5), omB=before(6),
             pid=np.concatenate([np.full(pc.n, k) for k, pc in enumerate(pieces)] + [[len(pieces) - 1]]),
             rows=np.concatenate((before(3), after(3)), axis=1),  # (N, 4, 4): both sides' rows at a join
             cap=np.minimum(before(4), after(4)))
    rest = np.zeros(len(g["s"]), bool)
    rest[[0, -1]] = True
    mids = {}
    for k, pc in enumerate(pieces):
        j = owner[k] + 1  # the kept point this piece's segment ends at
        if isinstance(pc, _Blend) and pc.a0 == 0.0:
            mids[j] = int(off[k + 1])
        elif (k + 1 == len(pieces) or owner[k + 1] != owner[k]) and d[j] == 0.0:
            rest[off[k + 1]] = True
    g["cap"][rest] = 0.0
    g["rest"], g["mids"] = rest, mids
    return g


def plan_cartesian(rm: RobotModel, ik: IKSolver, tip: str, start_q: np.ndarray,
                   waypoints: list[CartesianWaypoint], lower, upper, vmax, amax,
                   sample_dt: float = 0.01, max_knots: int = 10000) -> JointPlan:
    """Plan the frame ``tip`` from ``start_q`` (full config-order vector, the head included) along
    straight lines (and corner blends) through ``waypoints``. ``lower``/``upper``/``vmax``/``amax``
    are the arm joints' (n_arm,). Returns knots for the arm joints; raises MotionError."""
    lower, upper, vmax, amax = (np.asarray(x, float) for x in (lower, upper, vmax, amax))
    n = len(lower)
    if not rm.has_frame(tip):
        raise MotionError(ENDPOINT_DOES_NOT_EXIST, f"endpoint {tip!r} is not a frame of the robot model")
    start_q = np.asarray(start_q, float)
    if start_q.shape != (rm.model.nq,) or not np.isfinite(start_q).all():
        raise MotionError(FAILED_TO_PARAMETERIZE, f"current joint positions unusable: {start_q}")
    _check_inputs(waypoints, n)
    full = start_q.copy()
    full[:n] = clip_start(start_q[:n], lower, upper)
    W = len(waypoints)

    if not np.any(rm.jacobian(full, tip)[:, :n]):
        raise _fail(f"the arm joints do not move endpoint {tip!r}")
    segs, owner = _segments(rm.fk(full, tip), waypoints, vmax, amax)
    if not segs:  # every waypoint is the current pose
        return JointPlan.at_rest(full[:n], W)
    pieces, piece_seg, d = _pieces(segs)
    g = _grid(pieces, piece_seg, d)
    s, pid, loc, rest = g["s"], g["pid"], g["loc"], g["rest"]
    if len(s) > max_knots:
        raise MotionError(FAILED_TO_PARAMETERIZE, f"the path needs {len(s)} samples, more than the {max_knots} "
                          "knots a trajectory may hold")
    x = _profile(s, g["rows"].tolist(), g["cap"])
    sd = np.sqrt(x)
    dt_grid = 2.0 * np.diff(s) / (sd[:-1] + sd[1:])
    t_grid = np.concatenate(([0.0], np.cumsum(dt_grid)))
    if not np.isfinite(t_grid[-1]) or t_grid[-1] <= 0.0:
        raise MotionError(FAILED_TO_PARAMETERIZE, f"time parameterisation gave duration {t_grid[-1]}")
    dt = max(sample_dt, t_grid[-1] / max(max_knots - len(s), 1))
    extra = np.maximum(np.ceil(dt_grid / dt - 1e-9).astype(int) - 1, 0)  # knots to add in each interval
    if len(s) + int(extra.sum()) > max_knots:
        raise MotionError(FAILED_TO_PARAMETERIZE, f"the trajectory needs more than {max_knots} knots")

    seg_of = np.asarray(piece_seg)[pid]  # segment of the interval starting at each grid point
    newton = _Newton(rm, tip, full, lower, upper, ik)
    q, dq = _track(newton, g, seg_of, segs, pieces)
    k = _knots(newton, g, x, t_grid, extra, seg_of, segs, pieces, q, dq)
    v = k["dq"] * k["sd"][:, None]
    a = _accelerations(k)
    v[0] = v[-1] = a[0] = a[-1] = 0.0
    f = _stretch(k["t"], k["q"], v, k["seg"], segs, rm.cfg.joint_names)
    t, v, a = k["t"] * f, v / f, a / (f * f)

    # when each point is passed: a stop at its grid point, a blended corner at the arc's midpoint
    kept_t = np.zeros(len(segs) + 1)
    stop_j = [j for j in range(1, len(segs) + 1) if d[j] == 0.0]
    for j, gi in zip(stop_j, np.flatnonzero(rest)[1:]):
        kept_t[j] = t[k["at"][gi]]
    for j, gi in g["mids"].items():
        kept_t[j] = t[k["at"][gi]]
    return JointPlan(t, k["q"], v, a, kept_t[np.asarray(owner)], bool((d[1:len(segs)] == 0.0).any()))


def _knots(newton, g, x, t_grid, extra, seg_of, segs, pieces, q, dq):
    """The grid points, and ``extra[i]`` points evenly in time inside each interval i, whose arm
    angles are the cubic Hermite in s through the grid's solutions and slopes (checked against their
    pose and corrected if needed). Returns a dict of per-knot arrays: s, t, path speed sd and
    acceleration u (of the interval starting there), arm angles q, dq/ds after (dq) and before (dqB)
    the knot, segment, rest flags, and ``at``, the knot index of each grid point."""
    s, pid, loc = g["s"], g["pid"], g["loc"]
    sd = np.sqrt(x)
    u = np.diff(x) / (2.0 * np.diff(s))  # constant on each interval
    at = np.concatenate(([0], np.cumsum(extra + 1)))
    m = int(at[-1]) + 1
    n = q.shape[1]
    k = dict(s=np.empty(m), t=np.empty(m), sd=np.empty(m), u=np.empty(m), q=np.empty((m, n)),
             dq=np.empty((m, n)), dqB=np.empty((m, n)), seg=np.empty(m, int), rest=np.zeros(m, bool), at=at)
    k["s"][at], k["t"][at], k["sd"][at], k["q"][at], k["seg"][at] = s, t_grid, sd, q, seg_of
    k["dq"][at], k["dqB"][at] = dq
    k["u"][at[:-1]], k["u"][-1] = u, u[-1]
    k["rest"][at[g["rest"]]] = True
    ii = np.repeat(np.arange(len(extra)), extra)  # the interval of each added knot
    if len(ii):
        rank = np.arange(len(ii)) - np.repeat(np.cumsum(extra) - extra, extra) + 1  # 1.. within its interval
        tau = (t_grid[ii + 1] - t_grid[ii]) * rank / (extra[ii] + 1)
        idx = at[ii] + rank
        ds = sd[ii] * tau + 0.5 * u[ii] * tau * tau
        k["s"][idx], k["t"][idx], k["sd"][idx] = s[ii] + ds, t_grid[ii] + tau, sd[ii] + u[ii] * tau
        k["u"][idx], k["seg"][idx] = u[ii], seg_of[ii]
        k["q"][idx], k["dq"][idx] = _hermite(s[ii], s[ii + 1], q[ii], q[ii + 1], dq[0][ii], dq[1][ii + 1], s[ii] + ds)
        k["dqB"][idx] = k["dq"][idx]
        for p in np.unique(pid[ii]):
            sel = np.flatnonzero(pid[ii] == p)
            P, R = pieces[p].pose(loc[ii[sel]] + ds[sel])
            for r, j in enumerate(idx[sel]):
                k["q"][j] = newton.correct(k["q"][j], pin.SE3(R[r], P[r]), segs[k["seg"][j]].index)
    return k


class _Newton:
    """Damped least-squares Newton iterations on the arm joints for one tip (the other joints stay)."""

    def __init__(self, rm: RobotModel, tip: str, full: np.ndarray, lower, upper, ik: IKSolver):
        self.rm, self.model = rm, rm.model
        self.data = rm.model.createData()
        self.fid = rm.frame_id(tip)
        self.n = len(lower)
        self.arm = rm.perm[:self.n]
        self.qp = rm.to_pin(full)
        self.lower, self.upper = lower, upper
        self.inner_lo, self.inner_hi = lower + LIMIT_ZONE, upper - LIMIT_ZONE
        self.tol = (ik.pos_tol, ik.rot_tol)
        self.T = self.J = None
        self.blocked = -1

    def set(self, qa: np.ndarray) -> None:
        """Make ``qa`` the current arm angles (pose and Jacobian with them)."""
        self.qp[self.arm] = qa
        pin.computeJointJacobians(self.model, self.data, self.qp)
        self.T = pin.updateFramePlacement(self.model, self.data, self.fid)
        self.J = pin.getFrameJacobian(self.model, self.data, self.fid, pin.LOCAL)[:, self.arm]

    def solve(self, qa: np.ndarray, G: pin.SE3) -> bool:
        """Iterate from ``qa`` (the current angles, updated in place) to pose ``G``. True once
        converged to IK_POS_EPS / IK_ROT_EPS; ``blocked`` is then the first joint a step would have
        pushed through its limit (-1: none)."""
        lower, upper = self.lower, self.upper
        pe2, re2 = IK_POS_EPS ** 2, IK_ROT_EPS ** 2
        self.blocked = -1
        for it in range(IK_ITER + 1):
            err = pin.log6(self.T.actInv(G)).vector
            if err[:3] @ err[:3] < pe2 and err[3:] @ err[3:] < re2:
                return True
            if it == IK_ITER:
                return False
            e2 = err @ err
            dq = _dls_step(self.J, err, e2)
            x = qa + dq
            blocked = ((x < lower) & (dq < 0.0)) | ((x > upper) & (dq > 0.0))
            if blocked.any():  # joints the step pushes through their limit sit it out
                if self.blocked < 0:
                    self.blocked = int(np.argmax(blocked))
                J = self.J.copy()
                J[:, blocked] = 0.0
                dq = _dls_step(J, err, e2)
            np.clip(qa + dq, lower, upper, out=qa)
            self.set(qa)
        return False

    def tangent(self, R: np.ndarray, dp: np.ndarray, om: np.ndarray, rate: np.ndarray) -> np.ndarray:
        """dq/ds at the current angles: the least-norm joint motion that moves the tip along p′, ω
        (world frame, R the tip's orientation), plus ``rate`` projected on the nullspace."""
        xi = np.concatenate((R.T @ dp, R.T @ om))  # the tip's twist per unit s in its own frame
        J = self.J
        A = J @ J.T
        A.flat[::7] += 1e-12
        return J.T @ np.linalg.solve(A, xi - J @ rate) + rate

    def errors(self, G: pin.SE3) -> tuple[float, float]:
        """Position [m] and orientation [rad] error of the current tip pose from ``G``."""
        return (float(np.linalg.norm(self.T.translation - G.translation)),
                float(np.linalg.norm(pin.log3(self.T.rotation.T @ G.rotation))))

    def correct(self, qa: np.ndarray, G: pin.SE3, index: int) -> np.ndarray:
        """``qa`` if it reaches ``G`` well within the IK tolerances, else Newton-corrected from it."""
        qa = qa.copy()
        self.qp[self.arm] = qa
        pin.forwardKinematics(self.model, self.data, self.qp)
        self.T = pin.updateFramePlacement(self.model, self.data, self.fid)
        pe, re = self.errors(G)
        if pe > CORRECT_BELOW * self.tol[0] or re > CORRECT_BELOW * self.tol[1]:
            self.set(qa)
            if not self.solve(qa, G) or self.blocked >= 0:
                self.check(G, index)
        return qa

    def check(self, G: pin.SE3, index: int) -> None:
        """Raise CARTESIAN_INTERPOLATION_FAILED unless the current angles reach ``G`` within the IK
        tolerances without a joint that had to stop at its limit."""
        if self.blocked >= 0:
            j = self.blocked
            side, lim = ("upper", self.upper[j]) if self.qp[self.arm[j]] > 0.5 * (self.lower[j] + self.upper[j]) \
                else ("lower", self.lower[j])
            raise _fail(f"{self.rm.cfg.joint_names[j]} would have to pass its {side} limit ({lim:.3f} rad) to keep "
                        f"the tip on the path to waypoint {index} (tip at {np.round(G.translation, 4).tolist()})")
        pe, re = self.errors(G)
        if pe > self.tol[0] or re > self.tol[1]:
            sigma = float(np.linalg.svd(self.J, compute_uv=False)[-1])
            why = (f"the arm is at a singularity (smallest singular value {sigma:.3f})" if sigma < SINGULAR
                   else "out of reach or blocked by the joint limits")
            raise _fail(f"no IK solution along the segment to waypoint {index}: the tip pose at "
                        f"{np.round(G.translation, 4).tolist()} is missed by {pe * 1000:.2f} mm, "
                        f"{np.degrees(re):.2f}°: {why}")


def _self_motion(newton: _Newton, qa, segs, pc, j, x) -> np.ndarray:
    """Joint motion per unit of path wanted in the nullspace at ``qa`` (piece ``pc`` of segment
    ``j``, local parameter ``x``): away from the joint limits inside LIMIT_ZONE, toward the bias."""
    lo, hi = newton.inner_lo, newton.inner_hi
    r = LIMIT_GAIN * (np.clip(qa, lo, hi) - qa)
    target, weight = _bias(segs, pc, j, x)
    if weight > 0.0:
        b = weight * NS_GAIN * (np.clip(target, lo, hi) - qa)
        nb = float(np.linalg.norm(b))
        r += b if nb <= NS_RATE else b * (NS_RATE / nb)
    return r


def _track(newton: _Newton, g: dict, seg_of, segs, pieces):
    """Arm angles at every grid point, each solved from the previous one, and dq/ds there on the
    piece after and before the point (different only at rests)."""
    s, P, R, pid, loc, rest = g["s"], g["P"], g["R"], g["pid"], g["loc"], g["rest"]
    N = len(s)
    qa = newton.qp[newton.arm].copy()
    out, tA, tB = np.empty((N, newton.n)), np.empty((N, newton.n)), np.empty((N, newton.n))
    newton.set(qa)
    out[0] = qa
    for k in range(N):
        pa, pb = pid[k], pid[max(k - 1, 0)]  # the pieces after and before point k
        xb = loc[k] if pa == pb else pieces[pb].length
        if k > 0:
            # predict from the previous point's dq/ds (its self-motion included) and its change, then Newton
            ds = s[k] - s[k - 1]
            step = tA[k - 1] * ds
            if k > 1 and not rest[k - 1]:
                step += (0.5 * ds * ds / (s[k - 1] - s[k - 2])) * (tA[k - 1] - tA[k - 2])
            np.clip(qa + step, newton.lower, newton.upper, out=qa)
            newton.set(qa)
            G = pin.SE3(R[k], P[k])
            index = segs[seg_of[k - 1]].index
            if not newton.solve(qa, G) or newton.blocked >= 0:
                newton.check(G, index)
            jump = np.abs(qa - out[k - 1])
            if jump.max() > MAX_JOINT_JUMP:
                j = int(np.argmax(jump))
                raise _fail(f"IK along the segment to waypoint {index} is discontinuous: "
                            f"{newton.rm.cfg.joint_names[j]} jumps {jump[j]:.3f} rad between path samples "
                            f"{np.linalg.norm(P[k] - P[k - 1]) * 1000:.2f} mm apart (a branch flip near a "
                            "singularity)")
            out[k] = qa
        tA[k] = newton.tangent(R[k], g["dpA"][k], g["omA"][k],
                               _self_motion(newton, qa, segs, pieces[pa], seg_of[k], loc[k]))
        if rest[k] and 0 < k:
            tB[k] = newton.tangent(R[k], g["dpB"][k], g["omB"][k],
                                   _self_motion(newton, qa, segs, pieces[pb], seg_of[k - 1], xb))
        else:
            tB[k] = tA[k]
    return out, (tA, tB)


def _hermite(s0, s1, q0, q1, m0, m1, s):
    """Cubic Hermite in s through (s0, q0, slope m0) and (s1, q1, slope m1) (rows: one per point s),
    its values and slopes at s."""
    h = (s1 - s0)[:, None]
    t = ((s - s0) / (s1 - s0))[:, None]
    t2, t3 = t * t, t * t * t
    q = (2 * t3 - 3 * t2 + 1) * q0 + (t3 - 2 * t2 + t) * h * m0 + (3 * t2 - 2 * t3) * q1 + (t3 - t2) * h * m1
    dq = (6 * (t2 - t) * (q0 - q1)) / h + (3 * t2 - 4 * t + 1) * m0 + (3 * t2 - 2 * t) * m1
    return q, dq


def _dls_step(J, err, e2):
    """Damped least-squares step toward the tip-frame error ``err`` (e2 = |err|²), its size capped."""
    A = J @ J.T
    A.flat[::7] += 1e-12 + 1e-3 * e2
    dq = J.T @ np.linalg.solve(A, err)
    n2 = dq @ dq
    if n2 > MAX_STEP ** 2:
        dq *= MAX_STEP / np.sqrt(n2)
    return dq


def _bias(segs, pc, j, x):
    """Bias target and weight (0: none) for the self-motion at local parameter ``x`` of piece ``pc``
    of segment ``j``: the segment's bias on a line; across a blend, the two segments' biases blended
    with a smoothstep of the blend's progress, so the self-motion changes smoothly."""
    b = segs[j].bias
    if not isinstance(pc, _Blend):
        return (b, 1.0) if b is not None else (None, 0.0)
    b_in, b_out = (b, segs[j + 1].bias) if pc.a0 == 0.0 else (segs[j - 1].bias, b)
    if b_in is None and b_out is None:
        return None, 0.0
    y = pc.progress(x)
    beta = y ** 3 * (10.0 - 15.0 * y + 6.0 * y * y)
    weight = (1.0 - beta) * (b_in is not None) + beta * (b_out is not None)
    t_in = b_in if b_in is not None else b_out
    t_out = b_out if b_out is not None else b_in
    return (1.0 - beta) * t_in + beta * t_out, weight


def _accelerations(k):
    """Joint accelerations q″ ṡ² + q′ s̈ at the knots, q″ by differentiating dq/ds along s stretch by
    stretch between rests (where the path may turn)."""
    s, dq, x, u = k["s"], k["dq"], k["sd"] ** 2, k["u"]
    a = np.zeros_like(dq)
    bounds = np.flatnonzero(k["rest"])
    for b0, b1 in zip(bounds[:-1], bounds[1:]):
        t = dq[b0:b1 + 1].copy()
        t[-1] = k["dqB"][b1]
        dd = np.gradient(t, s[b0:b1 + 1], axis=0, edge_order=2) if b1 - b0 >= 2 else np.zeros_like(t)
        a[b0:b1 + 1] = dd * x[b0:b1 + 1, None] + t * u[b0:b1 + 1, None]
    return a


def _stretch(t, q, v, seg_of, segs, names) -> float:
    """Time factor (≥ 1) that brings the knot velocities, the mean speeds between knots and the
    peak accelerations of the cubics between them within each segment's joint limits; raises
    PLANNED_JOINT_ACCEL_LIMIT if that takes more than STRETCH_TOL."""
    vseg = np.array([sg.vj for sg in segs])[seg_of]  # limits of the interval starting at each knot
    aseg = np.array([sg.aj for sg in segs])[seg_of]
    vknot = np.maximum(vseg, np.vstack((vseg[:1], vseg[:-1])))  # a knot: the looser of its two intervals
    T = np.diff(t)[:, None]
    k, worst = 1.0, None
    for what, r in (("speed", np.abs(v) / vknot),
                    ("speed", np.abs(np.diff(q, axis=0)) / T / vseg[:-1]),
                    ("acceleration", np.sqrt(cubic_peak_acceleration(t, q, v) / aseg[:-1]))):
        i, j = np.unravel_index(np.argmax(r), r.shape)
        if r[i, j] > k:
            k, worst = float(r[i, j]), (what, int(i), int(j))
    if worst is None:
        return 1.0
    if k > STRETCH_TOL:
        what, i, j = worst
        sg = segs[seg_of[i]]
        lim = sg.vj[j] if what == "speed" else sg.aj[j]
        need, unit = (lim * k, "rad/s") if what == "speed" else (lim * k * k, "rad/s²")
        raise MotionError(PLANNED_JOINT_ACCEL_LIMIT, f"along the segment to waypoint {sg.index}, {names[j]} would "
                          f"need a {what} of {need:.2f} {unit} (limit {lim:.2f}): reduce the Cartesian "
                          "speeds/accelerations (or raise the joint speed ratio/accelerations)")
    return k * (1.0 + 1e-9)
