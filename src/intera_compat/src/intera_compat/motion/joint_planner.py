"""JOINT interpolation (Intera motion controller, JOINT mode): a smooth, time-optimal joint path
from the current configuration through every waypoint, stopping only at the last one when it can.

Geometry: one C² cubic spline through the distinct points (start + waypoints), parameterised by
chord length in joint space; the arm passes every waypoint without stopping. If that spline leaves
the joint range between waypoints, the planner falls back to straight joint-space segments that stop
at each waypoint (always inside the range, since the range is a box).

Timing: TOPP-RA (``toppra``, reachability analysis on a grid along the path) under per-segment limits.
Segment k (ending at waypoint k) uses that waypoint's options, as intera_motion_msgs specifies:
velocity ``max_joint_speed_ratio × v_max`` and acceleration ``min(max_joint_accel, a_max)`` per
joint. Where two segments meet, the stricter of the two applies. A small margin below each limit keeps
the sampled knots inside the limits the loop's trajectory client enforces.

Output: knots (t, q, v, a) sampled from the time-optimal profile every ``sample_dt`` and at every
point where the path acceleration switches, for the loop's trajectory channel with cubic Hermite
segments between knots (exact where the acceleration is piecewise constant; a quintic would overshoot
each switch), plus the time at which each point is passed (for the current-waypoint
feedback and ``last_successful_waypoint``). No ROS here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import toppra
import toppra.algorithm
import toppra.constraint
from toppra.constraint.linear_constraint import LinearConstraint, canlinear_colloc_to_interpolate

from ..trajectory.spline import cubic_peak_acceleration
from .errors import FAILED_TO_PARAMETERIZE, INVALID_TRAJECTORY_MESSAGE, MotionError

toppra.setup_logging("WARNING")

SAME_POINT = 0.0087  # rad (Intera's 0.5° joint tolerance): closer consecutive points are one point, the later
# one kept (the start stays the start), so servo noise in "waypoint 0 = current angles" cannot bend the spline
MIN_RATIO = 0.05  # the SDK's own floor for max_joint_speed_ratio; smaller values are raised to it
MIN_ACCEL = 0.05  # rad/s²: a max_joint_accel below this is refused (it would mean minutes-long moves)
START_SLACK = 0.01  # rad: a start this far outside the joint range is clipped into it, further is refused
LIMIT_MARGIN = 0.98  # plan at this fraction of every velocity and acceleration limit
MIN_KNOT_GAP = 1e-3  # s: no two knots closer (times travel rounded to ns; a µs interval would make a wild cubic)
GRID_PER_SEGMENT = 24  # TOPP-RA grid points per segment (the grid also has at least MIN_GRID)
MIN_GRID = 60


@dataclass
class JointPlan:
    t: np.ndarray  # (k,) knot times, t[0] = 0
    q: np.ndarray  # (k, n)
    v: np.ndarray  # (k, n)
    a: np.ndarray  # (k, n)
    point_times: np.ndarray  # (W + 1,) time the start (0) and each requested waypoint are reached
    stops_at_waypoints: bool  # True when the smooth path was not possible (fallback)
    order: int = 3  # interpolate the knots with cubic Hermite segments (the acceleration jumps at knots)

    @property
    def duration(self) -> float:
        return float(self.t[-1])

    @classmethod
    def at_rest(cls, q: np.ndarray, waypoints: int) -> "JointPlan":
        """Nothing to move: one knot at ``q`` (n,), every waypoint reached at t = 0."""
        z = np.zeros((1, len(q)))
        return cls(np.zeros(1), np.array(q, float)[None, :], z, z.copy(), np.zeros(waypoints + 1), False)


class _SegmentVelocity(LinearConstraint):
    """|q'(s) ṡ| ≤ v_max of the segment holding s, as a bound on ṡ² per grid point."""

    def __init__(self, s_knots: np.ndarray, vmax: np.ndarray):
        super().__init__()
        self.s_knots, self.vmax, self.dof = s_knots, vmax, vmax.shape[1]

    def compute_constraint_params(self, path, gridpoints, *args, **kwargs):
        qs = np.abs(path(gridpoints, 1))
        lim = _per_grid(self.s_knots, self.vmax, gridpoints)
        with np.errstate(divide="ignore"):
            xmax = np.min((lim / qs) ** 2, axis=1)
        xbound = np.zeros((len(gridpoints), 2))
        xbound[:, 1] = np.minimum(xmax, 1e12)
        return None, None, None, None, None, None, xbound


class _SegmentAcceleration(LinearConstraint):
    """|q'(s) s̈ + q''(s) ṡ²| ≤ a_max of the segment holding s (rows divided by the limit, so F and g
    are the same at every grid point)."""

    def __init__(self, s_knots: np.ndarray, amax: np.ndarray):
        super().__init__()
        self.s_knots, self.amax, self.dof = s_knots, amax, amax.shape[1]
        self.identical = True
        self.set_discretization_type(toppra.constraint.DiscretizationType.Interpolation)

    def compute_constraint_params(self, path, gridpoints, *args, **kwargs):
        lim = _per_grid(self.s_knots, self.amax, gridpoints)
        a = path(gridpoints, 1) / lim
        b = path(gridpoints, 2) / lim
        n = self.dof
        F = np.vstack((np.eye(n), -np.eye(n)))
        g = np.ones(2 * n)
        return canlinear_colloc_to_interpolate(a, b, np.zeros_like(a), F, g, None, None, gridpoints, identical=True)


def _per_grid(s_knots: np.ndarray, seg_limits: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Limit rows per grid point: the segment containing s; at a knot, the stricter of its two segments."""
    last = len(seg_limits) - 1
    left = np.clip(np.searchsorted(s_knots, s, side="left") - 1, 0, last)
    right = np.clip(np.searchsorted(s_knots, s, side="right") - 1, 0, last)
    return np.minimum(seg_limits[left], seg_limits[right])


def clip_start(start: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """The arm's current angles clipped into the joint range (servo noise at a limit); further than
    START_SLACK outside it is refused."""
    if ((start < lower - START_SLACK) | (start > upper + START_SLACK)).any():
        raise MotionError(FAILED_TO_PARAMETERIZE, "the arm is outside its joint range; move it back first")
    return np.clip(start, lower, upper)


def plan_joint(start, waypoints, speed_ratios, accels, lower, upper, vmax, amax,
               sample_dt: float = 0.01, max_knots: int = 10000) -> JointPlan:
    """Plan from ``start`` (n,) through ``waypoints`` (W, n).

    ``speed_ratios`` (W,) in (0, 1] and ``accels`` (W, n) > 0 belong to the segment ending at each
    waypoint; accelerations above ``amax`` are capped to it. Raises MotionError.
    """
    lower, upper, vmax, amax = (np.asarray(x, float) for x in (lower, upper, vmax, amax))
    n = len(lower)
    start = np.asarray(start, float)
    pts = np.asarray(waypoints, float)
    ratios = np.asarray(speed_ratios, float)
    acc = np.asarray(accels, float)
    if start.shape != (n,) or not np.isfinite(start).all():
        raise MotionError(FAILED_TO_PARAMETERIZE, f"current joint positions unusable: {start}")
    if pts.ndim != 2 or pts.shape[1] != n or len(pts) == 0:
        raise MotionError(INVALID_TRAJECTORY_MESSAGE, f"waypoints must be W × {n} joint positions, got {pts.shape}")
    W = len(pts)
    if ratios.shape != (W,) or acc.shape != (W, n):
        raise MotionError(INVALID_TRAJECTORY_MESSAGE, f"options for {W} waypoints needed: speed ratios {ratios.shape}, "
                          f"accelerations {acc.shape}")
    for name, x in (("joint_positions", pts), ("max_joint_speed_ratio", ratios), ("max_joint_accel", acc)):
        bad = np.argwhere(~np.isfinite(x))
        if len(bad):
            raise MotionError(INVALID_TRAJECTORY_MESSAGE, f"waypoint {bad[0][0]} {name} is not finite")
    bad = np.argwhere((ratios <= 0.0) | (ratios > 1.0))
    if len(bad):
        raise MotionError(INVALID_TRAJECTORY_MESSAGE, f"waypoint {bad[0][0]} max_joint_speed_ratio "
                          f"{ratios[bad[0][0]]} outside (0, 1]")
    ratios = np.maximum(ratios, MIN_RATIO)
    bad = np.argwhere(acc < MIN_ACCEL)
    if len(bad):
        k, j = bad[0]
        raise MotionError(INVALID_TRAJECTORY_MESSAGE, f"waypoint {k} max_joint_accel[{j}] = {acc[k, j]} must be "
                          f">= {MIN_ACCEL}")
    if max_knots < 2 * W + 1:
        raise MotionError(FAILED_TO_PARAMETERIZE, f"a knot budget of {max_knots} cannot hold {W} segments")
    out = np.argwhere((pts < lower) | (pts > upper))
    if len(out):
        k, j = out[0]
        raise MotionError(INVALID_TRAJECTORY_MESSAGE, f"waypoint {k} joint {j} at {pts[k, j]:.4f} rad is outside "
                          f"its range [{lower[j]:.4f}, {upper[j]:.4f}]")
    start = clip_start(start, lower, upper)

    # distinct points; each requested point maps to the distinct point it coincides with
    allp = np.vstack((start, pts))
    seg_v = ratios[:, None] * vmax[None, :] * LIMIT_MARGIN
    seg_a = np.minimum(acc, amax[None, :]) * LIMIT_MARGIN
    keep, owner, vrows, arows = [0], [0], [], []
    for k in range(1, W + 1):
        if np.max(np.abs(allp[k] - allp[keep[-1]])) < SAME_POINT:
            if vrows:  # a repeated waypoint's options also bind the segment into it; the later point wins
                vrows[-1] = np.minimum(vrows[-1], seg_v[k - 1])
                arows[-1] = np.minimum(arows[-1], seg_a[k - 1])
                keep[-1] = k
        else:
            keep.append(k)
            vrows.append(seg_v[k - 1])
            arows.append(seg_a[k - 1])
        owner.append(len(keep) - 1)
    if len(keep) == 1 and np.max(np.abs(allp[W] - start)) > 1e-9:  # every target within tolerance of the start:
        keep.append(W)  # still end exactly on the last one, by a short straight move
        vrows.append(seg_v.min(axis=0))
        arows.append(seg_a.min(axis=0))
        owner[W] = 1
    P = allp[keep]
    if len(P) == 1:  # nothing to move
        return JointPlan.at_rest(P[0], W)
    vseg, aseg = np.array(vrows), np.array(arows)

    chord = np.linalg.norm(np.diff(P, axis=0), axis=1)
    s_knots = np.concatenate(([0.0], np.cumsum(chord)))
    smooth = True
    if len(P) > 2:
        if len(P) > max_knots // 4:
            raise MotionError(FAILED_TO_PARAMETERIZE, f"{len(P)} distinct waypoints exceed what {max_knots} knots hold")
        path = toppra.SplineInterpolator(s_knots, P)
        dense = path(np.linspace(0.0, s_knots[-1], 40 * len(P)))
        smooth = bool(((dense >= lower - 1e-9) & (dense <= upper + 1e-9)).all())
    else:
        path = _Line(P[0], P[1])
    if smooth:
        if len(P) == 2:
            grid, sd = _line_profile(chord[0], path.d, vseg[0], aseg[0])
        else:
            grid, sd = _spline_profile(path, s_knots, vseg, aseg, max_knots // 2 - len(P))
        t_grid = _grid_times(grid, sd)
        dt = max(sample_dt, t_grid[-1] / (max_knots - len(grid) - 1))
        t, q, v, a, k = _knots(path, grid, sd, t_grid, dt, s_knots, vseg, aseg)
        times = np.interp(s_knots, grid, t_grid) * k
    else:  # stop at every waypoint: straight segments, each rest to rest
        segs = []
        for i in range(len(P) - 1):
            line = _Line(P[i], P[i + 1])
            grid, sd = _line_profile(chord[i], line.d, vseg[i], aseg[i])
            segs.append((line, grid, sd, _grid_times(grid, sd)))
        total = sum(x[3][-1] for x in segs)
        dt = max(sample_dt, total / (max_knots - 1 - 6 * len(segs)))  # ≤ 4 grid + 2 rounding knots each
        parts, times = [], [0.0]
        for i, (line, grid, sd, t_grid) in enumerate(segs):
            t, q, v, a, _ = _knots(line, grid, sd, t_grid, dt, grid[[0, -1]], vseg[i:i + 1], aseg[i:i + 1])
            t = t + times[-1]
            parts.append((t, q, v, a) if i == 0 else (t[1:], q[1:], v[1:], a[1:]))
            times.append(float(t[-1]))
        t, q, v, a = (np.concatenate([p[i] for p in parts]) for i in range(4))
        times = np.array(times)
    np.clip(q, lower, upper, out=q)
    q[-1] = P[-1]
    if len(t) > max_knots:
        raise MotionError(FAILED_TO_PARAMETERIZE, f"the trajectory needs more than {max_knots} knots")
    return JointPlan(t, q, v, a, times[np.array(owner)], not smooth)


class _Line:
    """Straight joint-space path q(s) = A + (s / L)(B − A), L = |B − A| (toppra's path call signature)."""

    def __init__(self, A: np.ndarray, B: np.ndarray):
        self.A, self.delta = A, B - A
        self.length = float(np.linalg.norm(self.delta))
        self.d = self.delta / self.length

    def __call__(self, s, order: int = 0):
        s = np.asarray(s, float)
        if order == 0:
            return self.A + (s / self.length)[:, None] * self.delta
        return np.broadcast_to(self.d if order == 1 else 0.0 * self.d, (len(s), len(self.d))).copy()


def _line_profile(length: float, d: np.ndarray, vmax: np.ndarray, amax: np.ndarray):
    """Time-optimal rest-to-rest profile along a straight line (a trapezoid, or a triangle when the
    line is too short to reach the cruise speed), as grid points and path speeds."""
    with np.errstate(divide="ignore"):
        sd_max = float(np.min(vmax / np.abs(d)))
        sdd_max = float(np.min(amax / np.abs(d)))
    ramp = sd_max * sd_max / (2.0 * sdd_max)
    if 2.0 * ramp >= length:  # triangle
        peak = np.sqrt(sdd_max * length)
        return np.array([0.0, 0.5 * length, length]), np.array([0.0, peak, 0.0])
    return np.array([0.0, ramp, length - ramp, length]), np.array([0.0, sd_max, sd_max, 0.0])


def _spline_profile(path, s_knots, vseg, aseg, max_grid):
    """TOPP-RA on a grid along the spline; grid points and the time-optimal path speeds."""
    m = min(max(MIN_GRID, GRID_PER_SEGMENT * (len(s_knots) - 1)), max_grid)
    even = np.linspace(0.0, s_knots[-1], m + 1)
    j = np.clip(np.searchsorted(s_knots, even), 1, len(s_knots) - 1)
    near = np.minimum(np.abs(even - s_knots[j]), np.abs(even - s_knots[j - 1])) < 1e-6 * s_knots[-1]
    grid = np.union1d(even[~near], s_knots)  # no grid interval shorter than the tolerance
    inst = toppra.algorithm.TOPPRA([_SegmentVelocity(s_knots, vseg), _SegmentAcceleration(s_knots, aseg)], path,
                                   gridpoints=grid, solver_wrapper="seidel")
    _, sd, _ = inst.compute_parameterization(0.0, 0.0)
    if sd is None or not np.isfinite(sd).all():
        raise MotionError(FAILED_TO_PARAMETERIZE, "no time parameterisation satisfies the joint limits "
                          f"({inst.problem_data.return_code})")
    return grid, sd


def _grid_times(grid, sd):
    """Time at each grid point of a profile with constant path acceleration between grid points."""
    dt_grid = 2.0 * np.diff(grid) / np.maximum(sd[:-1] + sd[1:], 1e-12)
    t_grid = np.concatenate(([0.0], np.cumsum(dt_grid)))
    if not np.isfinite(t_grid[-1]) or t_grid[-1] <= 0.0:
        raise MotionError(FAILED_TO_PARAMETERIZE, f"time parameterisation gave duration {t_grid[-1]}")
    return t_grid


def spaced(t: np.ndarray, gap: float) -> np.ndarray:
    """The increasing times ``t`` thinned so that consecutive ones are at least ``gap`` apart; the first
    and the last are kept."""
    keep = [0]
    for i in range(1, len(t) - 1):
        if t[i] - t[keep[-1]] >= gap and t[-1] - t[i] >= gap:
            keep.append(i)
    keep.append(len(t) - 1)
    return t[keep]


def _knots(path, grid, sd, t_grid, dt, s_knots, vseg, aseg):
    """Knots every ``dt`` and at every grid point (where the path acceleration switches), so the cubic
    Hermite between knots (``JointPlan.order``) follows the profile; then, if the sampled speeds or the
    cubic's accelerations still exceed a segment's limits (TOPP-RA bounds them at grid points only),
    time is stretched by the factor that brings them back. Returns t, q, v, a and that factor."""
    ds = np.diff(grid)
    T = float(t_grid[-1])
    u = (sd[1:] ** 2 - sd[:-1] ** 2) / (2.0 * ds)  # path acceleration on each interval
    even = np.linspace(0.0, T, int(np.ceil(T / dt - 1e-9)) + 1)
    tg = spaced(t_grid, MIN_KNOT_GAP)  # switch points closer than the gap: the first of them is kept
    j = np.clip(np.searchsorted(tg, even), 1, len(tg) - 1)
    near = np.minimum(np.abs(even - tg[j]), np.abs(even - tg[j - 1])) < MIN_KNOT_GAP
    t = np.union1d(even[~near], tg)
    i = np.clip(np.searchsorted(t_grid, t, side="right") - 1, 0, len(ds) - 1)
    tau = t - t_grid[i]
    s = np.clip(grid[i] + sd[i] * tau + 0.5 * u[i] * tau * tau, 0.0, grid[-1])
    sdot = np.maximum(sd[i] + u[i] * tau, 0.0)
    p1 = path(s, 1)
    q = path(s)
    v = p1 * sdot[:, None]
    a = path(s, 2) * (sdot * sdot)[:, None] + p1 * u[i][:, None]
    v[0] = v[-1] = 0.0
    # the limits without the planning margin, per knot and per interval (stricter end)
    vlim = _per_grid(s_knots, vseg, s) / LIMIT_MARGIN
    alim = _per_grid(s_knots, aseg, s) / LIMIT_MARGIN
    peak = cubic_peak_acceleration(t, q, v)
    k = max(1.0, float(np.max(np.abs(v) / vlim)),
            float(np.sqrt(np.max(peak / np.minimum(alim[:-1], alim[1:])))))
    if k > 1.0:
        t, v, a = t * k, v / k, a / (k * k)
    return t, q, v, a, k
