"""A motion request (intera_motion_msgs/Trajectory) as plain data, checked and completed with defaults.

The node copies the message's fields into ``TrajectoryRequest`` (no ROS here); ``validate`` refuses
anything inconsistent with INVALID_TRAJECTORY_MESSAGE and a message naming the field, and returns a
``Motion``: joint angles in the limb's order, unit quaternions, and every option resolved (zeros and
empty arrays mean the Intera defaults, as the SDK never sets most of them).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from ..kinematics.pose import BASE_FRAMES, NORM_WARN, in_base, se3
from .errors import ENDPOINT_DOES_NOT_EXIST, INVALID_TRAJECTORY_MESSAGE, MotionError

JOINT, CARTESIAN = "JOINT", "CARTESIAN"
# Intera defaults (intera_motion_interface MotionWaypointOptions) for options left at zero / empty
DEFAULT_SPEED_RATIO = 0.7
SAWYER_JOINTS = 7  # the length of the SDK's per-joint presets
DEFAULT_LINEAR_SPEED, DEFAULT_LINEAR_ACCEL = 0.6, 0.6  # m/s, m/s²
DEFAULT_ROTATIONAL_SPEED, DEFAULT_ROTATIONAL_ACCEL = 1.57, 1.57  # rad/s, rad/s²
MAX_CORNER_DISTANCE = 0.5  # m
# TrackingOptions defaults
DEFAULT_GOAL_TOLERANCE = 0.0087266  # rad (0.5°) per joint
DEFAULT_SETTLING_TIME = 1.0  # s to settle within the goal tolerance after the planned end
MAX_SETTLING_TIME = 10.0
MIN_PATH_STEP = 0.001  # s: the interpolated path is never sampled finer than the loop's period


@dataclass
class WaypointRequest:
    joint_positions: list = field(default_factory=list)
    active_endpoint: str = ""
    frame_id: str = ""
    position: tuple = (0.0, 0.0, 0.0)
    orientation: tuple = (0.0, 0.0, 0.0, 0.0)  # x, y, z, w as in geometry_msgs
    label: str = ""
    max_joint_speed_ratio: float = 0.0
    joint_tolerances: list = field(default_factory=list)
    max_joint_accel: list = field(default_factory=list)
    max_linear_speed: float = 0.0
    max_linear_accel: float = 0.0
    max_rotational_speed: float = 0.0
    max_rotational_accel: float = 0.0
    corner_distance: float = 0.0


@dataclass
class TrajectoryRequest:
    label: str = ""
    joint_names: list = field(default_factory=list)
    waypoints: list = field(default_factory=list)
    interpolation_type: str = ""
    interaction_control: bool = False
    use_min_time_rate: bool = False
    min_time_rate: float = 0.0
    use_max_time_rate: bool = False
    max_time_rate: float = 0.0
    goal_joint_tolerance: list = field(default_factory=list)
    use_settling_time_at_goal: bool = False
    settling_time_at_goal: float = 0.0
    path_interpolation_step: float = 0.0


@dataclass
class Waypoint:
    """One checked waypoint; its options apply to the segment that ends at it."""
    q: np.ndarray | None  # (n_arm,) limb order; None for a CARTESIAN waypoint without joint angles
    pose: pin.SE3 | None  # tip goal in the base frame (CARTESIAN)
    label: str
    speed_ratio: float
    accel: np.ndarray  # (n_arm,) rad/s², within the joint limits
    tolerance: np.ndarray  # (n_arm,) rad
    linear_speed: float
    linear_accel: float
    rotational_speed: float
    rotational_accel: float
    corner_distance: float


@dataclass
class Motion:
    label: str
    interpolation: str
    tip: str
    waypoints: list[Waypoint]
    min_time_rate: float  # the loop may slow the trajectory's time down to this when tracking falls behind
    max_time_rate: float  # and never runs it faster than this (≤ 1)
    goal_tolerance: np.ndarray  # (n_arm,) rad
    settling_time: float  # s
    path_interpolation_step: float  # s between points of the returned interpolated path (0: none)
    warnings: list[str] = field(default_factory=list)


def _invalid(message: str) -> MotionError:
    return MotionError(INVALID_TRAJECTORY_MESSAGE, message)


def _finite(name: str, values) -> np.ndarray:
    a = np.asarray(values, float)
    bad = np.flatnonzero(~np.isfinite(a.ravel()))
    if len(bad):
        raise _invalid(f"{name}[{bad[0]}] is {a.ravel()[bad[0]]}")
    return a


def _scalar(name: str, x: float, default: float, lo: float = 0.0, hi: float = np.inf) -> float:
    """0 means ``default``; negative or non-finite is refused; above ``hi`` is clamped by the caller."""
    if not np.isfinite(x):
        raise _invalid(f"{name} is {x}")
    if x < lo:
        raise _invalid(f"{name} is {x:g}: must be >= {lo:g}")
    return default if x == 0.0 else min(x, hi)


def _per_joint(name: str, values, n: int, default: np.ndarray, cap: np.ndarray | None = None) -> np.ndarray:
    """[] → ``default``; one value → every joint; n values (0 → that joint's default). On an arm of fewer than
    7 joints, 7 values are a Sawyer's (the SDK's presets, e.g. MotionWaypointOptions' accelerations, are
    always 7 long): the first n apply."""
    a = _finite(name, values)
    if a.size == 0:
        return default.copy()
    if a.size == 1:
        a = np.full(n, float(a[0]))
    if a.size == SAWYER_JOINTS > n:
        a = a[:n]
    if a.size != n:
        raise _invalid(f"{name} has {a.size} values: give none, one, or one per joint ({n})")
    if np.any(a < 0.0):
        i = int(np.flatnonzero(a < 0.0)[0])
        raise _invalid(f"{name}[{i}] is {a[i]:g}: must be >= 0")
    a = np.where(a == 0.0, default, a)
    return a if cap is None else np.minimum(a, cap)


def validate(req: TrajectoryRequest, joint_names: list[str], accel_limits: np.ndarray, tips: list[str],
             has_frame, frame_pose=None) -> Motion:
    """Check ``req`` for the limb ``joint_names`` (its order is the result's order).

    ``has_frame(name)`` tells whether the model has a frame; ``frame_pose(name)`` gives its pose
    in the base frame now (for waypoint poses expressed in a robot frame), None: base only.
    """
    n = len(joint_names)
    warnings: list[str] = []
    if not req.waypoints:
        raise _invalid("waypoints is empty")
    names = list(req.joint_names) or list(joint_names)
    unknown = [j for j in names if j not in joint_names]
    if unknown:
        raise _invalid(f"joint_names has {unknown[0]!r}, not a joint of this limb ({', '.join(joint_names)})")
    if len(set(names)) != len(names):
        raise _invalid("joint_names names a joint twice")
    if len(names) != n:
        missing = [j for j in joint_names if j not in names]
        raise _invalid(f"joint_names must name every joint of the limb; missing {', '.join(missing)}")
    order = np.array([names.index(j) for j in joint_names])  # limb index → message index
    kind = req.interpolation_type or JOINT  # the SDK's hand-built TrajectoryOptions leave it empty
    if kind not in (JOINT, CARTESIAN):
        raise _invalid(f"trajectory_options.interpolation_type is {kind!r}: JOINT or CARTESIAN "
                       "(one type per trajectory)")
    endpoints = {w.active_endpoint or tips[0] for w in req.waypoints}
    if len(endpoints) > 1:
        raise _invalid(f"waypoints have different active_endpoints ({', '.join(sorted(endpoints))}): "
                       "one endpoint per trajectory")
    tip = endpoints.pop()
    if kind == CARTESIAN and not has_frame(tip):
        raise MotionError(ENDPOINT_DOES_NOT_EXIST, f"active_endpoint {tip!r} is not a frame of the robot model")
    out = []
    for k, w in enumerate(req.waypoints):
        f = f"waypoints[{k}]"
        q = None
        if len(w.joint_positions):
            jp = _finite(f"{f}.joint_positions", w.joint_positions)
            if jp.size != n:
                raise _invalid(f"{f}.joint_positions has {jp.size} values for {n} joint_names")
            q = jp[order]
        elif kind == JOINT:
            raise _invalid(f"{f}.joint_positions is empty: a JOINT trajectory needs joint angles at every "
                           "waypoint (pose-only waypoints need CARTESIAN)")
        pose = None
        if kind == CARTESIAN:
            try:
                pose, norm = se3(w.position, w.orientation, f"{f}.pose.pose")
                if frame_pose is not None:
                    pose = in_base(pose, w.frame_id, has_frame, frame_pose, f"{f}.pose")
                elif w.frame_id not in BASE_FRAMES:
                    raise ValueError(f"{f}.pose.header.frame_id {w.frame_id!r}: only the base frame here")
            except ValueError as e:
                raise _invalid(str(e)) from None
            if abs(norm - 1.0) > NORM_WARN:
                warnings.append(f"{f}.pose.pose.orientation normalised (its norm was {norm:.4g})")
        ratio = _scalar(f"{f}.options.max_joint_speed_ratio", w.max_joint_speed_ratio, DEFAULT_SPEED_RATIO)
        if w.max_joint_speed_ratio > 1.0:
            warnings.append(f"{f}.options.max_joint_speed_ratio {w.max_joint_speed_ratio:g} clamped to 1")
            ratio = 1.0
        accel = _per_joint(f"{f}.options.max_joint_accel", w.max_joint_accel, n, accel_limits, accel_limits)
        tol = _per_joint(f"{f}.options.joint_tolerances", w.joint_tolerances, n, np.full(n, DEFAULT_GOAL_TOLERANCE))
        corner = _scalar(f"{f}.options.corner_distance", w.corner_distance, 0.0, hi=MAX_CORNER_DISTANCE)
        if w.corner_distance > MAX_CORNER_DISTANCE:
            warnings.append(f"{f}.options.corner_distance {w.corner_distance:g} m clamped to {MAX_CORNER_DISTANCE}")
        out.append(Waypoint(
            q=q, pose=pose, label=w.label, speed_ratio=ratio, accel=accel, tolerance=tol,
            linear_speed=_scalar(f"{f}.options.max_linear_speed", w.max_linear_speed, DEFAULT_LINEAR_SPEED),
            linear_accel=_scalar(f"{f}.options.max_linear_accel", w.max_linear_accel, DEFAULT_LINEAR_ACCEL),
            rotational_speed=_scalar(f"{f}.options.max_rotational_speed", w.max_rotational_speed,
                                     DEFAULT_ROTATIONAL_SPEED),
            rotational_accel=_scalar(f"{f}.options.max_rotational_accel", w.max_rotational_accel,
                                     DEFAULT_ROTATIONAL_ACCEL),
            corner_distance=corner))
    t = "trajectory_options.tracking_options"
    min_rate = _scalar(f"{t}.min_time_rate", req.min_time_rate, 1.0, hi=1.0) if req.use_min_time_rate else 1.0
    max_rate = _scalar(f"{t}.max_time_rate", req.max_time_rate, 1.0, hi=1.0) if req.use_max_time_rate else 1.0
    if req.use_max_time_rate and req.max_time_rate > 1.0:
        warnings.append(f"{t}.max_time_rate {req.max_time_rate:g}: the trajectory never runs faster than planned (1)")
    if min_rate > max_rate:
        raise _invalid(f"{t}.min_time_rate {min_rate:g} > max_time_rate {max_rate:g}")
    goal_tol = _per_joint(f"{t}.goal_joint_tolerance", req.goal_joint_tolerance, n,
                          np.full(n, DEFAULT_GOAL_TOLERANCE))
    settle = DEFAULT_SETTLING_TIME
    if req.use_settling_time_at_goal:
        settle = _scalar(f"{t}.settling_time_at_goal", req.settling_time_at_goal, DEFAULT_SETTLING_TIME,
                         hi=MAX_SETTLING_TIME)
    step = _scalar("trajectory_options.path_interpolation_step", req.path_interpolation_step, 0.0)
    if 0.0 < step < MIN_PATH_STEP:
        warnings.append(f"trajectory_options.path_interpolation_step {step:g} s raised to {MIN_PATH_STEP:g} s")
        step = MIN_PATH_STEP
    return Motion(req.label, kind, tip, out, min_rate, max_rate, goal_tol, settle, step, warnings)
