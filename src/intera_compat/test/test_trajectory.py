"""Whole trajectories handed to the loop once and sampled every cycle (nothing streamed)."""
import numpy as np
import pytest

from intera_compat.data import codes as T
from intera_compat.data.codes import POSITION_MODE
from intera_compat.loop.client import TrajectoryError
from intera_compat.loop.layouts import MSG_ENABLE, MSG_TRAJ_EXECUTE as T_EXECUTE, MSG_TRAJ_SCALING as T_SCALING
from intera_compat.loop.offline import OfflineLoop
from intera_compat.trajectory.spline import KnotTrajectory

ARM = [f"right_j{i}" for i in range(7)]


@pytest.fixture
def loop():
    L = OfflineLoop()
    L.step()
    return L


def min_jerk(q0, q1, duration, k=41):
    t = np.linspace(0.0, duration, k)
    s = t / duration
    p = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5
    dp = (30 * s ** 2 - 60 * s ** 3 + 30 * s ** 4) / duration
    ddp = (60 * s - 180 * s ** 2 + 120 * s ** 3) / duration ** 2
    d = q1 - q0
    return t, q0 + np.outer(p, d), np.outer(dp, d), np.outer(ddp, d)


def test_quintic_sampling_matches_the_polynomial():
    tr = KnotTrajectory(2, 10)
    t, q, v, a = min_jerk(np.zeros(2), np.array([1.0, -0.5]), 2.0, k=2)
    tr.load(t, q, v, a, 5)
    out = [np.zeros(2) for _ in range(3)]
    for tau in np.linspace(0, 2, 9):
        tr.sample(tau, *out)
        s = tau / 2
        assert out[0][0] == pytest.approx(10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5, abs=1e-12)
    tr.sample(5.0, *out)  # after the end: the last point, at rest
    assert out[0] == pytest.approx([1.0, -0.5]) and not out[1].any()


def test_trajectory_sent_once_is_followed_and_succeeds(loop):
    q0 = loop.arm_q
    q1 = q0 + np.array([0.5, -0.3, 0.2, 0.4, -0.5, 0.3, 0.8])
    t, q, v, a = min_jerk(q0, q1, 2.0)
    tid = loop.trajectories.execute(t, q, v, a)
    worst = 0.0
    for _ in range(220):
        loop.run(0.01)
        worst = max(worst, loop.trajectories.progress().error)
    res = loop.trajectories.results[tid]
    assert res.status == T.SUCCEEDED
    assert loop.state.local.commands[0] == 0  # no JointCommand: the loop sampled it itself
    assert worst < 0.01
    loop.run(0.3)
    assert np.abs(loop.arm_q - q1).max() < 0.0087


def test_scaling_slows_pauses_and_resumes_without_aborting(loop):
    q0 = loop.arm_q
    t, q, v, a = min_jerk(q0, q0 + np.array([0, 0, 0, 0.6, 0, 0, 0]), 1.0)
    tid = loop.trajectories.execute(t, q, v, a)
    loop.trajectories.set_scaling(0.5)
    loop.run(1.0)
    p = loop.trajectories.progress()
    assert p.time == pytest.approx(0.5, abs=0.01) and p.scaling == pytest.approx(0.5)
    loop.trajectories.set_scaling(0.0)
    loop.run(0.5)
    here, paused = loop.arm_q, loop.trajectories.progress().time
    assert paused == pytest.approx(0.5, abs=0.04)  # decelerated along the path (scaling ramp), then paused
    loop.run(0.5)
    assert loop.trajectories.progress().time == paused
    assert np.abs(loop.arm_q - here).max() < 1e-3 and tid not in loop.trajectories.results
    loop.trajectories.set_scaling(1.0)
    assert loop.trajectories.wait(tid, 2.0, step=loop.step).status == T.SUCCEEDED


def curve(q0, duration, k=81):
    """j0 sweeps out (min-jerk), j1 goes out and back (a bump 64·s³(1−s)³): a curved path in joint space,
    at rest at both ends."""
    from numpy.polynomial import Polynomial as P

    t = np.linspace(0.0, duration, k)
    s = t / duration
    q, v, a = np.tile(q0, (k, 1)), np.zeros((k, 7)), np.zeros((k, 7))
    for j, p in ((0, P([0, 0, 0, 10, -15, 6])), (1, 0.3 * 64 * P([0, 1]) ** 3 * P([1, -1]) ** 3)):
        q[:, j] += p(s)
        v[:, j] = p.deriv()(s) / duration
        a[:, j] = p.deriv(2)(s) / duration ** 2
    return t, q, v, a


def test_cancel_decelerates_along_the_path_then_reports_cancelled(loop):
    q0 = loop.arm_q
    t, q, v, a = curve(q0, 2.0)
    path = KnotTrajectory(7, len(t))
    path.load(t, q, v, a, 5)
    on_path = [np.zeros(7) for _ in range(3)]
    tid = loop.trajectories.execute(t, q, v, a)
    loop.run(0.8)  # fast, and j1 is reversing while j0 is still accelerating
    loop.trajectories.cancel(tid)
    prev_a = np.zeros(7)
    local = loop.state.local
    prev_v = local.cmd_velocity[:7].copy()
    amax = loop.cfg.limits.accel[:7]
    steps = 0
    while tid not in loop.trajectories.results and steps < 2000:
        tau = loop.trajectories.progress().time  # the cycle samples here, then advances the time
        loop.step()
        steps += 1
        acc = (local.cmd_velocity[:7] - prev_v) / loop.dt
        assert np.all(np.abs(acc) <= amax * 1.01)  # within the acceleration limits
        if steps > 1:  # no acceleration step: the stop's jerk stays within 10 × amax per second (+ the path's own)
            assert np.all(np.abs(acc - prev_a) <= (10.0 * amax + 20.0) * loop.dt * 1.05)
        prev_v, prev_a = local.cmd_velocity[:7].copy(), acc
        path.sample(tau, *on_path)
        assert np.abs(local.cmd_position[:7] - on_path[0]).max() < 1e-9  # every setpoint lies on the path
    assert loop.trajectories.results[tid].status == T.CANCELLED and 50 < steps < 1000
    assert np.abs(local.cmd_velocity).max() < 1e-9
    stop = loop.arm_q
    loop.run(0.5)
    assert np.abs(loop.arm_q - stop).max() < 2e-3 and stop[0] < q0[0] + 0.9


def test_a_replacement_during_a_stop_never_runs_the_path_backwards(loop):
    """The stop's falling scaling rate carries into a replacement sent just before rest: the scaling
    must not pass below 0 (time running backwards, the arm reversing)."""
    q0 = loop.arm_q
    t, q, v, a = curve(q0, 2.0)
    tid = loop.trajectories.execute(t, q, v, a)
    loop.run(0.8)
    loop.trajectories.cancel(tid)
    while loop.trajectories.progress().scaling > 0.05:  # nearly stopped, the scaling still falling fast
        loop.step()
    assert tid not in loop.trajectories.results
    here = loop.state.local.cmd_position[:7].copy()
    tid2 = loop.trajectories.execute([1.0], [here + np.array([0.2, 0, 0, 0, 0, 0, 0])], [np.zeros(7)])
    last_time = 0.0
    for _ in range(3000):
        loop.step()
        p = loop.trajectories.progress()
        if tid2 in loop.trajectories.results:
            break
        if p.traj_id == tid2:
            assert p.scaling >= 0.0 and p.time >= last_time and loop.state.local.cmd_velocity[0] >= -1e-9
            last_time = p.time
    assert loop.trajectories.results[tid2].status == T.SUCCEEDED


def test_a_trajectory_must_end_at_rest(loop):
    """The arm stops along the path and holds its end: a last point that still moves would end in a velocity step.
    The client refuses it naming the field; the loop refuses it too (a message posted past the client)."""
    q0 = loop.arm_q
    t, q, v, a = min_jerk(q0, q0 + np.array([0, 0, 0.4, 0, 0, 0, 0]), 2.0, k=5)
    moving = v.copy()
    moving[-1, 2] = 0.3
    with pytest.raises(TrajectoryError, match=r"velocities\[4\]\[2\] \(right_j2\) = 0.3: a trajectory must end at rest"):
        loop.trajectories.execute(t, q, moving)
    pushing = a.copy()
    pushing[-1, 2] = 1.0
    with pytest.raises(TrajectoryError, match=r"accelerations\[4\]\[2\]"):
        loop.trajectories.execute(t, q, v, pushing)
    full = np.zeros((len(t), 8))
    qs, vs = full.copy(), full.copy()
    qs[:, :7], vs[:, :7] = q, moving
    qs[:, 7] = loop.q[7]
    mask = np.r_[np.ones(7), 0.0]
    loop.channel.post(T_EXECUTE, np.array([777.0, 3, len(t), 1.0, 0, 0.0]), mask, np.zeros(8), t, qs.ravel(), vs.ravel(), full.ravel())
    res = loop.trajectories.wait(777, 0.05, step=loop.step)
    assert res.status == T.REJECTED and res.reason == T.R_INVALID and res.joint == "right_j2"
    assert "still moves" in res.message


def test_cancel_while_paused_ends_at_once_where_the_arm_is(loop):
    q0 = loop.arm_q
    t, q, v, a = curve(q0, 2.0)
    tid = loop.trajectories.execute(t, q, v, a)
    loop.run(0.5)
    loop.trajectories.set_scaling(0.0)
    loop.run(0.5)
    here = loop.state.local.cmd_position[:7].copy()
    loop.trajectories.cancel(tid)
    assert loop.trajectories.wait(tid, 0.01, step=loop.step).status == T.CANCELLED
    assert np.abs(loop.state.local.cmd_position[:7] - here).max() < 1e-12


def test_first_point_far_from_the_arm_is_rejected_naming_the_joint(loop):
    far = loop.arm_q + np.array([0, 0, 0.3, 0, 0, 0, 0])
    tid = loop.trajectories.execute([0.0, 1.0], [far, far])
    res = loop.trajectories.wait(tid, 0.05, step=loop.step)
    assert res.status == T.REJECTED and res.reason == T.R_START_DEVIATION and res.joint == "right_j2"
    assert "too far" in res.message


def test_first_point_at_zero_must_match_the_current_velocity(loop):
    """A trajectory that starts now with the arm at rest but its first knot moving would be a velocity step."""
    q0 = loop.arm_q
    t, q, v, a = min_jerk(q0, q0 + np.array([0, 0, 0, 0, 0.5, 0, 0]), 2.0, k=5)
    v = v.copy()
    v[0, 4] = 0.2
    res = loop.trajectories.wait(loop.trajectories.execute(t, q, v, a), 0.05, step=loop.step)
    assert res.status == T.REJECTED and res.reason == T.R_START_DEVIATION and res.joint == "right_j4"


def test_first_point_later_than_zero_is_reached_from_the_arm(loop):
    goal = loop.arm_q + np.array([0, 0, 0.3, 0, 0, 0, 0])
    tid = loop.trajectories.execute([1.5], [goal], [np.zeros(7)])
    assert loop.trajectories.wait(tid, 2.0, step=loop.step).status == T.SUCCEEDED
    loop.run(0.3)
    assert np.abs(loop.arm_q - goal).max() < 0.0087


def test_partial_joint_set_leaves_other_joints_holding(loop):
    q0 = loop.arm_q
    tid = loop.trajectories.execute([1.0], [[q0[4] + 0.4]], joint_names=["right_j4"])
    assert loop.trajectories.wait(tid, 2.0, step=loop.step).status == T.SUCCEEDED
    loop.run(0.3)
    expect = q0.copy()
    expect[4] += 0.4
    assert np.abs(loop.arm_q - expect).max() < 0.0087


def test_joint_command_preempts_and_disable_aborts(loop):
    q0 = loop.arm_q
    t, q, v, a = min_jerk(q0, q0 + np.array([0.5, 0, 0, 0, 0, 0, 0]), 2.0)
    tid = loop.trajectories.execute(t, q, v, a)
    loop.run(0.5)
    loop.send(POSITION_MODE, ARM, position=loop.arm_q)
    loop.run(0.01)
    assert loop.trajectories.results[tid].status == T.PREEMPTED
    tid2 = loop.trajectories.execute([1.0], [q0])
    loop.run(0.3)
    loop.event(MSG_ENABLE, 0)
    loop.run(0.01)
    assert loop.trajectories.results[tid2].status == T.ABORTED
    assert loop.trajectories.results[tid2].reason == T.R_ROBOT_DISABLED


def test_client_rejects_bad_trajectories_naming_the_field(loop):
    c = loop.trajectories
    q = loop.arm_q
    with pytest.raises(TrajectoryError, match=r"positions\[1\]\[2\] \(right_j2\) is nan"):
        c.execute([0.5, 1.0], [q, np.r_[q[:2], np.nan, q[3:]]])
    with pytest.raises(TrajectoryError, match="strictly increasing"):
        c.execute([1.0, 1.0], [q, q])
    with pytest.raises(TrajectoryError, match=r"joint_names\[0\] 'head_pan'"):
        c.execute([1.0], [[0.0]], joint_names=["head_pan"])
    with pytest.raises(TrajectoryError, match=r"positions\[0\]\[0\] \(right_j0\) = 9"):
        c.execute([1.0], [np.r_[9.0, q[1:]]])
    with pytest.raises(TrajectoryError, match=r"accelerations\[1\]\[3\] \(right_j3\) = 50 rad/s² exceeds"):
        acc = np.zeros((2, 7))
        acc[1, 3] = 50.0
        c.execute([0.5, 1.0], [q, q], np.zeros((2, 7)), acc)
    with pytest.raises(TrajectoryError, match=r"segment speed of points 0→1 \(right_j1\)"):
        c.execute([0.5, 0.6], [q, q + np.array([0, 0.5, 0, 0, 0, 0, 0])])
    with pytest.raises(TrajectoryError, match=r"segment acceleration of points 0→1 \(right_j4\)"):
        c.execute([0.5, 0.75], [q, q + np.array([0, 0, 0, 0, 0.4, 0, 0])], np.zeros((2, 7)))


def post_raw(L, t, q, order=1):
    """A trajectory put on the ring as a client that skips validation would (defence in depth)."""
    k, n = len(t), L.cycle.n
    full = np.zeros((k, n))
    full[:, :7] = q
    mask = np.r_[np.ones(7), 0.0]
    assert L.channel.post(T_EXECUTE, np.array([99.0, order, k, 1.0, 0, 0.0]), mask, np.zeros(n), np.asarray(t, float),
                          full.ravel(),
                          np.zeros(k * n), np.zeros(k * n))
    return 99


def test_loop_rejects_a_first_point_it_cannot_reach_in_time(loop):
    goal = loop.arm_q + np.array([0, 0, 0, 0.3, 0, 0, 0])
    q0 = loop.q
    tid = post_raw(loop, [0.001], [goal])  # 0.3 rad in 1 ms
    res = loop.trajectories.wait(tid, 0.05, step=loop.step)
    assert res.status == T.REJECTED and res.reason == T.R_LIMITS and res.joint == "right_j3"
    loop.run(0.2)
    assert np.abs(loop.q - q0).max() < 1e-3


def test_linear_trajectory_ends_on_its_last_point_and_never_exceeds_vmax(loop):
    q0 = loop.arm_q
    goal = q0 + np.array([0, 0.8, 0, 0, 0, 0, 0])
    tid = loop.trajectories.execute([1.0], [goal])  # positions only: linear, a velocity step at each end
    peak = 0.0
    for _ in range(200):
        loop.run(0.01)
        peak = max(peak, abs(loop.state.local.cmd_velocity[1]))
    assert loop.trajectories.results[tid].status == T.SUCCEEDED
    assert np.abs(loop.arm_q - goal).max() < 0.002
    assert peak <= loop.cfg.limits.velocity[1] * 1.05 + 1e-9


def test_a_non_finite_scaling_is_ignored_by_the_loop(loop):
    q0 = loop.arm_q
    t, q, v, a = min_jerk(q0, q0 + np.array([0, 0, 0, 0.3, 0, 0, 0]), 1.0)
    tid = loop.trajectories.execute(t, q, v, a)
    loop.channel.post(T_SCALING, np.array([tid, np.nan]))  # past the client's own check
    assert loop.trajectories.wait(tid, 2.0, step=loop.step).status == T.SUCCEEDED
    with pytest.raises(TrajectoryError, match="scaling is nan"):
        loop.trajectories.set_scaling(float("nan"))


def test_a_scaling_about_another_trajectory_is_ignored(loop):
    """A late keep-alive of a trajectory that has ended must not slow (or pause) the next one."""
    q0 = loop.arm_q
    t, q, v, a = min_jerk(q0, q0 + np.array([0, 0, 0, 0.3, 0, 0, 0]), 1.0)
    tid = loop.trajectories.execute(t, q, v, a)
    loop.trajectories.set_scaling(0.0, traj_id=tid + 1000)
    loop.run(0.5)
    assert loop.trajectories.progress().time == pytest.approx(0.5, abs=0.01)
    loop.trajectories.set_scaling(0.0, traj_id=tid)
    loop.run(0.5)
    assert loop.trajectories.progress().scaling == 0.0


def test_the_sender_scaling_in_the_execute_message_applies_from_the_start(loop):
    q0 = loop.arm_q
    t, q, v, a = min_jerk(q0, q0 + np.array([0, 0, 0, 0.3, 0, 0, 0]), 0.5)
    tid = loop.trajectories.execute(t, q, v, a, scaling=0.5)
    loop.run(0.4)
    p = loop.trajectories.progress()
    assert p.traj_id == tid and p.scaling == pytest.approx(0.5) and p.time == pytest.approx(0.2, abs=0.003)
    assert loop.trajectories.wait(tid, 0.65, step=loop.step).status == T.SUCCEEDED
    for bad in (0.0, float("nan"), 3.0):  # out of (0, 1]: full speed
        tid = loop.trajectories.execute([0.5], [q0], scaling=bad)  # back to where it started
        loop.run(0.05)
        assert loop.trajectories.progress().scaling == 1.0
        assert loop.trajectories.wait(tid, 1.0, step=loop.step).status == T.SUCCEEDED


def test_a_fast_trajectory_is_tracked_within_a_milliradian(loop):
    """Inverse dynamics + the identified friction fed forward: the light wrist joints at 3 rad/s too."""
    q0 = loop.arm_q
    goal = q0 + np.array([0.5, -0.4, 0.5, -0.5, 1.5, -1.5, -3.0])
    t, q, v, a = min_jerk(q0, goal, 1.4)  # j6 peaks at 4.0 rad/s
    tid = loop.trajectories.execute(t, q, v, a)
    worst = 0.0
    while tid not in loop.trajectories.results:
        loop.step()
        st = loop.state.local
        worst = max(worst, float(np.abs(st.cmd_position[:7] - st.position[:7]).max()))
    assert loop.trajectories.results[tid].status == T.SUCCEEDED
    assert worst < 1e-3


@pytest.mark.parametrize("cancel_at", [0.2, 0.5, 0.8])
def test_a_stop_on_a_planned_path_keeps_the_acceleration_limits(loop, cancel_at):
    """The motion controller's cubic paths: their acceleration jumps at every knot, and a stop along them
    must still stay within each joint's acceleration limit (the limit beats the stop's jerk bound)."""
    from intera_compat.motion.joint_planner import plan_joint

    lim = loop.cfg.limits
    amax = lim.accel[:7]
    q0 = loop.arm_q
    wps = np.array([q0 + [0.6, -0.3, 0.4, -0.5, 0.8, 0.5, 1.0], q0 + [-0.2, 0.2, -0.3, 0.3, -0.6, 0.0, -0.5]])
    plan = plan_joint(q0, wps, [1.0, 1.0], np.tile(amax, (2, 1)), lim.lower[:7], lim.upper[:7], lim.velocity[:7], amax)
    tid = loop.trajectories.execute(plan.t, plan.q, plan.v)
    loop.run(cancel_at * plan.duration)
    loop.trajectories.cancel(tid)
    local = loop.state.local
    prev_v = local.cmd_velocity[:7].copy()
    worst = 0.0
    for _ in range(3000):
        loop.step()
        acc = (local.cmd_velocity[:7] - prev_v) / loop.dt
        prev_v = local.cmd_velocity[:7].copy()
        worst = max(worst, float(np.max(np.abs(acc) / amax)))
        if tid in loop.trajectories.results:
            break
    assert loop.trajectories.results[tid].status == T.CANCELLED
    assert worst <= 1.02


@pytest.mark.parametrize("tracking", [T.TRACK_FEEDFORWARD, T.TRACK_POSITION, T.TRACK_VELOCITY])
def test_each_tracking_law_follows_the_trajectory_and_reports_its_own_sample(loop, tracking):
    q0 = loop.arm_q
    q1 = q0 + np.array([0.4, -0.3, 0.2, 0.4, -0.4, 0.3, 0.6])
    t, q, v, a = min_jerk(q0, q1, 2.0)
    tid = loop.trajectories.execute(t, q, v, a, tracking=tracking, kp=np.full(7, 5.0))
    st = loop.state.local
    worst, ff_acc, corrections = 0.0, 0.0, 0.0
    for _ in range(220):
        loop.run(0.01)
        worst = max(worst, np.abs(st.traj_position[:7] - st.position[:7]).max())
        ff_acc = max(ff_acc, np.abs(st.cmd_acceleration[:7]).max())
        # velocity tracking commands v + kp·(q − measured): not the trajectory's own velocity
        corrections = max(corrections, np.abs(st.cmd_velocity[:7] - st.traj_velocity[:7]).max())
    assert loop.trajectories.results[tid].status == T.SUCCEEDED
    assert worst < 0.02
    assert np.abs(st.traj_acceleration[:7]).max() == 0.0  # at rest at the end
    if tracking == T.TRACK_FEEDFORWARD:
        assert ff_acc > 0.5 and corrections < 1e-9
    elif tracking == T.TRACK_POSITION:
        assert ff_acc == 0.0 and corrections < 1e-9  # positions and velocities, no acceleration feed-forward
    else:
        assert ff_acc == 0.0 and corrections > 1e-4
    loop.run(0.5)
    assert np.abs(loop.arm_q - q1).max() < 0.0087


def test_bad_tracking_requests_are_refused(loop):
    q0 = loop.arm_q
    t, q, v, a = min_jerk(q0, q0 + 0.1, 1.0)
    with pytest.raises(TrajectoryError, match="tracking is 7"):
        loop.trajectories.execute(t, q, v, a, tracking=7)
    with pytest.raises(TrajectoryError, match="kp must be 7 gains"):
        loop.trajectories.execute(t, q, v, a, tracking=T.TRACK_VELOCITY, kp=np.full(7, np.nan))
    # past the client, the loop refuses it too (defence in depth)
    n = loop.cycle.n
    full = np.zeros((len(t), n))
    full[:, :7] = q
    kp = np.r_[np.full(7, 1e3), 0.0]
    assert loop.channel.post(T_EXECUTE, np.array([55.0, 1, len(t), 1.0, 2, 0.0]), np.r_[np.ones(7), 0.0], kp, t,
                             full.ravel(), np.zeros(len(t) * n), np.zeros(len(t) * n))
    res = loop.trajectories.wait(55, 0.05, step=loop.step)
    assert res.status == T.REJECTED and res.reason == T.R_INVALID


def test_the_speed_override_pauses_the_time_base_without_ending_the_trajectory(loop):
    q0 = loop.arm_q
    q1 = q0 + np.array([0.4, 0.0, 0.0, 0.3, 0.0, 0.0, 0.5])
    t, q, v, a = min_jerk(q0, q1, 2.0)
    tid = loop.trajectories.execute(t, q, v, a)
    loop.run(0.8)
    loop.set(speed_override=0.0)
    loop.run(0.5)  # decelerates along the path
    p = loop.trajectories.progress()
    held = loop.arm_q
    loop.run(1.0)
    assert tid not in loop.trajectories.results and loop.trajectories.progress().time == pytest.approx(p.time)
    assert np.abs(loop.arm_q - held).max() < 1e-3 and 0.5 < p.time < 1.5
    loop.set(speed_override=1.0)
    loop.run(2.0)
    assert loop.trajectories.results[tid].status == T.SUCCEEDED
    assert np.abs(loop.arm_q - q1).max() < 0.0087


def test_velocity_tracking_blocked_by_an_obstacle_does_not_wind_up_and_overshoot_when_released(loop):
    m = loop.backend.m
    jid = m.joint("right_j0").id
    q0 = loop.arm_q
    free_range = m.jnt_range[jid].copy()
    m.jnt_range[jid] = [free_range[0], q0[0] + 0.05]  # an obstacle 0.05 rad along the path
    q1 = q0 + np.array([0.4, 0, 0, 0, 0, 0, 0])
    t, q, v, a = min_jerk(q0, q1, 1.0)
    tid = loop.trajectories.execute(t, q, v, a, tracking=T.TRACK_VELOCITY, kp=np.full(7, 5.0))
    loop.run(3.0)  # the trajectory has ended; the arm is still against the obstacle
    assert loop.trajectories.results[tid].status == T.SUCCEEDED
    s = loop.state.local
    assert s.position[0] < q0[0] + 0.06
    assert abs(s.cmd_position[0] - s.position[0]) <= loop.cfg.control["following_error"]["window"] + 1e-9
    m.jnt_range[jid] = free_range  # released
    top = -np.inf
    for _ in range(300):
        loop.run(0.01)
        top = max(top, loop.arm_q[0])
    assert top < q1[0] + 0.01  # goes to the last point, not past it to where a wound-up setpoint went
    assert abs(loop.arm_q[0] - q1[0]) < 0.01


def wobble(k):
    return 0.7 + (0.004 if k % 2 else 0.0)


@pytest.mark.parametrize("dt", [0.02, 0.01, 0.008, 0.001])
@pytest.mark.parametrize("path", [(0.05, 0.0), (0.4, 0.0), (1.0, 0.0), (0.6, 3.0), (0.6, -3.0)])
@pytest.mark.parametrize("start, want", [(1.0, 0.0), (0.3, 1.0), (1.0, wobble)])
def test_the_time_base_reaches_its_target_at_every_loop_rate_within_the_joints_limits(dt, path, start, want):
    """Stops (0), ramps up, and a factor that moves every cycle (a paced arm's, the UR slider's), on a path with and
    without its own acceleration. (At 50 and 100 Hz the braking shrank the scaling by a fixed fraction each cycle and
    never reached 0: a speed override's stop on a ros_control trajectory arm stayed STOPPING with its goal
    unanswered. A review's find: the step that settles on a moving target is followed from the rate it applied.)"""
    from intera_compat.sources.trajectory import TrajectorySource
    src = TrajectorySource(slice(0, 7), np.full(7, 2.0), np.full(7, 5.0), dt)
    (v, a), j = path, 3
    src.v[j], src.a[j] = v, a  # the path's dq/dτ and d²q/dτ² where it is
    s, rate, cycles = start, 0.0, 0
    for k in range(int(2.0 / dt)):
        target = want(k) if callable(want) else want
        s_next = src._next_scaling(s, target, np.inf if target == 0.0 else 5.0)
        r = (s_next - s) / dt
        assert abs(a * s * s + v * r) <= src.amax[j] * 1.01  # the joint's acceleration (hard)
        if not callable(want):  # ... and its jerk (soft where a moving target is met: the step settles on it)
            assert abs(r - rate) * v <= src.jmax[j] * dt * (1 + 1e-9)
        s, rate, cycles = s_next, r, cycles + 1
        if not callable(want) and s == want:
            break
    if callable(want):
        assert 0.7 - 1e-9 <= s <= 0.704 + 1e-9  # it follows the factor
    else:
        assert s == want and cycles < 1.0 / dt  # (a stop from 1 rad/s at 50 rad/s³ takes 0.28 s)
        assert abs(rate) * v <= src.jmax[j] * dt * (1 + 1e-9)  # ... also into rest


@pytest.mark.parametrize("dt", [0.01, 0.002])
def test_a_factor_that_wobbles_within_one_step_is_followed_within_the_jerk_limit(dt):
    """(A review's find: the step that settles on the target forgot the rate it applied, so a factor moving every
    cycle by less than one step — a paced arm's, the UR slider's — was followed at twice the jerk limit.)"""
    from intera_compat.sources.trajectory import TrajectorySource
    src = TrajectorySource(slice(0, 7), np.full(7, 2.0), np.full(7, 5.0), dt)
    src.v[0] = 1.0
    jerk_dt = src.jmax[0] * dt
    s, rate = 1.0, 0.0
    for k in range(200):
        s_next = src._next_scaling(s, 1.0 - (0.9 * jerk_dt * dt if k % 2 else 0.0), 5.0)
        r = (s_next - s) / dt
        assert abs(r - rate) <= jerk_dt * (1 + 1e-9)
        s, rate = s_next, r
