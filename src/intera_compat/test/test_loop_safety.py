"""Defects of the first robot, each pinned by behaviour: non-finite values, interpolator failure,
reference wind-up, following error, TORQUE_MODE limits, measured effort, publisher decimation."""
import numpy as np
import pytest
from ruckig import Result

from intera_compat.loop.layouts import MSG_ENABLE, MSG_RESET, POSITION_MODE, TORQUE_MODE, TRAJECTORY_MODE
from intera_compat.loop.offline import OfflineLoop
from intera_compat.loop.process import Ticker
from intera_compat.ros.wrench import WrenchEstimator
from intera_compat.safety import faults

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
    est = WrenchEstimator(loop.rm, "right_hand", loop.cfg.sim["damping"])
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
