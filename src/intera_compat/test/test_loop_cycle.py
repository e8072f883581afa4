"""The realtime loop's per-cycle rules: ``LoopCycle.step`` (the realtime process's cycle) run synchronously on
the MuJoCo Sawyer through the real shared-memory channel (no ROS, no processes)."""
import numpy as np
import pytest

from intera_compat.data.codes import POSITION_MODE, TORQUE_MODE, TRAJECTORY_MODE, VELOCITY_MODE
from intera_compat.loop.layouts import MSG_ENABLE, MSG_ESTOP, MSG_RESET, MSG_STOP, MSG_SUPPRESS, SUPPRESS_GRAVITY
from intera_compat.loop.offline import OfflineLoop

TOL = 0.008726646  # Intera JOINT_ANGLE_TOLERANCE (0.5°)


@pytest.fixture
def loop():
    L = OfflineLoop()
    L.step()
    return L


def names(L):
    return L.cfg.joint_names


def time_to_reach(L, target, limit=10.0, stream=True):
    t = 0.0
    while t < limit:
        if stream:
            L.send(POSITION_MODE, names(L), position=target)
        L.run(0.01)
        t += 0.01
        if np.abs(L.arm_q - target).max() < TOL:
            return t
    return None


def test_holds_still_with_no_command(loop):
    q0 = loop.q
    loop.run(1.0)
    assert np.abs(loop.q - q0).max() < 1e-4


def test_position_1rad_move_converges_within_5s_at_default_ratio(loop):
    # j0: a move that stays clear of the avoidance shapes (raising j1 by 1 rad ends 4.5 cm from the
    # pedestal, where the repulsion leaves a Sawyer-like offset of ~0.2°)
    target = loop.arm_q + np.array([1.0, 0, 0, 0, 0, 0, 0])
    t = time_to_reach(loop, target)
    assert t is not None and t < 5.0
    loop.run(1.0)
    assert np.abs(loop.arm_q - target).max() < TOL / 3  # steady state well inside 0.5°


def peak_speed(L, target, joint, seconds=4.0):
    peak = 0.0
    for _ in range(int(seconds / 0.01)):
        L.send(POSITION_MODE, names(L), position=target)
        L.run(0.01)
        peak = max(peak, abs(L.state.local.velocity[joint]))
    return peak


@pytest.mark.parametrize("ratio", [0.05, 0.3, 0.9])
def test_speed_ratio_sets_peak_speed(ratio):
    L = OfflineLoop()
    L.step()
    L.set(speed_ratio=ratio)
    target = L.arm_q + np.array([1.2, 0, 0, 0, 0, 0, 0])
    vmax = L.cfg.limits.velocity[0]
    assert peak_speed(L, target, 0) == pytest.approx(ratio * vmax, rel=0.06)  # reaches the ratio, not more


def test_speed_ratio_zero_barely_moves(loop):
    loop.set(speed_ratio=0.0)
    q0 = loop.arm_q
    assert peak_speed(loop, q0 + np.array([1.2, 0, 0, 0, 0, 0, 0]), 0, seconds=1.0) < 0.01
    assert abs(loop.arm_q[0] - q0[0]) < 0.005


def test_speed_ratio_scales_motion_time(loop):
    target = loop.arm_q + np.array([0.8, 0, 0, 0, 0, 0, 0])
    slow = time_to_reach(loop, target)
    loop2 = OfflineLoop()
    loop2.step()
    loop2.set(speed_ratio=0.9)
    fast = time_to_reach(loop2, target)
    assert fast < 0.6 * slow


def test_joints_arrive_together(loop):
    start = loop.arm_q
    target = start + np.array([0.2, 0.8, 0, 0, 0, 0, 0])
    halfway = None
    for k in range(400):
        loop.send(POSITION_MODE, names(loop), position=target)
        loop.run(0.01)
        frac = (loop.arm_q[1] - start[1]) / 0.8
        if halfway is None and frac > 0.5:
            halfway = (loop.arm_q[0] - start[0]) / 0.2
    assert halfway == pytest.approx(0.5, abs=0.1)  # the short move is half done when the long one is


def test_single_position_command_keeps_being_tracked(loop):
    target = loop.arm_q + np.array([0, 0, 0, 0, 0.5, 0, 0])
    loop.send(POSITION_MODE, names(loop), position=target)  # once, like joint_position_keyboard
    loop.run(4.0)
    assert np.abs(loop.arm_q - target).max() < TOL


def test_unnamed_joints_keep_their_targets(loop):
    q0 = loop.arm_q
    loop.send(POSITION_MODE, ["right_j5"], position=[q0[5] + 0.3])
    loop.run(0.001)
    loop.send(POSITION_MODE, ["right_j0"], position=[q0[0] - 0.3])  # before the first finished
    loop.run(3.0)
    expect = q0.copy()
    expect[5] += 0.3
    expect[0] -= 0.3
    assert np.abs(loop.arm_q - expect).max() < TOL


def test_two_partial_commands_in_one_cycle_both_apply(loop):
    q0 = loop.arm_q
    loop.send(POSITION_MODE, ["right_j4"], position=[q0[4] + 0.2])
    loop.send(POSITION_MODE, ["right_j6"], position=[q0[6] - 0.2])
    loop.run(3.0)
    assert loop.arm_q[4] == pytest.approx(q0[4] + 0.2, abs=TOL)
    assert loop.arm_q[6] == pytest.approx(q0[6] - 0.2, abs=TOL)


def test_velocity_mode_moves_at_commanded_speed(loop):
    q0 = loop.arm_q
    vel = [0, 0, 0, 0, 0, 0, 0.5]
    loop.run(1.0, every=lambda: loop.send(VELOCITY_MODE, names(loop), velocity=vel), period=0.002)
    assert loop.arm_q[6] - q0[6] == pytest.approx(0.5, abs=0.06)
    assert np.abs(loop.arm_q[:6] - q0[:6]).max() < 0.01


def test_velocity_mode_stops_at_the_limit_and_leaves_it_at_once(loop):
    """Driven into a joint limit, the reference stops on it (no wind-up beyond) and the reverse
    command moves away immediately instead of first unwinding a hidden overshoot."""
    upper = loop.cfg.limits.upper[4]
    push = [0, 0, 0, 0, 2.5, 0, 0]
    loop.run(1.8, every=lambda: loop.send(VELOCITY_MODE, names(loop), velocity=push), period=0.005)
    assert loop.arm_q[4] == pytest.approx(upper, abs=0.02)
    assert loop.state.local.cmd_position[4] <= upper  # the reference stops on the limit
    assert loop.arm_q[4] <= upper + 5e-3  # (the arm may lag past it a little: the plant's stop is further out)
    at_limit = loop.arm_q[4]
    back = [0, 0, 0, 0, -2.5, 0, 0]
    loop.run(0.2, every=lambda: loop.send(VELOCITY_MODE, names(loop), velocity=back), period=0.005)
    assert at_limit - loop.arm_q[4] > 0.2  # at once, on an acceleration ramp (12 rad/s²: 0.24 rad in 0.2 s)


def test_velocity_stream_timeout_reverts_to_hold(loop):
    vel = [0, 0, 0, 0, 0, 0.4, 0]
    loop.run(0.5, every=lambda: loop.send(VELOCITY_MODE, names(loop), velocity=vel), period=0.01)
    moving_at = loop.arm_q
    loop.run(1.0)  # stream stopped: > 0.2 s → position hold at the then-current angles
    assert loop.state.local.mode[0] == POSITION_MODE
    assert loop.state.local.timeouts[0] == 1
    held = loop.arm_q
    assert abs(held[5] - moving_at[5]) < 0.4 * 0.3  # 0.2 s timeout + a jerk-limited stop
    loop.run(1.0)
    assert np.abs(loop.arm_q - held).max() < 3e-3  # stays put (dry-friction stick-slip of the integral < 0.2°)


def test_command_timeout_setting_is_used_and_clamped(loop):
    loop.set(command_timeout=0.8)
    vel = [0.2, 0, 0, 0, 0, 0, 0]
    loop.run(0.1, every=lambda: loop.send(VELOCITY_MODE, names(loop), velocity=vel))
    loop.run(0.5)
    assert loop.state.local.mode[0] == VELOCITY_MODE  # 0.5 s < 0.8 s
    loop.run(0.5)
    assert loop.state.local.mode[0] == POSITION_MODE
    loop.set(command_timeout=7.0)  # beyond the [0, 1] s range → 1 s
    loop.run(0.1, every=lambda: loop.send(VELOCITY_MODE, names(loop), velocity=vel))
    loop.run(1.1)
    assert loop.state.local.mode[0] == POSITION_MODE


def test_torque_mode_adds_gravity_compensation(loop):
    q0 = loop.arm_q
    zero = [0.0] * 7
    loop.run(1.0, every=lambda: loop.send(TORQUE_MODE, names(loop), effort=zero), period=0.01)
    assert np.abs(loop.arm_q - q0).max() < 0.05  # floats: gravity is compensated
    loop.run(0.5, every=lambda: loop.send(TORQUE_MODE, names(loop), effort=[0, 0, 0, 0, 0, 0, 0.5]))
    assert loop.arm_q[6] - q0[6] > 0.3  # the commanded torque accelerates the wrist


def test_gravity_suppression_sags_only_while_suppressed(loop):
    zero = [0.0] * 7

    def stream(suppress):
        loop.send(TORQUE_MODE, names(loop), effort=zero)
        if suppress:
            loop.event(MSG_SUPPRESS, SUPPRESS_GRAVITY)

    loop.run(0.5, every=lambda: stream(False), period=0.01)
    q1 = loop.arm_q
    loop.run(0.3, every=lambda: stream(True), period=0.05)  # 20 Hz suppression
    sag = np.abs(loop.arm_q - q1).max()
    assert sag > 0.05
    assert loop.state.local.gravity_suppressed[0] == 1.0
    loop.run(0.5, every=lambda: stream(False), period=0.01)  # suppression expires after 0.2 s
    assert loop.state.local.gravity_suppressed[0] == 0.0
    v = np.abs(loop.state.local.velocity[:7]).max()
    q2 = loop.arm_q
    loop.run(0.3, every=lambda: stream(False), period=0.01)
    assert np.abs(loop.arm_q - q2).max() < max(0.05, v * 0.3)


def test_trajectory_mode_tracks_and_extrapolates(loop):
    q0 = loop.arm_q
    w = 0.5  # rad/s ramp on j3 with matching acceleration 0

    t = [0.0]

    def cmd():
        pos = q0.copy()
        pos[3] += w * t[0]
        vel = np.zeros(7)
        vel[3] = w
        loop.send(TRAJECTORY_MODE, names(loop), position=pos, velocity=vel, acceleration=np.zeros(7))
        t[0] += 0.01

    loop.run(1.0, every=cmd, period=0.01)
    # the loop extrapolated between 100 Hz commands: the joint moves smoothly at the ramp speed
    assert loop.state.local.velocity[3] == pytest.approx(w, abs=0.05)
    assert loop.arm_q[3] - q0[3] == pytest.approx(w * 1.0, abs=0.03)


@pytest.mark.parametrize("given", ["positions only", "zero velocities"])
def test_trajectory_mode_with_positions_only_differences_them_into_velocities(loop, given):
    """The SDK's JTAS streams positions only when its goal has none (a robot that refused them left
    the arm standing); a zero velocity reference would damp the arm back by kd/kp x speed, the
    velocities the positions imply keep it on them."""
    q0 = loop.arm_q
    w = 0.4
    t = [0.0]
    lag = [0.0]

    def cmd():
        pos = q0.copy()
        pos[6] -= w * t[0]
        extra = {} if given == "positions only" else dict(velocity=np.zeros(7), acceleration=np.zeros(7))
        assert loop.send(TRAJECTORY_MODE, names(loop), position=pos, velocity=extra.get("velocity", []),
                         acceleration=extra.get("acceleration", [])).ok
        lag[0] = max(lag[0], loop.arm_q[6] - pos[6]) if t[0] > 0.3 else 0.0
        t[0] += 0.01

    loop.run(1.0, every=cmd, period=0.01)
    if given == "positions only":
        assert loop.state.local.velocity[6] == pytest.approx(-w, abs=0.01) and lag[0] < 0.002
    else:  # the sender said "velocity 0": that is what it gets (damped, the arm lags behind the points)
        assert lag[0] > 0.005


def test_stale_arrays_of_other_modes_are_ignored(loop):
    q0 = loop.arm_q
    target = q0 + np.array([0.3, 0, 0, 0, 0, 0, 0])
    # Limb reuses one message: old velocity/acceleration arrays (different length) ride along
    v = loop.send(POSITION_MODE, names(loop), position=target, velocity=[1.0] * 3, acceleration=[5.0])
    assert v.ok
    loop.run(3.0)
    assert np.abs(loop.arm_q - target).max() < TOL


@pytest.mark.parametrize("bad", [
    dict(mode=POSITION_MODE, names=["right_j0"], position=[float("nan")]),
    dict(mode=POSITION_MODE, names=["right_j0"], position=[float("inf")]),
    dict(mode=POSITION_MODE, names=["right_j0", "right_j1"], position=[0.1]),
    dict(mode=POSITION_MODE, names=["right_j9"], position=[0.1]),
    dict(mode=POSITION_MODE, names=["right_j0", "right_j0"], position=[0.1, 0.2]),
    dict(mode=7, names=["right_j0"], position=[0.1]),
    dict(mode=VELOCITY_MODE, names=["right_j0"], velocity=[]),
    dict(mode=TRAJECTORY_MODE, names=["right_j0"], position=[0.1], velocity=[0.0], acceleration=[float("nan")]),
    dict(mode=POSITION_MODE, names=[], position=[]),
    dict(mode=POSITION_MODE, names=["head_pan"], position=[0.5]),
    dict(mode=TRAJECTORY_MODE, names=["right_j3"], position=[0.0], velocity=[0.0], acceleration=[1e3]),
])
def test_bad_input_is_rejected_and_the_arm_holds(loop, bad):
    q0 = loop.arm_q
    target = q0 + np.array([0, 0, 0, 0, 0.3, 0, 0])
    loop.send(POSITION_MODE, names(loop), position=target)
    loop.run(0.2)
    bad = dict(bad)
    v = loop.send(bad.pop("mode"), bad.pop("names"), **bad)
    assert not v.ok and v.error
    loop.run(3.0)  # the accepted command is still tracked, nothing else moved
    assert np.abs(loop.arm_q - target).max() < TOL
    assert loop.state.local.error[0] == 0.0 and loop.state.local.commands[0] == 1


def test_reject_messages_name_the_field(loop):
    assert "position[0]" in loop.send(POSITION_MODE, ["right_j2"], position=[float("nan")]).error
    assert "names[1]" in loop.send(POSITION_MODE, ["right_j2", "elbow"], position=[0, 0]).error
    assert "velocity" in loop.send(VELOCITY_MODE, ["right_j2"], velocity=[1, 2]).error


def test_out_of_range_position_is_clamped_with_warning(loop):
    v = loop.send(POSITION_MODE, ["right_j4"], position=[10.0])
    assert v.ok and "clamped" in v.warnings[0] and "position[0]" in v.warnings[0]
    loop.run(4.0)
    assert loop.arm_q[4] == pytest.approx(loop.cfg.limits.upper[4], abs=TOL)


def test_effort_limit_enforced(loop):
    v = loop.send(TORQUE_MODE, ["right_j6"], effort=[100.0])
    assert v.ok and v.warnings
    loop.run(0.05)
    assert abs(loop.cycle.adapter.command.effort[6]) <= loop.cfg.limits.effort[6] + 1e-9


def test_disable_holds_and_ignores_commands_then_enable_resumes(loop):
    loop.event(MSG_ENABLE, 0)
    loop.run(0.05)
    assert loop.state.local.enabled[0] == 0.0
    q0 = loop.arm_q
    target = q0 + np.array([0.5, 0, 0, 0, 0, 0, 0])
    loop.run(1.0, every=lambda: loop.send(POSITION_MODE, names(loop), position=target))
    assert np.abs(loop.arm_q - q0).max() < 1e-3  # brakes: no motion while disabled
    loop.event(MSG_ENABLE, 1)
    assert time_to_reach(loop, target) is not None


def test_stop_reset_enable_sequence(loop):
    loop.event(MSG_STOP)
    loop.run(0.01)
    s = loop.state.local
    assert (s.enabled[0], s.stopped[0], s.ready[0]) == (0.0, 1.0, 0.0)
    loop.event(MSG_ENABLE, 1)  # refused while stopped
    loop.run(0.01)
    assert s.enabled[0] == 0.0
    loop.event(MSG_RESET)
    loop.run(0.01)
    assert (s.enabled[0], s.stopped[0], s.error[0], s.estop_button[0], s.estop_source[0]) == (0, 0, 0, 0, 0)
    loop.event(MSG_ENABLE, 1)
    loop.run(0.01)
    assert (s.enabled[0], s.ready[0]) == (1.0, 1.0)


def test_estop_press_release_reset(loop):
    s = loop.state.local
    loop.event(MSG_ESTOP, 1)
    loop.run(0.01)
    assert (s.enabled[0], s.stopped[0], s.estop_button[0], s.estop_source[0]) == (0, 1, 1, 1)
    loop.event(MSG_RESET)  # refused while pressed
    loop.run(0.01)
    assert s.stopped[0] == 1.0
    loop.event(MSG_ESTOP, 0)
    loop.run(0.01)
    assert (s.stopped[0], s.estop_button[0]) == (1.0, 3.0)  # RELEASED, still stopped
    loop.event(MSG_RESET)
    loop.run(0.01)
    assert (s.stopped[0], s.estop_button[0], s.estop_source[0], s.enabled[0]) == (0, 0, 0, 0)


def test_head_is_held_actively_while_the_arm_is_torque_driven(loop):
    h0 = loop.q[7]
    d = loop.backend.d
    hd = loop.backend._dadr[7]
    zero = [0.0] * 7

    def torque_and_push():
        loop.send(TORQUE_MODE, names(loop), effort=zero)
        d.qfrc_applied[hd] = 0.2  # a push on the head (no gravity load on its vertical axis)

    loop.run(1.0, every=torque_and_push, period=0.01)
    assert loop.state.local.mode[0] == TORQUE_MODE
    assert loop.q[7] == pytest.approx(h0, abs=0.05)  # a passive head would run into its stop at 0.9 rad
    d.qfrc_applied[hd] = 0.0


def test_head_pan_is_rejected_on_the_limb_topic(loop):
    v = loop.send(POSITION_MODE, ["head_pan"], position=[0.5])
    assert not v.ok and "names[0] 'head_pan'" in v.error and "own command topic" in v.error


def test_trajectory_acceleration_beyond_limits_is_rejected_naming_the_field(loop):
    v = loop.send(TRAJECTORY_MODE, ["right_j0", "right_j3"], position=[0.0, 1.0], velocity=[0.0, 0.0],
                  acceleration=[1.0, 1e3])
    assert not v.ok and "acceleration[1] (right_j3)" in v.error
    assert loop.send(TRAJECTORY_MODE, ["right_j3"], position=[loop.arm_q[3]], velocity=[0.0],
                     acceleration=[9.9]).ok
