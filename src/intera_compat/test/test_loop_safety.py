"""Defects of the first robot, each pinned by behaviour: non-finite values, interpolator failure,
reference wind-up, following error, TORQUE_MODE limits, measured effort, publisher decimation."""
import numpy as np
import pytest
from ruckig import Result

from intera_compat.data import faults
from intera_compat.data.codes import POSITION_MODE, TORQUE_MODE, TRAJECTORY_MODE
from intera_compat.loop.layouts import (MSG_ENABLE, MSG_ESTOP, MSG_RESET, MSG_SIM_FAULT, MSG_SUPPRESS,
                                        SUPPRESS_CONTACT_SAFETY)
from intera_compat.loop.offline import OfflineLoop
from intera_compat.loop.process import Ticker
from intera_compat.ros.wrench import WrenchEstimator

ARM = [f"right_j{i}" for i in range(7)]


class RecordingBackend:
    """Wraps the sim backend and remembers every command it was sent."""

    def __init__(self, inner):
        self.inner = inner
        self.sent_finite = True

    def __getattr__(self, k):
        return getattr(self.inner, k)

    def write(self, command):
        self.sent_finite &= bool(np.isfinite(command.effort).all())
        self.inner.write(command)


@pytest.fixture
def loop():
    L = OfflineLoop()
    L.step()
    return L


def faulted(L, code):
    s = L.state.local
    return s.error[0] == 1.0 and s.stopped[0] == 1.0 and s.enabled[0] == 0.0 and s.fault_code[0] == code


@pytest.mark.parametrize("mode,code", [(POSITION_MODE, faults.FAULT_INTERPOLATOR),
                                       (TRAJECTORY_MODE, faults.FAULT_NON_FINITE_SETPOINT)])
def test_nan_that_bypasses_validation_holds_and_faults(loop, mode, code):
    """Defence in depth: a NaN posted straight into the ring (not through the validator)."""
    q0 = loop.q
    n = loop.cycle.n
    pos = np.r_[loop.arm_q, 0.0]
    pos[2] = np.nan
    mask = np.zeros(n, bool)
    mask[:7] = True
    loop.channel.post_command(mode, mask, {"position": pos, "velocity": np.zeros(n), "acceleration": np.zeros(n)})
    loop.run(1.0)
    assert faulted(loop, code)
    assert np.isfinite(loop.state.local.cmd_effort).all()
    assert np.abs(loop.q - q0).max() < 2e-3
    assert loop.trajectories.faults and loop.trajectories.faults[0][0] == code


def test_nan_from_the_control_law_never_reaches_the_backend():
    L = OfflineLoop()
    L.backend = L.cycle.backend = L.cycle.adapter.backend = RecordingBackend(L.backend)
    L.step()
    q0 = L.q
    L.cycle.law.kp[3] = np.nan  # a broken law
    L.run(0.5)
    assert faulted(L, faults.FAULT_NON_FINITE_OUTPUT)
    assert L.backend.sent_finite
    L.cycle.law.kp[3] = 900.0
    assert np.abs(L.q - q0).max() < 5e-3


def test_huge_trajectory_acceleration_posted_raw_is_clamped_not_limp(loop):
    q0 = loop.q
    n = loop.cycle.n
    mask = np.zeros(n, bool)
    mask[:7] = True
    arrays = {"position": np.r_[loop.arm_q, 0.0], "velocity": np.zeros(n), "acceleration": np.full(n, 1e308)}
    arrays["acceleration"][7] = 0.0
    for _ in range(20):
        loop.channel.post_command(TRAJECTORY_MODE, mask, arrays)
        loop.run(0.01)
    assert np.isfinite(loop.state.local.cmd_effort).all()
    assert np.all(np.abs(loop.state.local.cmd_acceleration) <= loop.cfg.limits.accel + 1e-9)
    assert np.abs(loop.q - q0).max() < 0.6  # the following-error fault stops it long before a violent move
    assert loop.state.local.fault_code[0] in (0, faults.FAULT_FOLLOWING_ERROR)


class FailingRuckig:
    def update(self, inp, out):
        return Result.ErrorInvalidInput


def test_interpolator_failure_holds_where_the_arm_is_and_faults(loop):
    target = loop.arm_q + np.array([0.6, 0, 0, 0, 0, 0, 0])
    loop.send(POSITION_MODE, ARM, position=target)
    loop.run(0.6)  # moving
    here = loop.q
    loop.cycle.position.interp.otg = FailingRuckig()
    loop.send(POSITION_MODE, ARM, position=target + 0.01)  # new input → recalculation fails
    loop.run(0.002)
    assert faulted(loop, faults.FAULT_INTERPOLATOR)
    loop.run(1.0)
    assert np.abs(loop.q - here).max() < 0.05  # stopped near where it was, no jump to the target
    assert np.abs(loop.state.local.velocity).max() < 1e-3


def test_blocked_arm_does_not_wind_up_and_snap_when_released(loop):
    m = loop.backend.m
    jid = m.joint("right_j0").id
    q0 = loop.arm_q
    free_range = m.jnt_range[jid].copy()
    m.jnt_range[jid] = [free_range[0], q0[0] + 0.05]  # an obstacle 0.05 rad away
    target = q0 + np.array([1.0, 0, 0, 0, 0, 0, 0])
    loop.send(POSITION_MODE, ARM, position=target)
    loop.run(3.0)  # unblocked it would have arrived by now
    s = loop.state.local
    assert s.position[0] < q0[0] + 0.06
    assert abs(s.cmd_position[0] - s.position[0]) <= loop.cfg.control["following_error"]["window"] + 1e-9  # reference kept inside the window
    assert s.error[0] == 0.0  # clamping is not a fault
    m.jnt_range[jid] = free_range  # released
    peak = 0.0
    for _ in range(500):
        loop.run(0.01)
        peak = max(peak, abs(loop.state.local.velocity[0]))
    assert np.abs(loop.arm_q - target).max() < 0.01  # still goes to its target...
    assert peak < 0.3 * loop.cfg.limits.velocity[0] * 1.15  # ...at the commanded speed, no snap


def test_streamed_reference_far_from_the_arm_faults_without_moving(loop):
    q0 = loop.q
    far = loop.arm_q + np.array([0, 0, 0, 0.8, 0, 0, 0])
    loop.send(TRAJECTORY_MODE, ARM, position=far, velocity=np.zeros(7), acceleration=np.zeros(7))
    loop.run(0.5)
    assert faulted(loop, faults.FAULT_FOLLOWING_ERROR) and loop.state.local.fault_joint[0] == 3
    assert np.abs(loop.q - q0).max() < 0.02
    loop.event(MSG_RESET)
    loop.event(MSG_ENABLE, 1)
    loop.run(0.05)
    assert loop.state.local.enabled[0] == 1.0 and loop.state.local.fault_code[0] == 0


def test_torque_mode_keeps_the_arm_inside_limits_and_speed():
    L = OfflineLoop()
    L.step()
    lim = L.cfg.limits
    L.backend.set_state(L.cfg.full_pose("neutral") + np.r_[0, 0, 0, 0, 0, 0, 1.0, 0])
    L.step()
    tau = [0, 0, 0, 0, 0, 0, 3.0]  # spins the last wrist joint toward its upper limit
    vpeak, qpeak = 0.0, -10.0
    for _ in range(300):
        L.send(TORQUE_MODE, ARM, effort=tau)
        L.run(0.01)
        vpeak = max(vpeak, abs(L.state.local.velocity[6]))
        qpeak = max(qpeak, L.state.local.position[6])
    assert qpeak < lim.upper[6]
    assert vpeak < lim.velocity[6] * 1.15


def test_published_effort_is_measured_not_commanded(loop):
    """Free motion: the torque residual (and so the endpoint wrench estimate) is near zero."""
    est = WrenchEstimator(loop.rm, "right_hand")
    target = loop.arm_q + np.array([1.2, 0, 0, 0, 0, 0, 0])
    loop.send(POSITION_MODE, ARM, position=target)
    worst = 0.0
    for k in range(150):
        loop.run(0.01)
        s = loop.state.local
        w = est.update(s.position.copy(), s.velocity.copy(), s.cmd_acceleration.copy(), s.effort.copy())
        if k > 50:  # cruising at constant speed
            worst = max(worst, np.linalg.norm(w[:3]))
    assert abs(loop.state.local.velocity[0]) > 0.2
    assert worst < 0.3  # N; the commanded torque includes ~0.3 Nm of friction → ~1 N of phantom force


def test_publisher_decimation_follows_loop_time_not_cycle_count():
    for dt in (0.001, 0.002, 0.004):
        t = Ticker(100.0)
        fired = sum(t.due(k * dt) for k in range(int(round(10.0 / dt))))
        assert fired == pytest.approx(1000, abs=1)
    t = Ticker(100.0)
    times = [k * 0.001 for k in range(1000)] + [2.0 + k * 0.001 for k in range(1000)]  # a 1 s stall
    assert sum(t.due(x) for x in times) == pytest.approx(200, abs=2)  # no burst to catch up


class BrokenReading:
    """Wraps the sim backend; while ``broken`` the reading of ``joint`` is NaN (the arm itself is fine)."""

    def __init__(self, inner, joint):
        self.inner, self.joint, self.broken = inner, joint, False
        self.sent_finite = True

    def __getattr__(self, k):
        return getattr(self.inner, k)

    def read(self, state):
        self.inner.read(state)
        if self.broken:
            state.position[self.joint] = np.nan
            state.velocity[self.joint] = np.nan

    def write(self, command):
        self.sent_finite &= bool(np.isfinite(command.block).all())
        self.inner.write(command)

    def true_q(self):
        return self.inner.d.qpos[self.inner._qadr].copy()


def test_a_broken_joint_reading_brakes_the_arm_instead_of_replaying_a_torque():
    L = OfflineLoop()
    b = L.backend = L.cycle.backend = L.cycle.adapter.backend = BrokenReading(L.backend, 1)
    L.step()
    target = L.arm_q + np.array([0.8, 0.4, 0, 0.4, 0, 0, 0])
    L.send(POSITION_MODE, ARM, position=target)
    L.run(0.8)  # mid-move
    assert np.abs(L.state.local.velocity[:7]).max() > 0.2
    at_fault = b.true_q()
    b.broken = True
    L.run(0.01)
    assert faulted(L, faults.FAULT_NON_FINITE_STATE) and L.state.local.fault_joint[0] == 1
    assert np.isfinite(L.state.local.position).all()  # the last finite reading stands in
    L.run(0.9)  # (after ~1.1 s the blind shoulder has sagged the hand onto the pedestal: a real contact)
    assert b.sent_finite
    q = b.true_q()
    assert np.abs(q - at_fault)[[0, 2, 3, 4, 5, 6]].max() < 0.1  # braked where it was, no open-loop drift
    # (the blind joint itself only gets gravity compensation at its last known angle)
    b.broken = False
    L.run(0.1)
    L.event(MSG_RESET)
    L.event(MSG_ENABLE, 1)
    L.run(0.5)
    s = L.state.local
    assert s.enabled[0] == 1.0 and s.error[0] == 0.0 and s.fault_code[0] == 0  # no fault left behind
    here = L.q
    L.run(1.0)
    assert np.abs(L.q - here).max() < 2e-3


def push(L, joint, torque, seconds, every=None):
    dof = L.backend._dadr[joint]
    L.backend.d.qfrc_applied[dof] = torque
    L.run(seconds, every)
    L.backend.d.qfrc_applied[dof] = 0.0


def test_a_held_arm_pushed_away_comes_back_at_a_walking_pace_not_a_snap(loop):
    # (with contact safety on, the push is a squish and the arm stops where it was pushed to:
    # test_collision_detection; here the hold itself)
    def no_contact_safety():
        loop.event(MSG_SUPPRESS, SUPPRESS_CONTACT_SAFETY)

    q0 = loop.arm_q
    no_contact_safety()  # (from the push's first cycle on: a detected collision would brake the hold's target away)
    push(loop, 0, 150.0, 0.4, no_contact_safety)  # stronger than the joint's effort limit: it gives way
    away = loop.arm_q[0] - q0[0]
    assert away > 0.2
    for _ in range(200):  # it coasts on (up to its hard stop beyond the limit) until the hold catches it
        loop.run(0.01)
        if abs(loop.state.local.velocity[0]) < 0.05:
            break
        no_contact_safety()
    peak = 0.0
    for k in range(800):
        loop.run(0.01)
        if k % 10 == 0:
            no_contact_safety()
        peak = max(peak, abs(loop.state.local.velocity[0]))
    s = loop.state.local
    assert s.error[0] == 0.0  # a displaced hold is not a fault
    assert abs(loop.arm_q[0] - q0[0]) < 0.01  # the hold keeps its target
    assert peak < 1.5  # about kp·window/kd = 0.75 rad/s, not a spring released from far away


def test_brakes_hold_where_the_arm_was_pushed_to(loop):
    loop.event(MSG_ENABLE, 0)
    loop.run(0.05)
    q0 = loop.arm_q
    push(loop, 0, 150.0, 0.4)  # (it coasts on to its hard stop, beyond the joint's limit)
    loop.run(1.0)
    away = loop.arm_q[0]
    assert away > loop.cfg.limits.upper[0] + 0.1  # past the joint's limit (the plant's stop is further out)
    loop.run(2.0)
    assert abs(loop.arm_q[0] - away) < loop.cfg.control["following_error"]["window"] + 0.02  # slipped, stays
    away = loop.arm_q[0]
    loop.event(MSG_ENABLE, 1)
    loop.run(1.0)
    assert abs(loop.arm_q[0] - away) < 0.01  # enabled there: held where it is, not pulled in to the limit
    assert loop.cycle.upper[0] > away - 0.01


@pytest.mark.parametrize("stop", ["estop", "safety_estop", "disable"])
def test_brakes_stop_a_moving_arm_without_springing_back(loop, stop):
    """Brakes stop the arm from where it is measured, at the joints' acceleration limits, and hold where it
    stopped: stopping dead at the measurement pulled a 0.5 rad/s arm back 5 mrad and let it creep."""
    from intera_compat.data.codes import VELOCITY_MODE
    from intera_compat.loop.layouts import MSG_SAFETY_ESTOP
    L = loop
    for _ in range(60):  # right_j0 at 0.5 rad/s
        L.send(VELOCITY_MODE, ARM, velocity=[0.5, 0, 0, 0, 0, 0, 0])
        L.run(0.01)
    assert abs(L.state.local.velocity[0] - 0.5) < 0.02
    q_press = L.arm_q[0]
    {"estop": lambda: L.event(MSG_ESTOP, 1), "safety_estop": lambda: L.event(MSG_SAFETY_ESTOP, 1),
     "disable": lambda: L.event(MSG_ENABLE, 0)}[stop]()
    q, v = [], []
    for _ in range(1500):
        L.step()
        q.append(L.arm_q[0])
        v.append(L.state.local.velocity[0])
    q, v = np.array(q), np.array(v)
    assert (L.state.local.enabled[0] == 0.0) == (stop != "safety_estop")  # (the latch holds an enabled arm)
    amax = L.cfg.limits.accel[0]
    assert q.max() - q_press < 0.5 ** 2 / (2 * amax) + 0.5 * 0.04  # its stopping distance, and a bite of jerk
    assert v.min() > -0.01  # never reversing
    assert q.max() - q[-1] < 5e-4 and abs(v[-1]) < 1e-3  # held where it stopped


def _fault_at_speed(L, fault):
    """right_j0, j4, j5, j6 moving fast in VELOCITY mode, then ``fault`` (or a disable); the joints' positions,
    speeds and reference accelerations over the next 1.5 s, and the trajectory results."""
    from intera_compat.data.codes import VELOCITY_MODE
    n = L.cycle.n
    for _ in range(100):
        L.send(VELOCITY_MODE, ARM, velocity=FAST)
        L.run(0.01)
    assert np.abs(L.state.local.velocity[:7] - FAST).max() < 0.02
    if fault == "non_finite_setpoint":  # posted straight into the ring (not through the validator)
        pos = np.r_[L.arm_q, 0.0]
        pos[2] = np.nan
        mask = np.zeros(n, bool)
        mask[:7] = True
        L.channel.post_command(TRAJECTORY_MODE, mask, {"position": pos, "velocity": np.r_[FAST, 0.0],
                                                       "acceleration": np.zeros(n)})
    elif fault == "following_error":  # a streamed point 1.5 rad from the arm on right_j2
        q = L.arm_q
        q[2] += 1.5
        assert L.send(TRAJECTORY_MODE, ARM, position=q, velocity=np.zeros(7), acceleration=np.zeros(7)).ok
    else:
        L.event(MSG_ENABLE, 0)
    q, v, a = [], [], []
    for _ in range(1500):
        L.step()
        s = L.state.local
        q.append(L.arm_q[:7])
        v.append(s.velocity[:7].copy())
        a.append(s.cmd_acceleration[:7].copy())
    d = np.sign(FAST)
    return np.array(q) * d, np.array(v) * d, np.array(a) * d


FAST = np.array([1.5, 0.0, 0.0, 0.0, -2.0, 0.07, -0.9])  # rad/s


@pytest.mark.parametrize("fault,code", [("non_finite_setpoint", faults.FAULT_NON_FINITE_SETPOINT),
                                        ("following_error", faults.FAULT_FOLLOWING_ERROR)])
def test_a_fault_at_speed_brakes_as_a_disable_does_never_speeding_the_arm_up(fault, code):
    """A fault raised by the setpoint stage (a source's non-finite value, a stream point far from the arm) hands the
    arm to the brakes in that very cycle, from its measured state: the same stop as a disable's from the same
    state. It was held at the measurement with nothing moving for that cycle (a damping impulse); then the brakes'
    first step, taken by the joint limits for a double one, was chased at the acceleration limit along the motion
    (review: right_j5 0.07 -> 0.20 rad/s, 23 mrad to stop instead of 7)."""
    L = OfflineLoop()
    L.step()
    q, v, a = _fault_at_speed(L, fault)
    s = L.state.local
    assert faulted(L, code)
    moving = FAST != 0.0
    assert (v[:, moving].max(axis=0) <= np.abs(FAST[moving]) + 2e-3).all()  # never faster than at the fault
    assert a[:30, moving].max() <= 1e-9  # the reference never speeds up along the motion
    ref = OfflineLoop()
    ref.step()
    q_off, _, _ = _fault_at_speed(ref, "disable")
    assert s.error[0] == 1.0 and ref.state.local.error[0] == 0.0
    assert np.abs((q[-1] - q[0]) - (q_off[-1] - q_off[0]))[moving].max() < 1e-3  # a disable's stopping distance
    assert (q[-1] - q.max(axis=0))[moving].min() > -1.5e-3  # at rest where it stopped (the brakes' own settling)


def test_a_trajectory_a_setpoint_fault_ends_is_aborted_for_the_fault(loop):
    """(not as "the robot was disabled": the brakes that take the arm in the fault's cycle end it too)"""
    from intera_compat.data import codes as T
    q0 = loop.arm_q
    q1 = q0 + np.array([0.5, -0.3, 0.2, 0.4, -0.5, 0.3, 0.8])
    t = np.linspace(0.0, 2.0, 41)
    x = t / 2.0
    p, dp, ddp = 10 * x ** 3 - 15 * x ** 4 + 6 * x ** 5, (30 * x ** 2 - 60 * x ** 3 + 30 * x ** 4) / 2.0, \
        (60 * x - 180 * x ** 2 + 120 * x ** 3) / 4.0
    tid = loop.trajectories.execute(t, q0 + np.outer(p, q1 - q0), np.outer(dp, q1 - q0), np.outer(ddp, q1 - q0))
    loop.run(0.8)
    loop.cycle.trajectory.traj.q[:, 3] = np.nan  # (the source's own sample goes non-finite mid-motion)
    loop.run(0.5)
    r = loop.trajectories.results[tid]
    assert faulted(loop, faults.FAULT_NON_FINITE_SETPOINT)
    assert (r.status, r.reason) == (T.ABORTED, T.R_FAULT)


def test_a_stream_that_times_out_braking_hard_comes_to_rest_without_running_back(loop):
    """The command timeout's stop from a reference braking at the acceleration limit at low speed: ruckig's
    jerk-limited stop passed zero velocity and came back 50 mrad (fuzz rig, reversal); the joint rests where its
    velocity reaches zero."""
    L = loop
    L.set(command_timeout=0.02)
    q = L.arm_q
    v, a = np.zeros(7), np.zeros(7)
    for speed in np.linspace(0.02, 0.3, 15):  # a stream speeding right_j0 up
        q[0] += speed * 0.01
        v[0] = speed
        assert L.send(TRAJECTORY_MODE, ARM, position=q, velocity=v, acceleration=a).ok
        L.run(0.01)
    a[0] = -L.cfg.limits.accel[0]  # its last point: braking at the limit
    assert L.send(TRAJECTORY_MODE, ARM, position=q, velocity=v, acceleration=a).ok
    timeouts = L.cycle.counts["timeouts"]
    ref, meas = [], []
    for _ in range(2000):
        L.step()
        ref.append(L.state.local.cmd_position[0])
        meas.append(L.state.local.position[0])
    assert L.cycle.counts["timeouts"] == timeouts + 1  # (the stop is the timeout's)
    ref, meas = np.array(ref), np.array(meas)
    assert ref.max() - ref[-1] < 1e-4  # (was 0.050)
    assert meas.max() - meas[-1] < 1e-3


def test_a_stream_that_times_out_while_the_limits_brake_it_onto_a_joint_limit_stays_there(loop):
    """A stream driving right_j0 into its upper limit times out while ``joint_limits`` brakes the reference onto it:
    the hold's stop from that shaped reference ran back 65 mrad from the limit (review)."""
    L = loop
    target = L.arm_q
    target[0] = 2.6
    L.run(3.0, every=lambda: L.send(POSITION_MODE, ARM, position=target))
    L.set(command_timeout=0.02)
    q = L.state.local.cmd_position[:7].copy()
    v, a = np.zeros(7), np.zeros(7)
    v[0] = 1.0
    while q[0] < 3.03:  # (its last point 0.02 rad short of the limit, at 1 rad/s)
        q[0] += 0.01
        assert L.send(TRAJECTORY_MODE, ARM, position=q, velocity=v, acceleration=a).ok
        L.run(0.01)
    timeouts = L.cycle.counts["timeouts"]
    ref = []
    for _ in range(800):
        L.step()
        ref.append(L.state.local.cmd_position[0])
    ref = np.array(ref)
    assert L.cycle.counts["timeouts"] == timeouts + 1
    assert ref.max() <= L.cfg.limits.upper[0] + 1e-6
    assert ref.max() - ref[-1] < 1e-4  # (was 65 mrad)


def reference_accel(L, seconds, every=None):
    """Peak |second difference| / dt² of the published setpoint position, and peak |effort| / limit."""
    qs, worst_e = [], 0.0
    n = int(round(seconds / L.dt))
    for k in range(n):
        if every is not None and k % 10 == 0:
            every()
        L.step()
        qs.append(L.state.local.cmd_position[:7].copy())
        worst_e = max(worst_e, float(np.max(np.abs(L.state.local.effort[:7]) / L.cfg.limits.effort[:7])))
    a = np.abs(np.diff(np.array(qs), 2, axis=0)) / L.dt ** 2
    return a.max(axis=0), worst_e


def test_velocity_step_from_rest_and_into_a_limit_stays_within_the_acceleration_limit(loop):
    from intera_compat.data.codes import VELOCITY_MODE
    lim = loop.cfg.limits
    v = np.zeros(7)
    v[4] = lim.velocity[4]  # full speed at once, toward the upper limit (about 3 rad away)
    acc, effort = reference_accel(loop, 2.5, lambda: loop.send(VELOCITY_MODE, ARM, velocity=v))
    assert acc[4] <= lim.accel[4] * 1.15  # a ramp, and a braked stop on the limit (was: a step, a dead stop)
    assert abs(loop.arm_q[4] - lim.upper[4]) < 0.02
    assert effort < 0.8
    assert loop.state.local.error[0] == 0.0


def test_a_stream_that_starts_at_full_speed_is_ramped(loop):
    lim = loop.cfg.limits
    q0 = loop.arm_q
    v = np.zeros(7)
    v[0] = lim.velocity[0]
    t0 = [loop.cycle.now]

    def stream():
        tau = loop.cycle.now - t0[0]
        loop.send(TRAJECTORY_MODE, ARM, position=q0 + v * tau, velocity=v, acceleration=np.zeros(7))

    acc, effort = reference_accel(loop, 1.5, stream)
    assert acc[0] <= lim.accel[0] * 1.15
    assert effort < 0.8
    s = loop.state.local
    assert s.error[0] == 0.0  # the shaping lag is no following error
    tau = loop.cycle.now - t0[0] - 0.01
    assert abs(s.position[0] - (q0[0] + v[0] * tau)) < 0.05  # caught up with the stream


def test_leaving_torque_mode_while_moving_stops_where_the_arm_is(loop):
    """Hand-guided (zero torque) at 0.3 rad/s, then POSITION to the current angles (exit_control_mode)."""
    lim = loop.cfg.limits
    q = loop.cfg.full_pose("neutral").copy()
    v = np.zeros(8)
    v[0] = 0.3
    loop.backend.set_state(q, v)
    for _ in range(5):
        loop.send(TORQUE_MODE, ARM, effort=[0.0] * 7)
        loop.step()
    here = loop.arm_q
    loop.send(POSITION_MODE, ARM, position=here)
    peak, travel = 0.0, 0.0
    for _ in range(150):
        loop.run(0.01)
        peak = max(peak, abs(loop.state.local.velocity[0]))
        travel = max(travel, abs(loop.arm_q[0] - here[0]))
    assert peak < 0.3 * lim.velocity[0] * 1.15  # never faster than the speed ratio allows
    assert travel < 0.05 and abs(loop.arm_q[0] - here[0]) < 0.002


def test_switching_from_a_moving_position_command_to_velocity_zero_decelerates(loop):
    from intera_compat.data.codes import VELOCITY_MODE
    lim = loop.cfg.limits
    loop.set(speed_ratio=1.0)
    loop.send(POSITION_MODE, ARM, position=loop.arm_q + np.array([1.5, 0, 0, 0, 0, 0, 0]))
    loop.run(0.5)
    assert abs(loop.state.local.cmd_velocity[0]) > 1.0
    acc, effort = reference_accel(loop, 0.5, lambda: loop.send(VELOCITY_MODE, ARM, velocity=np.zeros(7)))
    assert acc[0] <= lim.accel[0] * 1.15
    assert abs(loop.state.local.velocity[0]) < 0.05


def test_a_partial_torque_command_leaves_the_other_joints_held(loop):
    q0 = loop.arm_q

    def partial():
        loop.send(TORQUE_MODE, ["right_j5"], effort=[0.0])

    dof = loop.backend._dadr[0]
    loop.backend.d.qfrc_applied[dof] = 10.0  # a disturbance on a joint the command does not name
    loop.run(1.0, partial)
    loop.backend.d.qfrc_applied[dof] = 0.0
    assert abs(loop.arm_q[0] - q0[0]) < 0.03  # still position-controlled, not limp


def test_commands_in_the_enable_cycle_are_executed(loop):
    loop.event(MSG_ENABLE, 0)
    loop.run(0.05)
    target = loop.arm_q + np.array([0, 0, 0, 0, 0, 0.2, 0])
    loop.event(MSG_ENABLE, 1)
    loop.send(POSITION_MODE, ARM, position=target)  # same cycle as the enable
    loop.run(3.0)
    assert np.abs(loop.arm_q - target).max() < 0.01
    loop.event(MSG_ENABLE, 0)
    loop.run(0.05)
    loop.event(MSG_ENABLE, 1)
    tid = loop.trajectories.execute([1.0], [target - np.array([0, 0, 0, 0, 0, 0.2, 0])])
    res = loop.trajectories.wait(tid, 5.0, step=loop.step, dt=loop.dt)
    assert res is not None and res.name == "SUCCEEDED"


# ---- faults the simulated arm reports (/robot/sim/inject_fault) and the E-stop button ------------------------------
def test_a_simulated_fault_stops_the_robot_until_it_is_over_and_reset(loop):
    from intera_compat.hardware.sim import fault_words
    L = loop
    L.event(MSG_SIM_FAULT, *fault_words("protective_stop", 0.3))
    L.run(0.01)
    assert faulted(L, faults.FAULT_PROTECTIVE_STOP)
    L.event(MSG_RESET)
    L.run(0.05)
    assert L.state.local.stopped[0] == 1.0  # the arm still reports it: the reset does not take
    L.run(0.3)
    L.event(MSG_RESET)
    L.run(0.01)
    assert L.state.local.stopped[0] == 0.0 and L.state.local.error[0] == 0.0
    L.event(MSG_ENABLE, 1)
    L.run(0.01)
    assert L.state.local.enabled[0] == 1.0


def test_a_pressed_estop_survives_a_fault_and_the_arms_own_estop_ending(loop):
    from intera_compat.hardware.sim import fault_words
    L = loop
    L.event(MSG_ESTOP, 1)
    L.run(0.01)
    L.event(MSG_SIM_FAULT, *fault_words("link_lost", 0.1))  # (a fault while the button is held)
    L.event(MSG_SIM_FAULT, *fault_words("hardware_estop", 0.1))  # (replaces it: the arm's own button, 0.1 s)
    L.run(0.3)
    assert L.state.local.estop_button[0] == 1  # the robot's button is still held
    L.event(MSG_RESET)
    L.run(0.01)
    assert L.state.local.stopped[0] == 1.0  # no reset while it is
    L.event(MSG_ESTOP, 0)
    L.run(0.01)
    assert L.state.local.estop_button[0] == 3  # released: now a reset takes
    L.event(MSG_RESET)
    L.run(0.01)
    assert L.state.local.stopped[0] == 0.0


@pytest.mark.parametrize("fault, duration, field", [("meltdown", 1.0, "fault"), ("link_lost", 0.0, "duration"),
                                                    ("link_lost", float("nan"), "duration"),
                                                    ("link_lost", 1e6, "duration")])
def test_a_bad_simulated_fault_is_refused_naming_the_field(fault, duration, field):
    from intera_compat.hardware.sim import fault_words
    with pytest.raises(ValueError, match=f"^{field}:"):
        fault_words(fault, duration)


class _Record:
    """A control record whose listener publishes ``published`` (a list: changed by the test)."""

    def __init__(self, published):
        self.published = published
        self.local = type("C", (), {})()
        self.local.published_time = np.zeros(1)

    def refresh(self):  # (SeqlockRecord.refresh: a read when the writer published since)
        self.local.published_time[0] = self.published[0]
        return True


def test_the_unpaced_simulation_waits_for_the_listener_and_gives_up_on_a_silent_one(monkeypatch):
    from intera_compat.loop import process
    monkeypatch.setattr(process, "PUBLISH_PATIENCE", 0.02)
    published, stop = [1.0], [False]
    pace = process.ListenerPace(_Record(published), lambda: stop[0])
    pace.wait(1.0 + process.PUBLISH_LEAD)  # caught up: no wait
    assert pace.given_up == 0 and pace.lost_at < 0
    pace.wait(2.0)  # the listener is silent: waited for, then given up
    assert pace.given_up == 1 and pace.lost_at == 1.0
    pace.wait(2.5)  # still silent: not waited for again
    assert pace.given_up == 1
    published[0] = 2.5  # it publishes again: waited for again
    pace.wait(3.0)
    assert pace.given_up == 2 and pace.lost_at == 2.5
    published[0] = 3.0
    stop[0] = True
    pace.wait(9.0)  # shutting down: no wait, not counted
    assert pace.given_up == 2
