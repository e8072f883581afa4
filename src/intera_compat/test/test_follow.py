"""FollowJointTrajectory goals (trajectory.follow): validation with error codes, tolerances per mode,
filled-in derivatives, path and goal checks. No ROS."""
import numpy as np
import pytest

from intera_compat.data import codes as T
from intera_compat.trajectory import follow as F

ARM = [f"right_j{i}" for i in range(7)]
Q0 = np.array([0.0, -0.9, 0.0, 1.6, 0.0, 0.8, 1.7])


def pts(times, positions, velocities=None, accelerations=None):
    k = len(times)
    return [F.Point(times[i], list(positions[i]), [] if velocities is None else list(velocities[i]),
                    [] if accelerations is None else list(accelerations[i])) for i in range(k)]


def plan(names, points, mode="position_w_id", current=Q0, **kw):
    return F.prepare(names, points, ARM, current, mode, F.mode_parameters(mode, ARM), **kw)


def err(names, points, **kw):
    with pytest.raises(F.GoalError) as e:
        plan(names, points, **kw)
    return e.value.code, str(e.value)


def test_bad_goals_get_their_error_code_and_a_message_naming_the_field():
    good = pts([0.0, 1.0], [Q0, Q0 + 0.1])
    code, msg = err(ARM[:6] + ["elbow"], good)
    assert code == F.INVALID_JOINTS and "joint_names[6] 'elbow'" in msg
    code, msg = err(ARM[:6] + ["right_j0"], good)
    assert code == F.INVALID_JOINTS and "appears twice" in msg
    assert err(ARM, [])[0] == F.INVALID_GOAL
    assert err([], good)[0] == F.INVALID_JOINTS
    code, msg = err(ARM, pts([0.0, 1.0], [Q0, list(Q0[:6])]))
    assert code == F.INVALID_GOAL and "points[1].positions has 6 values" in msg
    bad = (Q0 + 0.1).copy()
    bad[3] = np.nan
    code, msg = err(ARM, pts([0.0, 1.0], [Q0, bad]))
    assert code == F.INVALID_GOAL and "points[1].positions[3] (right_j3) is nan" in msg
    code, msg = err(ARM, pts([0.0, 1.0, 1.0], [Q0, Q0, Q0]))
    assert code == F.INVALID_GOAL and "points[2].time_from_start" in msg
    code, msg = err(ARM, pts([0.0, 1.0], [Q0, Q0], accelerations=[Q0 * 0, Q0 * 0]))
    assert code == F.INVALID_GOAL and "no velocities" in msg
    missing = pts([0.0, 1.0], [Q0, Q0], velocities=[Q0 * 0, Q0 * 0])
    missing[1].velocities = []
    code, msg = err(ARM, missing)
    assert code == F.INVALID_GOAL and "points[1].velocities has 0 values" in msg
    code, msg = err(ARM, good, goal_time_tolerance=-1.0)
    assert code == F.INVALID_GOAL and "goal_time_tolerance" in msg


def test_first_point_farther_than_the_path_tolerance_is_invalid_even_when_it_comes_later():
    far = Q0.copy()
    far[5] += 0.25  # position_w_id path tolerance 0.2
    for t0 in (0.0, 2.0):
        code, msg = err(ARM, pts([t0, t0 + 1.0], [far, far]))
        assert code == F.INVALID_GOAL and "positions[5] (right_j5)" in msg and "0.2500 rad from the arm" in msg
    # a goal's own path tolerance widens it; velocity mode (path tolerance off = -1) allows |−1| rad
    tol = [F.Tolerance("right_j5", 0.3, 0.0)]
    assert plan(ARM, pts([2.0], [far]), path_tolerance=tol).q[0, 5] == far[5]
    assert plan(ARM, pts([2.0], [far]), mode="velocity").q[0, 5] == far[5]


def test_a_first_point_at_time_zero_is_where_the_arm_is_and_the_end_is_at_rest():
    start = Q0 + 0.01
    p = plan(ARM, pts([0.0, 1.0, 2.0], [start, Q0 + 0.3, Q0 + 0.5], velocities=[Q0 * 0, Q0 * 0 + 0.2, Q0 * 0 + 0.4],
                      accelerations=[Q0 * 0, Q0 * 0 + 0.1, Q0 * 0 + 0.3]))
    assert p.q[0] == pytest.approx(Q0)  # the arm's position replaces the (near) first point
    assert not p.v[-1].any() and not p.a[-1].any()  # forced to rest as the SDK does
    assert p.v[1] == pytest.approx(0.2) and p.a[1] == pytest.approx(0.1)


def test_positions_only_never_swing_beyond_the_points_and_rest_at_both_ends():
    # unevenly timed: hold 3 s, move 0.2 rad in 0.5 s, hold 3 s (a spline through every point at once swings
    # 0.2 rad the wrong way first)
    t = np.array([0.0, 3.0, 3.5, 6.5])
    q = Q0 + np.outer([0.0, 0.0, 0.2, 0.2], np.ones(7))
    p = plan(ARM, pts(t, q))
    assert p.v.shape == (4, 7) and p.a is None  # the loop interpolates cubic Hermite through (q, v)
    assert not p.v.any()  # holds, then a move between two holds: every knot is a turning point
    t = np.array([0.0, 1.0, 2.5, 4.0])
    q = Q0 + np.outer([0.0, 0.2, 0.25, 0.3], np.ones(7))
    p = plan(ARM, pts(t, q))
    assert not p.v[0].any() and not p.v[-1].any() and (p.v[1:3] > 1e-3).all()  # through the interior points
    from intera_compat.trajectory.spline import KnotTrajectory
    for t, q in (([0.0, 3.0, 3.5, 6.5], [0.0, 0.0, 0.2, 0.2]), ([0.0, 0.4, 0.5, 2.0, 2.2], [0.0, 0.3, -0.1, 0.0, 0.1])):
        q = Q0 + np.outer(q, np.ones(7))
        p = plan(ARM, pts(np.array(t), q))
        tr = KnotTrajectory(7, 10)
        tr.load(p.t, p.q, p.v, np.zeros_like(p.q), 3)
        out = [np.zeros(7) for _ in range(3)]
        for k in range(len(t) - 1):  # every sample lies between its segment's two points
            lo, hi = np.minimum(q[k], q[k + 1]) - 1e-9, np.maximum(q[k], q[k + 1]) + 1e-9
            for tau in np.linspace(t[k], t[k + 1], 50):
                tr.sample(tau, *out)
                assert (out[0] >= lo).all() and (out[0] <= hi).all()


def test_partial_reordered_joint_sets_keep_the_goal_order():
    names = ["right_j3", "right_j0"]
    p = plan(names, pts([1.0], [[Q0[3] + 0.1, Q0[0] - 0.1]]))
    assert p.names == names and list(p.cols) == [3, 0]
    assert p.q[0] == pytest.approx([Q0[3] + 0.1, Q0[0] - 0.1])


@pytest.mark.parametrize("mode, path, goal, stopped, goal_time, tracking", [
    ("position_w_id", 0.2, np.inf, 0.2, 0.1, T.TRACK_FEEDFORWARD),
    ("position", 0.2, np.inf, 0.25, 0.1, T.TRACK_POSITION),
    ("velocity", np.inf, np.inf, np.inf, 0.0, T.TRACK_VELOCITY),
])
def test_intera_default_tolerances_per_mode(mode, path, goal, stopped, goal_time, tracking):
    p = plan(ARM, pts([1.0], [Q0]), mode=mode)
    assert (p.path_tol == path).all() and (p.goal_tol == goal).all()
    assert p.stopped_velocity == stopped and p.goal_time == goal_time and p.tracking == tracking
    assert (p.kp == 2.0).all()


def test_goal_tolerances_override_the_defaults_zero_keeps_them_negative_turns_them_off():
    path = [F.Tolerance("right_j1", 0.05, 0.0), F.Tolerance("right_j2", 0.0, 0.0), F.Tolerance("right_j3", -1, 0.5)]
    goal = [F.Tolerance("right_j4", 0.01, 0.02)]
    p = plan(ARM, pts([1.0], [Q0]), path_tolerance=path, goal_tolerance=goal, goal_time_tolerance=0.5)
    assert p.path_tol[1] == 0.05 and p.path_tol[2] == 0.2 and p.path_tol[3] == np.inf and p.path_vel_tol[3] == 0.5
    assert p.goal_tol[4] == 0.01 and p.goal_vel_tol[4] == 0.02 and p.goal_tol[0] == np.inf and p.goal_time == 0.5
    code, msg = err(ARM, pts([1.0], [Q0]), goal_tolerance=[F.Tolerance("right_j9", 0.1, 0.0)])
    assert code == F.INVALID_JOINTS and "goal_tolerance[0].name 'right_j9'" in msg


def test_monitor_reports_path_and_goal_violations_by_joint():
    goal = [F.Tolerance("right_j6", 0.01, 0.0)]
    p = plan(ARM, pts([1.0], [Q0 + 0.1]), goal_tolerance=goal)
    m = F.FollowMonitor(p)
    assert m.path_violation(Q0, Q0 + 0.19) is None
    off = Q0.copy()
    off[2] += 0.2
    assert "path error of right_j2 is 0.2000 rad" in m.path_violation(Q0, off)
    end = p.q[-1]
    assert m.goal_violation(end, np.zeros(7)) is None
    near = end.copy()
    near[6] += 0.02
    assert "goal error of right_j6" in m.goal_violation(near, np.zeros(7))
    moving = np.zeros(7)
    moving[1] = 0.3
    assert "right_j1 still moves at 0.3000 rad/s" in m.goal_violation(end, moving)


def test_a_lone_point_at_time_zero_is_checked_against_the_goal_not_the_arm():
    off = Q0 + np.r_[0.01, np.zeros(6)]  # within the start tolerance, beyond a tight goal tolerance
    p = plan(ARM, pts([0.0], [off]), goal_tolerance=[F.Tolerance("right_j0", 0.001, 0.0)])
    assert p.q[0] == pytest.approx(Q0)  # the trajectory starts (and stays) where the arm is ...
    why = F.FollowMonitor(p).goal_violation(Q0, np.zeros(7))
    assert why is not None and "goal error of right_j0" in why  # ... which is not the goal asked for


def test_a_noisy_100_hz_recording_is_played_through_fewer_points_within_the_limits_and_near_every_sample():
    from intera_compat.trajectory.spline import cubic_peak_acceleration, limit_violation
    amax = np.array([10.0, 8.0, 10.0, 10.0, 12.0, 12.0, 12.0])
    rng = np.random.default_rng(3)
    t = np.cumsum(np.r_[0.0, 0.01 + rng.uniform(-0.004, 0.004, 999)])  # a recorder's 100 Hz, jittered
    w = np.pi / t[-1] * np.arange(1, 8)
    q = Q0 + 0.4 * (1.0 - np.cos(np.outer(t, w))) + rng.normal(0.0, 5e-4, (1000, 7))  # sampling noise
    q[0] = Q0
    as_given = plan(ARM, pts(t, q))  # without the limits every sample is a knot: far beyond the arm
    assert len(as_given.t) == 1000 and (cubic_peak_acceleration(as_given.t, as_given.q, as_given.v) > 3 * amax).any()
    p = plan(ARM, pts(t, q), accel_limits=amax)
    assert 20 < len(p.t) < 1000 and p.t[0] == 0.0 and p.t[-1] == t[-1]
    assert limit_violation(p.t, p.q, p.v, None, 3, np.full(7, 10.0), amax) is None
    from scipy.interpolate import CubicHermiteSpline
    assert np.abs(CubicHermiteSpline(p.t, p.q, p.v, axis=0)(t) - q).max() <= F.THIN_TOLERANCE
    np.testing.assert_array_equal(p.goal_q, q[-1])
    # a recording too noisy to come within the tolerance of its samples is left as it is (and refused downstream)
    loud = q + rng.normal(0.0, 0.01, q.shape)
    loud[0] = Q0
    assert len(plan(ARM, pts(t, loud), accel_limits=amax).t) == 1000
    # sparse waypoints within the limits are never thinned
    sparse = plan(ARM, pts([0.0, 1.0, 2.5, 4.0], Q0 + np.outer([0.0, 0.2, 0.25, 0.3], np.ones(7))), accel_limits=amax)
    assert len(sparse.t) == 4


def test_a_late_start_is_taken_off_a_first_hold_so_that_the_later_points_keep_the_clients_times():
    """joint_trajectory_client.py: the current angles at t = 0 and 1 s, then the motion, its result awaited for the
    trajectory's duration (19 s) from the send: a start late by the JTAS's wait for the arm to rest (0.3 s) or by the
    goal's time in transit comes off that hold, as the SDK's server (sampling at now - stamp) keeps the schedule —
    the script cancelled a trajectory pushed 0.07 s late just short of its end. A first segment that moves keeps its
    times and moves with the wait; so does one whose hold is needed to bring the arm (which moved on meanwhile) to
    its second point gently; a start time in the future that the wait did not reach is kept as it is."""
    script = pts([0.0, 1.0, 4.0], [Q0, Q0, Q0 + 0.2])
    near = Q0 + 0.005  # (the script read the angles within 0.0087 rad of neutral, the arm came to rest beyond)
    assert F.first_hold(script, Q0) == pytest.approx(1.0 - F.HOLD_LEFT)
    hold = F.first_hold(script, near)  # (what is left brings the arm 5 mm at about 1 rad/s² at most: 0.17 s)
    assert hold == pytest.approx(1.0 - np.sqrt(6 * 0.005 / F.HOLD_ACCEL))
    points, stamp = F.on_schedule(script, near, 0.0, 0.3, 100.3)  # unstamped: the wait held
    assert [p.time for p in points] == pytest.approx([0.0, 0.7, 3.7]) and stamp == 0.0
    points, stamp = F.on_schedule(script, near, 100.0, 0.3, 100.37)  # stamped "now", 0.07 s in transit, 0.3 waited
    assert [p.time for p in points] == pytest.approx([0.0, 0.63, 3.63]) and stamp == pytest.approx(100.37)
    points, stamp = F.on_schedule(script, near, 100.0, 0.0, 102.0)  # 2 s late: the hold takes what it can
    assert [p.time for p in points] == pytest.approx([0.0, 1.0 - hold, 4.0 - hold])
    assert stamp == pytest.approx(100.0 + hold)  # (the rest of it in transit: 'runs from now', said)
    assert F.on_schedule(script, near, 101.0, 0.3, 100.3) == (script, 101.0)  # a start still to come: on time
    points, stamp = F.on_schedule(script, near, 100.2, 0.3, 100.3)  # the wait ran past its start by 0.1 s
    assert [p.time for p in points] == pytest.approx([0.0, 0.9, 3.9]) and stamp == pytest.approx(100.3)
    p = plan(ARM, F.on_schedule(script, near, 100.0, 0.9, 100.9)[0], current=near)  # from where the arm is:
    assert p.t[-1] == pytest.approx(4.0 - hold)  # gently (a late start that the hold could not all take)
    assert np.abs(p.q[1] - p.q[0]).max() / p.t[1] <= F.HOLD_SPEED
    assert 6 * np.abs(p.q[1] - p.q[0]).max() / p.t[1] ** 2 <= F.HOLD_ACCEL * 1.0001
    assert F.first_hold(script, np.full(7, np.nan)) == 0.0  # (where the arm is, unknown)
    moving = pts([0.0, 1.0], [Q0, Q0 + 0.01])
    assert F.on_schedule(moving, Q0, 100.0, 0.3, 100.37) == (moving, pytest.approx(100.3))  # moves with the wait
    far = Q0 + 0.15  # the arm moved on 0.15 rad after the client read its angles: the hold takes it there
    assert F.first_hold(script, far) == 0.0 and F.on_schedule(script, far, 0.0, 0.3, 100.3) == (script, 0.0)
    assert F.first_hold(pts([0.5, 1.0], [Q0, Q0]), Q0) == 0.0  # (a first point later than 0 is reached first)
    assert F.first_hold(pts([0.0, 1.0], [Q0, Q0], [np.zeros(7), np.full(7, 0.1)]), Q0) == 0.0
    assert F.first_hold(pts([0.0], [Q0]), Q0) == 0.0
