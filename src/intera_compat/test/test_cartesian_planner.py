"""CARTESIAN interpolation of the motion controller (pure core): the tip on straight lines with
slerped orientation, blended corners, Cartesian speed limits, joint limits, errors with the right id.
Trajectories are judged the way the loop runs them: cubic Hermite between the knots."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from intera_compat.config import load_config
from intera_compat.kinematics import IKSolver
from intera_compat.model import RobotModel
from intera_compat.motion import errors
from intera_compat.motion.cartesian_planner import CartesianWaypoint, plan_cartesian
from intera_compat.motion.errors import MotionError
from intera_compat.trajectory.spline import KnotTrajectory, limit_violation

CFG = load_config()
NA = CFG.n_arm
LO, HI = CFG.limits.lower[:NA], CFG.limits.upper[:NA]
VMAX, AMAX = CFG.limits.velocity[:NA], CFG.limits.accel[:NA]
FAST = np.array([7.0, 5.0, 8.0, 8.0, 8.0, 8.0, 8.0])  # the SDK's default max_joint_accel
TIP = "right_hand"
RM = RobotModel(CFG)
IK = IKSolver(RM)
START = CFG.full_pose("neutral")
T0 = RM.fk(START, TIP)
P0, R0 = T0.translation.copy(), T0.rotation.copy()


def wp(offset=(0.0, 0.0, 0.0), rot=None, **options) -> CartesianWaypoint:
    """A waypoint ``offset`` metres from the start's tip position, orientation ``rot`` (the start's
    if None); options as the SDK sends them unless given."""
    options.setdefault("accel", FAST)
    options.setdefault("speed_ratio", 0.7)
    bias = options.pop("bias", None)
    R = R0 if rot is None else rot
    return CartesianWaypoint(pin.SE3(R, P0 + np.asarray(offset, float)), bias, **options)


def turned(axis, angle) -> np.ndarray:
    """The start orientation turned by ``angle`` about ``axis`` (tip frame)."""
    axis = np.asarray(axis, float)
    return R0 @ pin.exp3(angle * axis / np.linalg.norm(axis))


def plan(waypoints, **kw):
    return plan_cartesian(RM, IK, TIP, START, waypoints, LO, HI, VMAX, AMAX, **kw)


def run(p, dt=0.002):
    """What the loop runs: times, tip positions, rotations, linear and angular speeds every dt."""
    traj = KnotTrajectory(NA, len(p.t))
    traj.load(p.t, p.q, p.v, p.a, p.order)
    ts = np.append(np.arange(0.0, p.duration, dt), p.duration)
    q, v, a = np.zeros(NA), np.zeros(NA), np.zeros(NA)
    pos, rots, lin, ang = [], [], [], []
    for t in ts:
        traj.sample(t, q, v, a)
        full, vel = np.r_[q, START[NA:]], np.r_[v, np.zeros(len(START) - NA)]
        T = RM.fk(full, TIP)
        m = RM.frame_velocity(full, vel, TIP)
        pos.append(T.translation)
        rots.append(T.rotation)
        lin.append(np.linalg.norm(m.linear))
        ang.append(np.linalg.norm(m.angular))
    return ts, np.array(pos), np.array(rots), np.array(lin), np.array(ang)


def assert_loop_accepts(p, ratio=0.7, accel=FAST):
    """Knots start at the arm at rest, end at rest, stay in range and within the joint limits."""
    assert p.t[0] == 0.0 and np.all(np.diff(p.t) > 0) and p.order == 3
    assert np.allclose(p.q[0], START[:NA])
    assert np.all(p.v[0] == 0) and np.all(p.v[-1] == 0) and np.all(p.a[0] == 0) and np.all(p.a[-1] == 0)
    assert np.all(p.q >= LO) and np.all(p.q <= HI)
    assert limit_violation(p.t, p.q, p.v, p.a, p.order, ratio * VMAX, accel) is None
    assert p.point_times[0] == 0.0 and p.point_times[-1] == pytest.approx(p.duration)
    assert np.all(np.diff(p.point_times) >= 0)


def _segment_distance(pos, a, b):
    """Distance of each position from the segment a–b."""
    d = b - a
    f = np.clip((pos - a) @ d / (d @ d), 0.0, 1.0)
    return np.linalg.norm(pos - a - np.outer(f, d), axis=1)


def line_deviation(pos, a, b):
    d = (b - a) / np.linalg.norm(b - a)
    rel = pos - a
    return np.linalg.norm(rel - np.outer(rel @ d, d), axis=1)


def angle(Ra, Rb) -> float:
    return float(np.linalg.norm(pin.log3(Ra.T @ Rb)))


def test_straight_line_with_slerped_orientation_ends_on_the_goal_at_rest():
    offset = np.array([0.15, -0.2, 0.1])
    goal_R = turned([1.0, 2.0, -1.0], 0.5)
    p = plan([wp(offset, goal_R)])
    assert_loop_accepts(p)
    ts, pos, rots, lin, _ = run(p)
    goal = P0 + offset
    assert line_deviation(pos, P0, goal).max() <= 1e-3
    progress = (pos - P0) @ offset / (offset @ offset)
    assert progress.min() > -1e-6 and progress.max() < 1 + 1e-6  # never past either end
    w = pin.log3(R0.T @ goal_R)
    for f, R in zip(progress, rots):
        assert angle(R0 @ pin.exp3(f * w), R) <= 1e-3  # orientation progress = position progress
    end = RM.fk(np.r_[p.q[-1], START[NA:]], TIP)
    assert np.linalg.norm(end.translation - goal) <= 1e-4 and angle(end.rotation, goal_R) <= 1e-3
    assert lin[-1] < 1e-9 and lin.max() <= 0.6 * 1.01


def test_rotation_only_move_keeps_the_tip_in_place_and_its_rotational_limits():
    goal_R = turned([0.3, -1.0, 0.5], 1.0)
    p = plan([wp(rot=goal_R, max_rotational_speed=0.5, max_rotational_accel=1.0)])
    assert_loop_accepts(p)
    _, pos, rots, _, ang = run(p)
    assert np.linalg.norm(pos - P0, axis=1).max() <= 1e-3
    assert angle(rots[-1], goal_R) <= 1e-3
    assert 0.9 * 0.5 <= ang.max() <= 0.5 * 1.01
    assert p.duration == pytest.approx(1.0 / 0.5 + 0.5 / 1.0, rel=0.02)  # a trapezoid at the limits


def test_long_line_reaches_the_linear_speed_limit_in_near_minimum_time():
    v, acc, length = 0.3, 0.6, 0.5
    p = plan([wp([0.0, -length, 0.0], max_linear_speed=v, max_linear_accel=acc)])
    assert_loop_accepts(p)
    ts, pos, _, lin, _ = run(p)
    assert 0.9 * v <= lin.max() <= v * 1.01
    assert p.duration == pytest.approx(length / v + v / acc, rel=0.02)
    speed_change = np.abs(np.diff(lin)) / np.diff(ts)
    assert speed_change.max() <= acc * 1.1


CORNERS = [np.array([0.15, -0.25, 0.0]), np.array([0.1, -0.25, 0.35])]
END = np.array([0.1, 0.1, 0.35])


def corner_path(distance):
    return [wp(CORNERS[0], corner_distance=distance), wp(CORNERS[1], turned([0, 0, 1], 0.6), corner_distance=distance),
            wp(END)]


def test_blended_corners_pass_within_the_corner_distance_without_stopping():
    d = 0.05
    p = plan(corner_path(d))
    assert_loop_accepts(p)
    assert not p.stops_at_waypoints
    ts, pos, rots, lin, _ = run(p, 0.001)
    vel = np.gradient(pos, ts, axis=0)
    assert np.linalg.norm(np.gradient(vel, ts, axis=0), axis=1)[5:-5].max() <= 0.6 * 1.05  # around the arcs too
    spin = np.array([R @ pin.log3(R.T @ Rn) for R, Rn in zip(rots[:-1], rots[1:])]) / np.diff(ts)[:, None]
    assert (np.linalg.norm(np.diff(spin, axis=0), axis=1) / np.diff(ts)[1:])[5:-5].max() <= 1.57 * 1.05
    points = [P0] + [P0 + c for c in CORNERS] + [P0 + END]
    off_line = np.min([_segment_distance(pos, a, b) for a, b in zip(points[:-1], points[1:])], axis=0)
    away = np.min([np.linalg.norm(pos - c, axis=1) for c in points[1:-1]], axis=0) > d * np.sqrt(2)
    assert off_line[away].max() <= 1e-3  # straight lines outside the blends
    for k, c in enumerate(CORNERS, start=1):
        dist = np.linalg.norm(pos - (P0 + c), axis=1)
        assert 1e-3 < dist.min() <= d  # cuts the corner, within the corner distance
        near = np.abs(ts - p.point_times[k]) < 0.1
        assert lin[near].min() > 0.05  # m/s: moving through, not stopping
        assert ts[np.argmin(dist)] == pytest.approx(p.point_times[k], abs=0.002)
    stopping = plan(corner_path(0.0))
    assert_loop_accepts(stopping)
    assert stopping.stops_at_waypoints and p.duration < stopping.duration
    ts, pos, _, lin, _ = run(stopping, 0.001)
    for k, c in enumerate(CORNERS, start=1):
        i = np.argmin(np.abs(ts - stopping.point_times[k]))
        assert np.linalg.norm(pos[i] - (P0 + c)) <= 1e-4 and lin[i] < 1e-3


def test_collinear_waypoints_with_a_corner_distance_are_passed_at_speed_on_the_line():
    goal = np.array([0.0, -0.45, 0.0])
    p = plan([wp(goal / 2, corner_distance=0.05, max_linear_speed=0.3), wp(goal, max_linear_speed=0.3)])
    assert_loop_accepts(p)
    ts, pos, _, lin, _ = run(p)
    assert line_deviation(pos, P0, P0 + goal).max() <= 1e-3
    i = np.argmin(np.abs(ts - p.point_times[1]))
    assert lin[i] >= 0.9 * 0.3 and np.linalg.norm(pos[i] - (P0 + goal / 2)) <= 1e-3


def test_corner_distance_is_clamped_to_half_of_each_adjacent_segment():
    a, b = np.array([0.0, -0.1, 0.0]), np.array([0.15, -0.1, 0.0])
    p = plan([wp(a, corner_distance=0.5), wp(b)])
    assert_loop_accepts(p)
    _, pos, _, _, _ = run(p, 0.001)
    # the blend starts no earlier than the middle of the first segment and ends at the latest in the
    # middle of the second: the tip passes both midpoints, and the end
    for m in (a / 2, (a + b) / 2):
        assert np.linalg.norm(pos - (P0 + m), axis=1).min() <= 1e-3
    assert np.linalg.norm(pos[-1] - (P0 + b)) <= 1e-4


def test_each_segment_uses_the_options_of_the_waypoint_it_ends_at():
    first, second = np.array([0.0, -0.25, 0.0]), np.array([0.0, -0.45, 0.0])
    p = plan([wp(first, max_linear_speed=0.4), wp(second, max_linear_speed=0.1, speed_ratio=0.3, accel=FAST / 2)])
    assert_loop_accepts(p)
    ts, _, _, lin, _ = run(p)
    t1 = p.point_times[1]
    assert 0.9 * 0.4 <= lin[ts < t1].max() <= 0.4 * 1.01
    assert 0.9 * 0.1 <= lin[ts > t1].max() <= 0.1 * 1.01
    later = p.t > t1
    assert limit_violation(p.t[later], p.q[later], p.v[later], p.a[later], 3, 0.3 * VMAX, FAST / 2) is None


def test_a_bias_pulls_the_arm_toward_its_joint_positions_without_leaving_the_line():
    offset = np.array([0.0, -0.3, 0.1])
    plain = plan([wp(offset)])
    end = np.r_[plain.q[-1], START[NA:]]
    self_motion = np.linalg.svd(RM.jacobian(end, TIP)[:, :NA])[2][-1]  # joint motion that keeps the tip still
    bias = plain.q[-1] + 0.8 * self_motion / np.abs(self_motion).max()
    biased = plan([wp(offset, bias=bias)])
    assert_loop_accepts(biased)
    assert np.linalg.norm(biased.q[-1] - bias) < np.linalg.norm(plain.q[-1] - bias) - 0.1
    _, pos, _, _, _ = run(biased)
    assert line_deviation(pos, P0, P0 + offset).max() <= 1e-3
    assert np.linalg.norm(pos[-1] - (P0 + offset)) <= 1e-4


def test_the_current_pose_as_a_waypoint_is_skipped():
    goal = wp([0.1, -0.1, 0.05])
    p = plan([wp(), goal])
    direct = plan([goal])
    assert p.point_times[1] == 0.0 and p.duration == pytest.approx(direct.duration)
    assert np.allclose(p.q[-1], direct.q[-1])
    still = plan([wp(), wp()])
    assert still.duration == 0.0 and len(still.t) == 1 and np.allclose(still.q[0], START[:NA])


def test_unknown_endpoint_is_refused():
    with pytest.raises(MotionError) as e:
        plan_cartesian(RM, IK, "no_such_link", START, [wp([0.1, 0, 0])], LO, HI, VMAX, AMAX)
    assert e.value.error_id == errors.ENDPOINT_DOES_NOT_EXIST


def test_an_endpoint_the_arm_does_not_move_fails():
    with pytest.raises(MotionError) as e:
        plan_cartesian(RM, IK, "pedestal", START, [wp([0.1, 0, 0])], LO, HI, VMAX, AMAX)
    assert e.value.error_id == errors.CARTESIAN_INTERPOLATION_FAILED and "pedestal" in str(e.value)


def test_a_pose_out_of_reach_fails_naming_the_waypoint():
    with pytest.raises(MotionError) as e:
        plan([wp([0.1, 0.0, 0.0]), wp([2.0, 0.0, 0.0])])
    assert e.value.error_id == errors.CARTESIAN_INTERPOLATION_FAILED and "waypoint 1" in str(e.value)


@pytest.mark.parametrize("pose, words", [
    (pin.SE3(R0, P0 + np.array([0.1, np.nan, 0.0])), "not finite"),
    (pin.SE3(R0 * 1.2, P0 + np.array([0.1, 0.0, 0.0])), "not a rotation"),
])
def test_a_non_finite_or_non_rotation_pose_fails(pose, words):
    with pytest.raises(MotionError) as e:
        plan([wp([0.05, 0, 0]), CartesianWaypoint(pose, None, accel=FAST)])
    assert e.value.error_id == errors.CARTESIAN_INTERPOLATION_FAILED
    assert "waypoint 1" in str(e.value) and words in str(e.value)


def test_a_joint_limit_in_the_way_fails_naming_the_joint():
    with pytest.raises(MotionError) as e:
        plan([wp(rot=turned([0, 0, 1], 2.4))])  # the wrist roll would pass its +270° stop
    assert e.value.error_id == errors.CARTESIAN_INTERPOLATION_FAILED and "right_j6" in str(e.value)


@pytest.mark.parametrize("waypoints", [
    [wp([0.0, -0.3, 0.0], max_linear_speed=5.0, max_linear_accel=50.0)],  # far beyond what the joints can do
    [wp([0.0, -0.3, 0.0], speed_ratio=0.05)],  # 0.6 m/s with 5 % of the joint speeds
    [wp([0.27, 0.0, 0.0]), wp([0.27, 0.4, 0.0])],  # the second line passes the outstretched elbow
], ids=["huge Cartesian limits", "tiny speed ratio", "near a singularity"])
def test_cartesian_timing_beyond_the_joint_limits_fails(waypoints):
    with pytest.raises(MotionError) as e:
        plan(waypoints)
    assert e.value.error_id == errors.PLANNED_JOINT_ACCEL_LIMIT
    assert f"waypoint {len(waypoints) - 1}" in str(e.value) and "reduce the Cartesian" in str(e.value)


def test_a_knot_budget_too_small_fails_to_parameterize():
    with pytest.raises(MotionError) as e:
        plan([wp([0.0, -0.3, 0.0])], max_knots=30)
    assert e.value.error_id == errors.FAILED_TO_PARAMETERIZE


@pytest.mark.parametrize("field, value", [
    ("max_linear_speed", 0.0), ("max_rotational_accel", np.nan), ("corner_distance", -0.1),
    ("speed_ratio", 1.5), ("bias", np.zeros(3)), ("accel", np.full(NA, 0.01)),
])
def test_bad_options_are_refused(field, value):
    w = wp([0.1, 0.0, 0.0])
    setattr(w, field, value)
    with pytest.raises(MotionError) as e:
        plan([w])
    assert e.value.error_id == errors.INVALID_TRAJECTORY_MESSAGE and "waypoint 0" in str(e.value)


def test_random_requests_end_on_their_goal_within_the_limits_or_fail_with_a_cartesian_error():
    rng = np.random.default_rng(5)
    planned = 0
    for _ in range(12):
        waypoints = []
        for _ in range(int(rng.integers(1, 5))):
            rot = turned(rng.normal(size=3), rng.uniform(0.0, 1.0)) if rng.random() < 0.6 else None
            waypoints.append(wp(rng.uniform([-0.2, -0.35, -0.1], [0.2, 0.25, 0.35]), rot,
                                corner_distance=float(rng.choice([0.0, 0.02, 0.1])),
                                bias=rng.uniform(LO, HI) * 0.5 if rng.random() < 0.5 else None,
                                max_linear_speed=float(rng.uniform(0.05, 0.6)),
                                max_rotational_speed=float(rng.uniform(0.2, 1.57)), speed_ratio=1.0, accel=AMAX))
        try:
            p = plan(waypoints)
        except MotionError as e:
            assert e.value.error_id in (errors.CARTESIAN_INTERPOLATION_FAILED, errors.PLANNED_JOINT_ACCEL_LIMIT)
            continue
        planned += 1
        assert_loop_accepts(p, 1.0, AMAX)
        end = RM.fk(np.r_[p.q[-1], START[NA:]], TIP)
        goal = waypoints[-1].pose
        assert np.linalg.norm(end.translation - goal.translation) <= 1e-4
        assert angle(end.rotation, goal.rotation) <= 1e-3
    assert planned >= 10
