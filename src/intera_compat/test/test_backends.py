"""The backend interface (no ROS): capabilities and the commands they refuse, the ros_control backend's loop half
driven through its real shared-memory records by an arm emulated here (the MuJoCo Sawyer behind a position or
velocity interface, stepped in lockstep), faults reported by the arm, and the brakes of an arm that brakes
itself: nothing moves on reconnect until reset + enable."""
import os
import types

import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.data.codes import POSITION_MODE, TORQUE_MODE, VELOCITY_MODE
from intera_compat.data.faults import FAULT_CONTROLLER_ERROR, FAULT_LINK_LOST
from intera_compat.data.shm import SeqlockRecord
from intera_compat.data.state import Capability, CommandMode, HardwareCommand, HardwareState
from intera_compat.hardware.registry import declared_capabilities
from intera_compat.hardware.ros_control import RosControlBackend, RosControlSettings, in_layout, out_layout
from intera_compat.hardware.sim import SimPositionBackend
from intera_compat.loop.adapter import mode_refusal
from intera_compat.loop.layouts import MSG_ENABLE, MSG_RESET
from intera_compat.loop.offline import OfflineLoop
from intera_compat.model.robot_model import RobotModel

CFG = load_config()
C = Capability


def test_capabilities_follow_the_config_and_the_interface():
    assert declared_capabilities("sim", CFG) == {C.TORQUE, C.EFFORT, C.SIM_TIME}
    assert declared_capabilities("ros_control", CFG) == {C.POSITION}
    assert declared_capabilities("ros_control", CFG, {"interface": "effort"}) == {C.TORQUE}
    assert declared_capabilities("ros_control", CFG, {"interface": "trajectory"}) == {C.TRAJECTORY_ONLY}
    raw = dict(CFG.raw, ros_control={"interface": "velocity", "speed_scaling": "/speed_scaling_factor",
                                     "measured_effort": True})
    cfg = types.SimpleNamespace(raw=raw, path="x.yaml", all_joints=CFG.all_joints)
    assert RosControlSettings.from_config(cfg).capabilities() == {C.VELOCITY, C.SPEED_SCALING, C.EFFORT}
    with pytest.raises(ValueError, match="unknown backend 'ur9'"):
        declared_capabilities("ur9", CFG)
    for bad, msg in (({"interface": "torque"}, "ros_control.interface 'torque'"), ({"rate": 0}, "rate 0 Hz"),
                     ({"joints": ["a", "b"]}, "2 names for the config's 8"), ({"topic": "/x"}, "unknown keys")):
        cfg.raw = dict(CFG.raw, ros_control=bad)
        with pytest.raises(ValueError, match=msg):
            RosControlSettings.from_config(cfg)


def test_commands_an_arm_cannot_carry_are_refused_with_the_reason():
    assert mode_refusal(TORQUE_MODE, frozenset({C.TORQUE})) is None
    assert "TORQUE_MODE needs an arm that takes joint torques; this one takes positions" == \
        mode_refusal(TORQUE_MODE, frozenset({C.POSITION, C.WRENCH}))
    assert mode_refusal(POSITION_MODE, frozenset({C.VELOCITY})) is None
    assert "whole trajectories only" in mode_refusal(POSITION_MODE, frozenset({C.TRAJECTORY_ONLY}))


class Arm:
    """The far side of a ros_control arm: what the bridge and the arm's controller do, in-process and in
    lockstep. A MuJoCo Sawyer with its own servo takes the last command sent; every ``step`` publishes a sample
    unless ``silent``."""

    def __init__(self, interface: str):
        self.rm = RobotModel(CFG)
        n = self.n = len(CFG.all_joints)
        self.plant = SimPositionBackend(self.rm, CFG.full_pose("neutral"))
        self.plant.connect()
        self.hw_in = SeqlockRecord(in_layout(n), create=True)
        self.hw_out = SeqlockRecord(out_layout(n), create=True)
        self.wake_r, self.wake_w = os.pipe()
        self.command_r, self.command_w = os.pipe()
        os.set_blocking(self.command_r, False)
        self.interface = interface
        self.state = HardwareState.zeros(n)
        self.cmd = HardwareCommand.zeros(n, CommandMode.POSITION)
        self.plant.read(self.state)
        self.cmd.position[:] = self.state.position
        self.given = self.state.position.copy() if interface == "position" else np.zeros(n)
        self.received = 0
        self.silent = False
        self.now = 0.0
        self.publish()

    def link(self):
        return {"in": self.hw_in.name, "out": self.hw_out.name, "wake_fd": self.wake_r,
                "command_fd": self.command_w, "interface": self.interface}

    def publish(self):
        o = self.hw_in.local
        o.position[:], o.velocity[:], o.effort[:] = self.state.position, self.state.velocity, self.state.effort
        o.sample[0] += 1
        o.stamp[0] = self.now
        self.hw_in.publish_local()

    def step(self, dt):
        try:
            while os.read(self.command_r, 4096):
                pass
        except BlockingIOError:
            pass
        self.hw_out.read()
        o = self.hw_out.local
        if o.command[0] != self.received:
            self.received = o.command[0]
            self.given[:] = getattr(o, self.interface)
        for _ in range(int(round(dt / self.plant.period))):
            if self.interface == "position":
                self.cmd.position[:] = self.given
            else:
                self.cmd.position += self.given * self.plant.period
                self.cmd.velocity[:] = self.given
            self.plant.write(self.cmd)
        self.plant.read(self.state)
        self.now += dt
        if not self.silent:
            self.publish()

    def close(self):
        for fd in (self.wake_r, self.wake_w, self.command_r, self.command_w):
            os.close(fd)
        self.hw_in.close()
        self.hw_out.close()

    def teleport(self, q):
        self.plant.set_state(q)
        self.plant.read(self.state)
        self.cmd.position[:] = q
        if self.interface == "position":
            self.given[:] = q


@pytest.fixture(params=["position", "velocity"])
def rig(request):
    arm = Arm(request.param)
    backend = RosControlBackend(arm.rm, arm.link())
    backend.monotonic = lambda: arm.now  # the arm's clock: link timeouts in its seconds
    backend.connect()
    L = OfflineLoop(backend=backend)
    step = L.step

    def lockstep():
        step()
        arm.step(L.dt)
    L.step = lockstep
    L.cycle_only = step  # (a cycle alone: the loop process's, while the arm runs on between its samples)
    L.step()
    yield arm, backend, L
    arm.close()




def test_a_position_command_moves_the_arm_through_the_records(rig):
    arm, backend, L = rig
    assert L.dt == pytest.approx(1.0 / 200)
    target = L.arm_q + np.array([0.3, 0, 0, -0.2, 0, 0, 0])
    for _ in range(300):
        L.send(POSITION_MODE, CFG.joint_names, position=target)
        L.step()
    assert np.abs(arm.state.position[:7] - target).max() < 0.01
    assert np.abs(L.arm_q - target).max() < 0.01  # the loop reads where the arm is


def test_torque_commands_are_not_executed_on_a_position_arm(rig):
    arm, backend, L = rig
    q0 = L.arm_q
    ignored = L.state.local.commands_ignored[0]
    for _ in range(100):
        L.send(TORQUE_MODE, CFG.joint_names, effort=[5.0] * 7)
        L.step()
    assert L.state.local.commands_ignored[0] - ignored == 100
    assert np.abs(L.arm_q - q0).max() < 2e-3


class Paced:
    """A velocity stream of -0.8 rad/s on right_j3, the loop paced by the arm's samples through the loop process's
    own clock (``BackendClock``, built as the process builds it); every command the loop sends is recorded."""

    V = -0.8

    def __init__(self, interface: str):
        from intera_compat.loop.process import BackendClock
        self.arm = arm = Arm(interface)
        self.backend = backend = RosControlBackend(arm.rm, arm.link())
        backend.monotonic = lambda: arm.now
        os.write(arm.wake_w, b"\x01" * 40)  # (pokes from before the loop came: none is a cycle due)
        backend.connect()
        self.L = OfflineLoop(backend=backend)
        self.clock = BackendClock(backend, backend.sample_timeout(self.L.dt))
        self.sent = []  # right_j3's command of every command written to the bridge
        publish = backend.hw_out.publish_local

        def recorded():
            self.sent.append(float(getattr(backend.hw_out.local, interface)[3]))
            publish()
        backend.hw_out.publish_local = recorded

    def cycles(self) -> int:
        """The loop's turn: a wait and the cycles it makes due (0: none came)."""
        self.clock.wait()
        n = 1 + self.clock.owed
        for k in range(n):
            if k:
                self.clock.wait()
            v = np.zeros(7)
            v[3] = self.V
            self.L.send(VELOCITY_MODE, CFG.joint_names, velocity=v)
            self.L.step()
        return n

    def stream(self, periods: int, late=lambda k: 0.0) -> None:
        """The arm runs a period, the bridge pokes for its sample (stamped ``late(k)`` periods late), the loop
        takes its turn."""
        for k in range(periods):
            self.arm.step(self.L.dt)
            self.arm.hw_in.local.stamp[0] = self.arm.now + late(k) * self.L.dt
            self.arm.hw_in.publish_local()
            os.write(self.arm.wake_w, b"\x01")
            self.cycles()

    def close(self) -> None:
        self.arm.close()


@pytest.fixture
def paced(request):
    made = []

    def make(interface):
        made.append(Paced(interface))
        return made[-1]
    yield make
    for p in made:
        p.close()


def test_a_velocity_arm_that_ran_on_between_two_samples_has_its_time_caught_up_and_gets_one_command(paced):
    """A review's find: the hop from a velocity arm stalls for 95 ms while it runs at -0.8 rad/s; rospy then hands
    the bridge only the newest sample (one poke). Cycles on the stale sample every 1.5 periods held the reference
    near the old reading and the P-term pushed on (-1.30 rad/s, then +0.28: reversed); one cycle for the new sample
    left the reference 0.08 rad behind an arm that ran on (+0.5 rad/s: reversed, then -2.1); cycles that caught up
    on the new sample had the following window drag the reference (-0.50, then -1.05). Now: no cycle without a
    sample until the link timeout, then as many cycles as the arm's stamps say passed, on the arm's state between
    the two samples, and only the last one sent — the speed asked, at once."""
    p = paced("velocity")
    p.stream(100)  # at speed
    assert p.clock.caught_up == 0 and p.sent[-1] == pytest.approx(p.V, rel=0.02)
    p.arm.silent = True
    for _ in range(19):  # 95 ms: the arm runs on, its samples held up on the way
        p.arm.step(p.L.dt)
    p.arm.silent = False
    p.arm.publish()  # the newest sample comes: one poke
    os.write(p.arm.wake_w, b"\x01")
    t0, sent0 = p.L.cycle.now, len(p.sent)
    assert p.cycles() == 19  # the arm's 95 ms
    assert p.clock.caught_up == 18 and p.L.cycle.now - t0 == pytest.approx(19 * p.L.dt)
    assert len(p.sent) - sent0 == 1 and p.sent[-1] == pytest.approx(p.V, rel=0.1)  # one command: the speed asked
    p.stream(200)
    after = np.array(p.sent[sent0:])
    assert np.abs(after - p.V).max() < 0.1 * abs(p.V), after  # neither reversed, nor slowed, nor sped up
    assert p.L.state.local.fault_code[0] == 0


def test_stamp_jitter_does_not_add_up_to_a_faster_loop(paced):
    """A review's find: each gap rounded on its own (a late stamp: 2 cycles, the on-time one after it: 1) ran the
    loop's time 9 % ahead of the arm's with 10 % of the samples 0.7 period late, and the arm faster than asked."""
    p = paced("velocity")
    p.stream(20)
    t0, a0 = p.L.cycle.now, p.arm.now
    p.stream(400, late=lambda k: 0.7 if k % 10 == 3 else 0.0)
    assert abs((p.L.cycle.now - t0) - (p.arm.now - a0)) <= 1.5 * p.L.dt  # the loop's time keeps the arm's
    assert np.abs(np.array(p.sent[-300:]) - p.V).max() < 0.05 * abs(p.V)


def test_a_step_of_the_arms_clock_is_no_time_to_catch_up(paced):
    p = paced("velocity")
    p.stream(20)
    sent0 = len(p.sent)
    p.stream(1, late=lambda k: 10.0)  # its clock jumps 50 ms (within the link timeout) between two samples
    assert p.clock.caught_up <= 1  # (at most a period more than the loop's own clock saw pass)
    p.stream(100, late=lambda k: 10.0)
    assert np.abs(np.array(p.sent[sent0:]) - p.V).max() < 0.1 * abs(p.V)


def test_a_loop_that_fell_behind_a_running_arm_by_more_than_the_link_timeout_stops_the_robot(paced):
    """The loop process stalls for 150 ms while a velocity arm runs on and its samples keep coming: more than it
    can catch up (the link timeout). A single cycle reversed the arm (+0.50 rad/s, then -2.15) in a review's run:
    now it is a fault — the loop lost the arm for longer than its link timeout — and the robot stops."""
    p = paced("velocity")
    p.stream(50)
    sent0 = len(p.sent)
    for _ in range(30):  # samples and pokes, no turn of the loop's
        p.arm.step(p.L.dt)
        os.write(p.arm.wake_w, b"\x01")
    p.cycles()
    assert p.L.state.local.fault_code[0] == FAULT_LINK_LOST and p.L.state.local.stopped[0] > 0.5
    assert p.sent[sent0:] and max(p.sent[sent0:]) <= 0.0 and p.sent[-1] == 0.0  # the brakes: zero, never reversed


def test_the_arm_running_on_while_the_loop_is_built_is_no_time_to_catch_up(paced):
    """A review's find: the loop process builds its cycle between ``connect`` and its first wait (84-185 ms on a
    loaded machine) while the arm publishes on; the first sample was caught up from a zero state (the first
    cycles read q/19: the arm driven 2-3 rad at the joints' limit) or, beyond the link timeout, faulted every start.
    The first sample the loop takes starts its time."""
    p = paced("velocity")
    for _ in range(15):  # 75 ms of samples before the loop's first turn
        p.arm.step(p.L.dt)
        os.write(p.arm.wake_w, b"\x01")
    q = p.arm.state.position[3]
    assert p.cycles() == 1 and p.L.state.local.fault_code[0] == 0
    assert p.L.state.local.position[3] == pytest.approx(q)
    assert p.V <= p.sent[-1] <= 0.0  # (the stream's start, from rest: not the joint's limit towards a wrong pose)
    for _ in range(40):  # 0.2 s: beyond the link timeout
        p.arm.step(p.L.dt)
        os.write(p.arm.wake_w, b"\x01")
    assert p.cycles() == 1  # (as after a lost link: a fault, the robot stops; but not at a start, above)


def test_a_brake_during_a_catch_up_goes_at_once(paced):
    p = paced("velocity")
    p.stream(50)
    p.arm.silent = True
    for _ in range(19):
        p.arm.step(p.L.dt)
    p.arm.silent = False
    p.arm.publish()
    os.write(p.arm.wake_w, b"\x01")
    sent0 = len(p.sent)
    p.clock.wait()
    assert p.clock.owed == 18
    p.L.event(MSG_ENABLE, 0.0)  # disabled in the first catch-up cycle
    p.L.step()
    assert p.backend.deferred and p.sent[sent0:] == [0.0]  # the brakes' zeros, not held for the last cycle


def test_an_effort_arm_gets_one_cycle_for_a_late_sample():
    """Its PD law holds the reference it was left at (caught up, an effort arm was found off its rest pose)."""
    for interface, due in (("effort", 1), ("velocity", 19)):
        arm = Arm(interface)
        try:
            backend = RosControlBackend(arm.rm, arm.link())
            backend.monotonic = lambda: arm.now
            backend.connect()
            arm.step(0.005)
            arm.publish()
            os.write(arm.wake_w, b"\x01")
            assert backend.wait(0.1) == 1  # (the first: the loop's time starts there)
            for _ in range(19):
                arm.step(0.005)
            os.write(arm.wake_w, b"\x01")
            assert backend.wait(0.1) == due
        finally:
            arm.close()


def test_a_velocity_arms_command_stays_within_the_joints_limits():
    from intera_compat.control.direct import DirectLaw
    from intera_compat.data.setpoint import Setpoint
    n = len(CFG.all_joints)
    law = DirectLaw(n, 10.0, CFG.limits.velocity)
    hw, cmd = HardwareState.zeros(n), HardwareCommand.zeros(n, CommandMode.VELOCITY)
    sp = Setpoint.zeros(n)
    sp.q[:] = 1.0  # 1 rad ahead: a P-term of 10 rad/s
    sp.v[:] = 0.5
    law.compute(hw, sp, cmd)
    np.testing.assert_allclose(cmd.velocity, CFG.limits.velocity)
    sp.q[:] = 0.01
    law.compute(hw, sp, cmd)
    np.testing.assert_allclose(cmd.velocity, np.minimum(0.6, CFG.limits.velocity))


def test_after_a_lost_link_the_first_sample_is_one_cycle(paced):
    """The link-lost path reported the gap (the wait timed out): the robot stopped, nothing to catch up on."""
    p = paced("velocity")
    p.stream(50)
    p.arm.silent = True
    for _ in range(30):  # 150 ms without samples
        p.arm.step(p.L.dt)
    assert p.cycles() == 1 and p.L.state.local.fault_code[0] == FAULT_LINK_LOST  # (the wait's timeout: 0.1 s)
    p.arm.silent = False
    p.stream(1)
    assert p.clock.caught_up == 0 and p.L.state.local.stopped[0] > 0.5


def test_a_position_arm_held_its_target_while_the_loop_stalled_and_gets_no_catch_up(paced):
    """The loop process stalls for 95 ms (pokes pile up) while a position arm's controller holds the last target:
    the arm stood still, so one cycle is due, not 19 (which would step the target 0.076 rad ahead of an arm at
    rest: 1.85 times the speed asked, 84 rad/s², in a review's run)."""
    p = paced("position")
    p.stream(100)
    before = p.sent[-1]
    for _ in range(19):  # the arm publishes, the bridge pokes, the loop does not run
        p.arm.step(p.L.dt)
        os.write(p.arm.wake_w, b"\x01")
    assert p.cycles() == 1 and p.clock.caught_up == 0
    assert abs(p.sent[-1] - before) < 1.5 * abs(p.V) * p.L.dt  # a period's step, as before the stall
    p.stream(100)
    assert np.abs(np.diff(p.sent)).max() < 1.5 * abs(p.V) * p.L.dt and p.L.state.local.fault_code[0] == 0


def test_a_position_arm_counts_the_time_its_samples_skipped_as_lag_and_stamp_jitter_adds_none(paced):
    """One cycle per sample: a gap of 4 periods in the arm's stamps is 3 periods the loop's clock did not run
    (``lag``: the trajectory under way makes it up, loop/lag.py, which drops it when none runs — so it is read
    here as the sample is taken); samples alternately 0.4 period late and on time add nothing up, nor does a step
    of the arm's clock."""
    p = paced("position")
    assert p.backend.lags
    p.stream(20)

    def sample(periods, late=0.0):  # the arm runs on, the loop takes its next sample (no cycle)
        p.arm.step(periods * p.L.dt)
        p.arm.hw_in.local.stamp[0] = p.arm.now + late * p.L.dt
        p.arm.hw_in.publish_local()
        os.write(p.arm.wake_w, b"\x01")
        p.clock.wait()
        return p.backend.lag
    lags = [sample(1, 0.4 * (k % 2)) for k in range(20)]
    assert max(lags) <= 0.4 * p.L.dt + 1e-9  # (late, then on time: back to 0)
    assert sample(4) == pytest.approx(3 * p.L.dt, abs=1e-9)
    assert sample(1) == pytest.approx(3 * p.L.dt, abs=1e-9)  # (on schedule again: as much as before)
    # the arm's clock steps 3 periods on while a period passes: no more than the loop's own clock saw is lost
    assert sample(1, late=3.0) <= 3.5 * p.L.dt + 1e-9
    v = paced("velocity")
    assert not v.backend.lags


def test_a_lost_link_stops_the_robot_and_nothing_moves_on_reconnect_until_reset_and_enable(rig):
    arm, backend, L = rig
    q0 = L.arm_q
    target = q0 + np.array([0, 0, 0, -0.5, 0, 0, 0])
    for _ in range(40):  # moving toward the target when the link goes
        L.send(VELOCITY_MODE, CFG.joint_names, velocity=[0, 0, 0, -0.5, 0, 0, 0])
        L.step()
    arm.silent = True
    L.cycle_only()  # (the cycle for the arm's last sample)
    for _ in range(int(np.ceil(backend.sample_timeout(L.dt) / L.dt))):  # no sample, no cycle (the loop process's
        arm.step(L.dt)  # BackendClock waits) ...
    assert backend.link_timeout == pytest.approx(0.1)
    L.cycle_only()  # ... until the link timeout (ros_control.link_timeout), when a cycle finds the link lost
    st = L.state.local
    assert (st.fault_code[0], st.stopped[0], st.error[0], st.enabled[0]) == (FAULT_LINK_LOST, 1, 1, 0)
    arm.hw_out.read()
    sent = arm.hw_out.local.command[0]  # (a velocity arm's one zero command, the fault cycle's, among them)
    # meanwhile somebody moves the arm (its brakes released by hand, a Gazebo reset)
    moved = arm.state.position.copy()
    moved[0] += 0.2
    arm.teleport(moved)
    arm.silent = False
    for _ in range(100):  # the link is back: commands are ignored, nothing is sent
        L.send(POSITION_MODE, CFG.joint_names, position=target)
        L.step()
    assert arm.received == sent and L.state.local.stopped[0] == 1
    assert np.abs(arm.state.position - moved).max() < 2e-3
    L.event(MSG_RESET)
    L.step()
    assert L.state.local.fault_code[0] == 0 and L.state.local.enabled[0] == 0
    L.event(MSG_ENABLE, 1.0)
    for _ in range(50):
        L.step()
    assert np.abs(arm.state.position - moved).max() < 2e-3  # held where it was found, no jump back
    for _ in range(800):
        L.send(POSITION_MODE, CFG.joint_names, position=target)
        L.step()
    assert np.abs(L.arm_q - target).max() < 0.01  # and it works again


def test_a_joint_state_without_every_joint_is_a_controller_error(rig):
    arm, backend, L = rig
    arm.hw_in.local.fault[0], arm.hw_in.local.fault_joint[0] = FAULT_CONTROLLER_ERROR, 3  # (the bridge's verdict)
    L.run(2 * L.dt)  # (the arm publishes it after the loop's read)
    st = L.state.local
    assert (st.fault_code[0], st.fault_joint[0], st.stopped[0], st.error[0]) == (FAULT_CONTROLLER_ERROR, 3, 1, 1)
    arm.hw_in.local.fault[0] = 0
    L.run(2 * L.dt)
    assert L.state.local.stopped[0] == 1  # it latches until reset
    L.event(MSG_RESET)
    L.step()
    assert L.state.local.error[0] == 0


def test_a_velocity_arm_gets_one_zero_command_when_braked(rig):
    arm, backend, L = rig
    for _ in range(20):
        L.send(VELOCITY_MODE, CFG.joint_names, velocity=[0, 0, 0, 0.5, 0, 0, 0])
        L.step()
    L.event(MSG_ENABLE, 0.0)
    L.step()
    L.step()
    sent = arm.received
    L.run(0.2)
    assert arm.received == sent  # nothing more after the brakes
    if arm.interface == "velocity":
        assert not arm.given.any()
    L.run(0.5)
    assert np.abs(arm.state.velocity).max() < 0.01
