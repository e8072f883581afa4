"""JOINT interpolation of the motion controller (pure core): through every waypoint, within every
segment's limits, without stopping when the smooth path stays in range, errors with the right id."""
from __future__ import annotations

import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.motion import errors
from intera_compat.motion.errors import MotionError
from intera_compat.motion.joint_planner import LIMIT_MARGIN, plan_joint
from intera_compat.trajectory.spline import cubic_peak_acceleration, limit_violation

CFG = load_config()
NA = CFG.n_arm
LO, HI = CFG.limits.lower[:NA], CFG.limits.upper[:NA]
VMAX, AMAX = CFG.limits.velocity[:NA], CFG.limits.accel[:NA]
FAST = np.array([7.0, 5.0, 8.0, 8.0, 8.0, 8.0, 8.0])  # the SDK's "fast" max_joint_accel preset
START = np.array([0.0, -0.9, 0.0, 1.8, 0.0, -0.9, 0.0])


def plan(start, pts, ratios=0.7, accels=FAST, **kw):
    pts = np.atleast_2d(np.asarray(pts, float))
    W = len(pts)
    ratios = np.broadcast_to(np.asarray(ratios, float), (W,))
    accels = np.broadcast_to(np.asarray(accels, float), (W, NA))
    return plan_joint(start, pts, ratios, accels, LO, HI, VMAX, AMAX, **kw)


def state_at(p, t):
    """Positions and speeds at time t, linearly between knots."""
    q = np.array([np.interp(t, p.t, p.q[:, j]) for j in range(NA)])
    v = np.array([np.interp(t, p.t, p.v[:, j]) for j in range(NA)])
    return q, v


def test_passes_every_waypoint_and_ends_at_rest_on_the_last():
    pts = START + np.array([[0.3, 0.2, -0.3, -0.4, 0.5, 0.2, 0.3],
                            [0.6, 0.1, -0.1, -0.6, 0.2, 0.4, -0.2],
                            [0.2, -0.1, 0.3, -0.2, -0.3, 0.1, 0.5]])
    p = plan(START, pts, sample_dt=0.001)
    assert np.allclose(p.q[0], START) and np.allclose(p.q[-1], pts[-1])
    assert np.all(p.v[0] == 0) and np.all(p.v[-1] == 0) and p.order == 3
    for k, wp in enumerate(pts, start=1):
        q, _ = state_at(p, p.point_times[k])
        assert np.max(np.abs(q - wp)) < 2e-3, f"waypoint {k}"
    assert np.all(np.diff(p.point_times) > 0) and p.point_times[-1] == pytest.approx(p.duration, abs=1e-9)
    assert limit_violation(p.t, p.q, p.v, p.a, 5, VMAX, AMAX) is None


def test_does_not_stop_at_intermediate_waypoints_when_the_smooth_path_is_in_range():
    pts = START + np.array([[0.4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.8, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0]])
    p = plan(START, pts)
    assert not p.stops_at_waypoints
    _, v = state_at(p, p.point_times[1])
    assert np.linalg.norm(v) > 0.3  # rad/s: passing through, not stopping
    stop_each = plan(START, pts[:1])
    second = plan(pts[0], pts[1:])
    assert p.duration < stop_each.duration + second.duration  # faster than two rest-to-rest moves


def test_every_segment_keeps_its_own_speed_and_acceleration_limits():
    pts = START + np.array([[0.8, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.6, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    ratios = np.array([1.0, 0.2])
    accels = np.array([FAST, FAST * 0.25])
    p = plan(START, pts, ratios, accels, sample_dt=0.001)
    t1 = p.point_times[1]
    first, second = p.t < t1 - 1e-6, p.t > t1 + 1e-6
    assert np.max(np.abs(p.v[second, 0])) <= 0.2 * VMAX[0] + 1e-9
    assert np.max(np.abs(p.a[second, 0])) <= 0.25 * FAST[0] + 1e-9
    assert np.max(np.abs(p.v[first, 0])) > 0.5 * VMAX[0]  # the fast segment does go fast
    assert np.max(np.abs(p.a[first, 0])) <= FAST[0] + 1e-9
    # the robot's own acceleration limit caps a larger request
    big = plan(START, pts[:1], 1.0, AMAX * 10, sample_dt=0.001)
    assert np.all(np.abs(big.a) <= AMAX + 1e-9)


def test_what_the_loop_runs_between_knots_keeps_each_segments_limits_on_a_curved_path():
    pts = START + np.array([[0.5, 0.3, -0.4, -0.5, 0.6, 0.3, 0.4],
                            [0.1, 0.6, 0.2, -0.9, 0.1, 0.7, -0.3],
                            [0.7, 0.2, 0.5, -0.3, -0.4, 0.2, 0.6]])
    ratios = np.array([1.0, 0.3, 0.8])
    accels = np.array([AMAX, FAST * 0.5, FAST])
    p = plan(START, pts, ratios, accels)
    seg = np.clip(np.searchsorted(p.point_times, p.t[:-1], side="right") - 1, 0, 2)  # interval → segment
    seg_end = np.clip(np.searchsorted(p.point_times, p.t[1:], side="left") - 1, 0, 2)
    vlim = ratios[:, None] * VMAX
    alim = np.minimum(accels, AMAX)
    peak = cubic_peak_acceleration(p.t, p.q, p.v)
    tol = 1 + 1e-9
    assert np.all(np.abs(p.v[:-1]) <= np.maximum(vlim[seg], vlim[seg_end]) * tol)
    assert np.all(peak <= np.maximum(alim[seg], alim[seg_end]) * tol)
    inside = seg == seg_end  # intervals wholly inside one segment: that segment's limits exactly
    assert np.all(np.abs(p.v[:-1][inside]) <= vlim[seg[inside]] * tol)
    assert np.all(peak[inside] <= alim[seg[inside]] * tol)


def test_servo_noise_in_waypoint_zero_does_not_bend_the_path():
    rng = np.random.default_rng(3)
    target = START + np.array([0.6, 0.4, -0.5, -0.6, 0.7, 0.5, 0.8])
    p = plan(START, [START + rng.normal(0.0, 1e-4, NA), target])
    d = (target - START) / np.linalg.norm(target - START)
    off = (p.q - START) - np.outer((p.q - START) @ d, d)
    assert np.max(np.linalg.norm(off, axis=1)) < 1e-6  # a straight line, not a parabola through the noise
    assert np.array_equal(p.q[-1], target)


def test_a_waypoint_on_the_joint_limits_gives_knots_inside_the_range_exactly():
    for corner in (HI, LO, np.where(np.arange(NA) % 2, HI, LO)):
        p = plan(START, [START + 0.3 * (corner - START), corner], 1.0, AMAX)
        assert np.all(p.q >= LO) and np.all(p.q <= HI)
        assert np.array_equal(p.q[-1], corner)


def test_single_joint_move_is_time_optimal():
    d = 1.2
    p = plan(START, START + np.eye(NA)[0] * d, 1.0, FAST)
    v, a = VMAX[0] * LIMIT_MARGIN, FAST[0] * LIMIT_MARGIN
    expected = d / v + v / a if d > v * v / a else 2.0 * np.sqrt(d / a)
    assert p.duration == pytest.approx(expected, rel=1e-6)


def test_smooth_path_leaving_the_range_falls_back_to_stopping_at_each_waypoint():
    near = HI.copy() - 0.02
    a = START.copy()
    a[1] = near[1]
    b = a.copy()
    b[0] += 1.0
    c = b.copy()
    c[1] -= 1.0  # a sharp turn at the j1 limit: the spline through a, b, c overshoots j1's range
    p = plan(START, [a, b, c])
    assert p.stops_at_waypoints
    assert np.all(p.q >= LO - 1e-9) and np.all(p.q <= HI + 1e-9)
    for k in (1, 2):
        _, v = state_at(p, p.point_times[k])
        assert np.max(np.abs(v)) < 1e-6
    assert np.allclose(p.q[-1], c)


def test_repeated_waypoints_and_the_current_position_as_waypoint_zero_are_accepted():
    target = START + 0.3
    p = plan(START, [START, target, target])  # the SDK sends the current angles as waypoint 0
    assert np.allclose(p.q[-1], target)
    assert p.point_times[1] == 0.0 and p.point_times[2] == p.point_times[3] == pytest.approx(p.duration)
    still = plan(START, [START, START])
    assert still.duration == 0.0 and len(still.t) == 1 and np.allclose(still.q[0], START)


@pytest.mark.parametrize("change, error_id, words", [
    (lambda pts, r, a: pts.__setitem__((0, 3), np.nan), errors.INVALID_TRAJECTORY_MESSAGE, "joint_positions"),
    (lambda pts, r, a: r.__setitem__(0, 0.0), errors.INVALID_TRAJECTORY_MESSAGE, "max_joint_speed_ratio"),
    (lambda pts, r, a: r.__setitem__(0, np.nan), errors.INVALID_TRAJECTORY_MESSAGE, "max_joint_speed_ratio"),
    (lambda pts, r, a: a.__setitem__((0, 2), -1.0), errors.INVALID_TRAJECTORY_MESSAGE, "max_joint_accel[2]"),
    (lambda pts, r, a: pts.__setitem__((0, 5), HI[5] + 0.1), errors.INVALID_TRAJECTORY_MESSAGE, "joint 5"),
])
def test_bad_requests_are_refused_with_the_field_named(change, error_id, words):
    pts = np.array([START + 0.2])
    r = np.array([0.7])
    a = np.array([FAST.copy()])
    change(pts, r, a)
    with pytest.raises(MotionError) as e:
        plan_joint(START, pts, r, a, LO, HI, VMAX, AMAX)
    assert e.value.error_id == error_id and words in str(e.value)


def test_wrong_shapes_and_an_arm_outside_its_range_are_refused():
    with pytest.raises(MotionError) as e:
        plan_joint(START, np.zeros((1, NA - 1)), [0.7], [FAST], LO, HI, VMAX, AMAX)
    assert e.value.error_id == errors.INVALID_TRAJECTORY_MESSAGE
    with pytest.raises(MotionError) as e:
        plan_joint(START, [START + 0.1], [0.7, 0.7], [FAST], LO, HI, VMAX, AMAX)
    assert e.value.error_id == errors.INVALID_TRAJECTORY_MESSAGE
    outside = START.copy()
    outside[0] = HI[0] + 0.2
    with pytest.raises(MotionError) as e:
        plan(outside, [START])
    assert e.value.error_id == errors.FAILED_TO_PARAMETERIZE


def test_random_requests_stay_within_limits_and_the_knot_budget():
    rng = np.random.default_rng(7)
    for _ in range(15):
        W = int(rng.integers(1, 11))
        pts = rng.uniform(LO * 0.9, HI * 0.9, (W, NA))
        ratios = rng.uniform(0.05, 1.0, W)
        p = plan(START, pts, ratios, FAST, max_knots=3000)
        assert len(p.t) <= 3000
        assert np.all(np.diff(p.t) > 0)
        assert limit_violation(p.t, p.q, p.v, p.a, 5, VMAX, AMAX) is None
        assert np.all(p.q >= LO - 1e-9) and np.all(p.q <= HI + 1e-9)
        assert np.allclose(p.q[-1], pts[-1])


def test_knots_survive_the_wire_rounding_times_to_nanoseconds():
    """ROS durations carry whole nanoseconds: knots microseconds apart would turn into wild cubics."""
    rng = np.random.default_rng(5)
    start = CFG.full_pose("neutral")[:7]
    for _ in range(30):
        pts = start + rng.uniform(-0.6, 0.6, (int(rng.integers(1, 8)), 7))
        p = plan(start, np.clip(pts, LO + 0.1, HI - 0.1), ratios=rng.uniform(0.2, 1.0))
        assert np.diff(p.t).min() >= 1e-3 - 1e-12
        t_wire = np.round(p.t * 1e9) / 1e9
        assert limit_violation(t_wire, p.q, p.v, p.a, 3, VMAX, AMAX) is None
