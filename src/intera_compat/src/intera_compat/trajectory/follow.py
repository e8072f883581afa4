"""FollowJointTrajectory goals for the robot-side joint trajectory action server (no ROS).

``prepare`` turns a goal (plain data) into a ``FollowPlan``: the trajectory in the goal's joint
order with velocities filled in where the goal leaves them out (shape-preserving: never beyond the points), the tolerances
in force per joint (Intera's per-mode defaults, contract §2.7, overridden by the goal's non-zero
values) and how the loop tracks it. ``GoalError`` carries the control_msgs error code and a
message naming the field. ``FollowMonitor`` decides, from the loop's feedback and the measured
state, whether the path tolerance holds while the trajectory runs and when the goal is met after
it ends.

Modes (the SDK server's ``-m``) are tracking laws of the loop, all on its speed-scaled time base:
``position_w_id`` the trajectory's positions, velocities and accelerations (inverse-dynamics
feed-forward); ``position`` positions and velocities, no acceleration feed-forward; ``velocity``
velocities v_des + kp·(q_des − q) integrated into the setpoint (the SDK's velocity mode is a
P-loop without the feed-forward term; ros_controllers' velocity JTC has it).

Tolerance values follow control_msgs/JointTolerance: > 0 a tolerance, 0 the default, < 0 none.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicHermiteSpline, PchipInterpolator

from ..data.codes import TRACK_FEEDFORWARD, TRACK_POSITION, TRACK_VELOCITY
from .spline import cubic_peak_acceleration

# control_msgs/FollowJointTrajectoryResult error codes
SUCCESSFUL, INVALID_GOAL, INVALID_JOINTS, OLD_HEADER_TIMESTAMP, PATH_TOLERANCE_VIOLATED, \
    GOAL_TOLERANCE_VIOLATED = 0, -1, -2, -3, -4, -5
ERROR_NAMES = {SUCCESSFUL: "SUCCESSFUL", INVALID_GOAL: "INVALID_GOAL", INVALID_JOINTS: "INVALID_JOINTS",
               OLD_HEADER_TIMESTAMP: "OLD_HEADER_TIMESTAMP", PATH_TOLERANCE_VIOLATED: "PATH_TOLERANCE_VIOLATED",
               GOAL_TOLERANCE_VIOLATED: "GOAL_TOLERANCE_VIOLATED"}

MODES = {"position_w_id": TRACK_FEEDFORWARD, "position": TRACK_POSITION, "velocity": TRACK_VELOCITY}


@dataclass(frozen=True)
class ModeDefaults:
    """Intera's dynamic-reconfigure defaults of the SDK server (intera_interface/cfg/*.cfg)."""
    goal_time: float  # s the goal may take beyond the trajectory's end to be met
    stopped_velocity: float  # rad/s every joint must be below at the goal (≤ 0: not checked)
    goal: float  # rad, per joint (≤ 0: not checked)
    path: float  # rad, per joint (< 0: not checked)
    kp: float  # velocity mode's position gain, 1/s


DEFAULTS = {
    "position_w_id": ModeDefaults(goal_time=0.1, stopped_velocity=0.20, goal=-0.2, path=0.2, kp=2.0),
    "position": ModeDefaults(goal_time=0.1, stopped_velocity=0.25, goal=-1.0, path=0.2, kp=2.0),
    "velocity": ModeDefaults(goal_time=0.0, stopped_velocity=-1.0, goal=-1.0, path=-1.0, kp=2.0),
}


def mode_parameters(mode: str, joints) -> dict:
    """The server's parameters (names as the SDK's dynamic reconfigure: goal_time,
    stopped_velocity_tolerance, <joint>_goal, <joint>_trajectory, <joint>_kp) with their defaults."""
    d = DEFAULTS[mode]
    p = {"goal_time": d.goal_time, "stopped_velocity_tolerance": d.stopped_velocity}
    for j in joints:
        p[f"{j}_goal"], p[f"{j}_trajectory"], p[f"{j}_kp"] = d.goal, d.path, d.kp
    return p


class GoalError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


@dataclass
class Point:
    time: float
    positions: list
    velocities: list
    accelerations: list


@dataclass
class Tolerance:
    name: str
    position: float
    velocity: float


@dataclass
class FollowPlan:
    names: list  # the goal's joints, in its order
    cols: np.ndarray  # their indices among the limb's joints
    t: np.ndarray  # (k,) s from the start
    q: np.ndarray  # (k, m)
    v: np.ndarray
    a: np.ndarray
    path_tol: np.ndarray  # (m,) rad, inf = not checked
    path_vel_tol: np.ndarray  # (m,) rad/s
    goal_tol: np.ndarray
    goal_vel_tol: np.ndarray
    stopped_velocity: float  # rad/s, inf = not checked
    goal_time: float  # s
    tracking: int
    kp: np.ndarray  # (m,) velocity tracking gain
    goal_q: np.ndarray  # (m,) the goal's own last point (q[-1] may be the arm's position for a lone point at t = 0)

    @property
    def duration(self) -> float:
        return float(self.t[-1])


def _tolerances(names, given, default, what: str, positive_off: bool):
    """Per-joint (position, velocity) tolerances; ``default`` per joint; a goal's 0 keeps it."""
    pos = np.array(default, float)
    vel = np.full(len(names), np.inf)
    index = {n: i for i, n in enumerate(names)}
    for k, tol in enumerate(given):
        i = index.get(tol.name)
        if i is None:
            raise GoalError(INVALID_JOINTS, f"{what}[{k}].name '{tol.name}' is not a joint of the trajectory")
        for arr, value, fld in ((pos, tol.position, "position"), (vel, tol.velocity, "velocity")):
            if not math.isfinite(value):
                raise GoalError(INVALID_GOAL, f"{what}[{k}].{fld} is {value}")
            if value != 0.0:
                arr[i] = value
    off = (pos <= 0.0) if positive_off else (pos < 0.0)
    pos[off] = np.inf
    vel[vel < 0.0] = np.inf
    return pos, vel


# a positions-only recording (joint_recorder at 100 Hz) carries its sampling noise: a curve through
# every sample would need accelerations far beyond the arm's. Such a goal is played through fewer of
# its points (at least this far apart, the smallest spacing that fits the limits) as long as no given
# point is further than THIN_TOLERANCE from the played curve; otherwise it is refused as it stands.
THIN_SPACINGS = (0.02, 0.04, 0.08, 0.12, 0.16, 0.24, 0.32)  # s
THIN_TOLERANCE = 0.01  # rad


def _pchip_velocities(t, q):
    v = PchipInterpolator(t, q, axis=0).derivative()(t)
    v[[0, -1]] = 0.0
    return v


def _thinned(t, q, amax):
    """(t, q, v) through a subset of the points whose cubic Hermite curve keeps within ``amax`` and
    within THIN_TOLERANCE of every given point, else None."""
    for gap in THIN_SPACINGS:
        keep = [0]
        for i in range(1, len(t) - 1):
            if t[i] - t[keep[-1]] >= gap and t[-1] - t[i] >= 0.5 * gap:
                keep.append(i)
        keep.append(len(t) - 1)
        if len(keep) == len(t):
            continue
        tk, qk = t[keep], q[keep]
        vk = _pchip_velocities(tk, qk)
        if np.abs(CubicHermiteSpline(tk, qk, vk, axis=0)(t) - q).max() > THIN_TOLERANCE:
            return None
        if (cubic_peak_acceleration(tk, qk, vk) <= amax).all():
            return tk, qk, vk
    return None


def fill_derivatives(t, q, v, a, amax=None):
    """Velocities where the goal has none: positions only → each knot's velocity from its neighbours by the
    shape-preserving (PCHIP) rule — zero where the path turns or holds, so the cubic Hermite segments between the
    points never swing beyond them (a spline fitted through all the points at once overshoots by up to the whole
    move when the points are unevenly timed) — at rest at both ends; accelerations stay absent (the loop
    interpolates cubic Hermite). Dense noisy positions beyond ``amax`` (the goal's joints) are thinned (above).
    Returns (t, q, v, a); t and q are the given arrays unless thinned, a may be None."""
    if v is not None:
        return t, q, v, a
    if len(t) == 1:
        return t, q, np.zeros_like(q), None
    v = _pchip_velocities(t, q)
    if amax is not None and not (cubic_peak_acceleration(t, q, v) <= amax).all():
        thin = _thinned(t, q, np.asarray(amax, float))
        if thin is not None:
            return (*thin, None)
    return t, q, v, None


HOLD_SAME = 1e-6  # rad: a first segment whose second point is this near its first (every joint) holds the arm
HOLD_LEFT = 0.1  # s of a hold never taken off it
HOLD_SPEED = 0.1  # rad/s: a shortened hold brings the arm to its second point at this average speed at most ...
HOLD_ACCEL = 1.0  # rad/s²: ... and with about this acceleration at most (a cubic from rest to rest: 6 d / h²)


def first_hold(points, start) -> float:
    """How long a goal holds its first point before it moves, of which a wait for the arm to rest may be taken:
    a first point at t = 0 that the second repeats, no velocity or acceleration given at either — the SDK's "command
    the current position first" (joint_trajectory_client.py: 1 s) — holds until the second; less what it needs to
    bring the arm from ``start`` (where it is, the goal's joint order: the first point is taken as there) to the
    second point gently (``HOLD_SPEED``, ``HOLD_ACCEL``), and never below ``HOLD_LEFT``. 0 for any other goal (its
    first segment moves on the client's timing), or where ``start`` is not known. ``points``: the goal's."""
    if len(points) < 2 or points[0].time != 0.0 or len(points[0].positions) != len(points[1].positions):
        return 0.0
    a, b = np.asarray(points[0].positions, float), np.asarray(points[1].positions, float)
    if a.shape != np.shape(start) or not np.isfinite(start).all() or np.abs(a - b).max(initial=0.0) > HOLD_SAME:
        return 0.0
    if any(np.any(f) for p in points[:2] for f in (p.velocities, p.accelerations)):
        return 0.0
    d = float(np.abs(b - start).max(initial=0.0))
    return max(points[1].time - max(HOLD_LEFT, d / HOLD_SPEED, math.sqrt(6.0 * d / HOLD_ACCEL)), 0.0)


def on_schedule(points, start, stamp: float, waited: float, now: float) -> tuple[list, float]:
    """A goal's ``points`` (``Point``) and start time (``stamp``; 0: on arrival) for a start ``now`` (robot time), after
    a wait of ``waited`` s for the arm to rest: as much of its lateness (unstamped: the wait; else ``now`` past its
    start time, its time in transit included) as its first hold can take (``first_hold`` from ``start``) comes off
    that hold, so that the points after it keep the client's times — as the SDK's server, which samples a goal at
    ``now - stamp``, keeps them (the SDK's scripts wait for their results on those times, joint_trajectory_client.py
    for exactly the trajectory's duration). The start time returned moves with the rest of the wait (a goal stamped
    "now" is not old for having waited); what is left late beyond that (in transit) is the caller's to tell."""
    hold = first_hold(points, start)
    if stamp <= 0.0:
        return _held(points, min(waited, hold)), 0.0
    late = max(0.0, now - stamp)
    held = min(late, hold)
    return _held(points, held), stamp + held + min(waited, late - held)


def _held(points, held: float) -> list:
    """``points`` with ``held`` s taken off the first segment (the later points that much earlier)."""
    return [p if k == 0 or held == 0.0 else Point(p.time - held, p.positions, p.velocities, p.accelerations)
            for k, p in enumerate(points)]


def prepare(names, points, limb_joints, current, mode: str, params: dict, path_tolerance=(), goal_tolerance=(),
            goal_time_tolerance: float = 0.0, accel_limits=None) -> FollowPlan:
    """Validate a goal and build its plan; ``current`` are the limb's measured positions and ``accel_limits``
    its joints' acceleration limits (limb order; for thinning dense positions-only goals)."""
    names = list(names)
    if not names:
        raise GoalError(INVALID_JOINTS, "trajectory.joint_names is empty")
    index = {j: i for i, j in enumerate(limb_joints)}
    cols = []
    for k, n in enumerate(names):
        if n not in index:
            raise GoalError(INVALID_JOINTS, f"trajectory.joint_names[{k}] '{n}' is not a joint of this limb "
                                            f"({', '.join(limb_joints)})")
        if index[n] in cols:
            raise GoalError(INVALID_JOINTS, f"trajectory.joint_names[{k}] '{n}' appears twice")
        cols.append(index[n])
    if not points:
        raise GoalError(INVALID_GOAL, "trajectory.points is empty")
    m, k = len(names), len(points)
    arrays = {}
    for fld in ("positions", "velocities", "accelerations"):
        lens = [len(getattr(p, fld)) for p in points]
        if fld != "positions" and not any(lens):
            arrays[fld] = None
            continue
        for i, n in enumerate(lens):
            if n != m:
                raise GoalError(INVALID_GOAL, f"trajectory.points[{i}].{fld} has {n} values for {m} joint_names"
                                + ("" if fld == "positions" else f" (give {fld} for every point or none)"))
        arr = np.array([getattr(p, fld) for p in points], float)
        bad = np.argwhere(~np.isfinite(arr))
        if len(bad):
            i, j = bad[0]
            raise GoalError(INVALID_GOAL, f"trajectory.points[{i}].{fld}[{j}] ({names[j]}) is {arr[i, j]}")
        arrays[fld] = arr
    t = np.array([p.time for p in points], float)
    if not np.isfinite(t).all() or t[0] < 0.0 or np.any(np.diff(t) <= 0.0):
        bad = int(np.argmax(~np.isfinite(t))) if not np.isfinite(t).all() else \
            0 if t[0] < 0.0 else int(np.argmax(np.diff(t) <= 0.0)) + 1
        raise GoalError(INVALID_GOAL, f"trajectory.points[{bad}].time_from_start = {t[bad]:.6g} s: times must be "
                                      f">= 0 and strictly increasing")
    if arrays["accelerations"] is not None and arrays["velocities"] is None:
        raise GoalError(INVALID_GOAL, "trajectory.points have accelerations but no velocities")
    if not math.isfinite(goal_time_tolerance) or goal_time_tolerance < 0.0:
        raise GoalError(INVALID_GOAL, f"goal_time_tolerance is {goal_time_tolerance} s")
    q = arrays["positions"].copy()
    goal_q = arrays["positions"][-1].copy()
    d = params
    path_pos, path_vel = _tolerances(names, path_tolerance, [d[f"{n}_trajectory"] for n in names],
                                     "path_tolerance", positive_off=False)
    goal_pos, goal_vel = _tolerances(names, goal_tolerance, [d[f"{n}_goal"] for n in names], "goal_tolerance",
                                     positive_off=True)
    cur = np.asarray(current, float)[cols]
    dev = np.abs(q[0] - cur)
    # the first point must be near the arm (SDK: within |path tolerance| of each joint, checked even when
    # the path tolerance is off); where the first point comes later than t = 0 the arm is brought there
    # along the trajectory, but a far first point is still refused, as the SDK's server does
    start_tol = np.abs(np.array([d[f"{n}_trajectory"] for n in names], float))
    for tol in path_tolerance:
        if tol.name in names and tol.position != 0.0:
            start_tol[names.index(tol.name)] = abs(tol.position)
    j = int(np.argmax(dev - start_tol))
    if dev[j] > start_tol[j]:
        raise GoalError(INVALID_GOAL, f"trajectory.points[0].positions[{j}] ({names[j]}) = {q[0, j]:.4f} rad is "
                                      f"{dev[j]:.4f} rad from the arm's {cur[j]:.4f} rad (tolerance {start_tol[j]:.4f})")
    if t[0] == 0.0:  # a first point at t = 0 is where the arm is (its deviation was checked just above)
        q[0] = cur
    v, a = arrays["velocities"], arrays["accelerations"]
    if v is not None:  # the arm ends at rest (SDK: the last point's velocities/accelerations are forced to 0)
        v = v.copy()
        v[-1] = 0.0
    if a is not None:
        a = a.copy()
        a[-1] = 0.0
    t, q, v, a = fill_derivatives(t, q, v, a, None if accel_limits is None else np.asarray(accel_limits, float)[cols])
    stopped = float(d["stopped_velocity_tolerance"])
    return FollowPlan(names=names, cols=np.array(cols), t=t, q=q, v=v, a=a, path_tol=path_pos, path_vel_tol=path_vel,
                      goal_tol=goal_pos, goal_vel_tol=goal_vel,
                      stopped_velocity=stopped if stopped > 0.0 else np.inf,
                      goal_time=goal_time_tolerance if goal_time_tolerance > 0.0 else float(d["goal_time"]),
                      tracking=MODES[mode], kp=np.array([d[f"{n}_kp"] for n in names], float), goal_q=goal_q)


class FollowMonitor:
    """Path and goal checks of one plan (arrays in the plan's joint order)."""

    def __init__(self, plan: FollowPlan):
        self.plan = plan
        self.path_checked = bool(np.isfinite(plan.path_tol).any() or np.isfinite(plan.path_vel_tol).any())

    def path_violation(self, desired_q, actual_q, desired_v=None, actual_v=None) -> str | None:
        """A message naming the joint whose path error reached its tolerance, else None."""
        p = self.plan
        err = np.abs(np.asarray(desired_q) - np.asarray(actual_q))
        over = err >= p.path_tol
        if over.any():
            j = int(np.argmax(over))
            return f"path error of {p.names[j]} is {err[j]:.4f} rad (tolerance {p.path_tol[j]:.4f} rad)"
        if desired_v is not None and actual_v is not None:
            verr = np.abs(np.asarray(desired_v) - np.asarray(actual_v))
            over = verr >= p.path_vel_tol
            if over.any():
                j = int(np.argmax(over))
                return f"path velocity error of {p.names[j]} is {verr[j]:.4f} rad/s (tolerance {p.path_vel_tol[j]:.4f})"
        return None

    def goal_violation(self, actual_q, actual_v) -> str | None:
        """None when the goal is met: every joint within its goal tolerance of the last point and
        moving slower than the stopped-velocity tolerance; else what is not met."""
        p = self.plan
        err = np.abs(p.goal_q - np.asarray(actual_q))
        over = err > p.goal_tol
        if over.any():
            j = int(np.argmax(over))
            return f"goal error of {p.names[j]} is {err[j]:.4f} rad (tolerance {p.goal_tol[j]:.4f} rad)"
        speed = np.abs(np.asarray(actual_v))
        over = (speed > p.stopped_velocity) | (speed > p.goal_vel_tol)
        if over.any():
            j = int(np.argmax(over))
            lim = min(p.stopped_velocity, p.goal_vel_tol[j])
            return f"{p.names[j]} still moves at {speed[j]:.4f} rad/s at the goal (tolerance {lim:.4f} rad/s)"
        return None
