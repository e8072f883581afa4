"""The dead-men of a ros_control velocity / effort arm without a master: the watchdog's timing (any clock), the loop's
last word to the bridge (``RosControlBackend.close``); and the command_watchdog node on simulated time."""
import dataclasses
import os
import threading
import time
import types

import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.data.shm import SeqlockRecord
from intera_compat.hardware.command_watchdog import IDLE, REPEAT, STOP, CommandWatchdog
from intera_compat.hardware.ros_control import SEND_LAST, RosControlBackend, RosControlSettings, in_layout, out_layout
from intera_compat.model.robot_model import RobotModel

CFG = load_config()
MOVING = [0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
ZEROS = [0.0] * 8


def test_a_moving_stream_that_falls_silent_is_zeroed_after_the_timeout():
    dog = CommandWatchdog(0.1, repeat=0.0)
    for k in range(50):  # a 100 Hz stream: never due while it flows
        dog.heard(k * 0.01, MOVING)
        assert dog.poll(k * 0.01 + 0.005) == IDLE
    assert dog.poll(0.585) == IDLE
    assert dog.poll(0.6) == STOP
    assert [dog.poll(t) for t in (0.6, 1.0, 10.0)] == [IDLE] * 3  # repeat 0: once
    assert (dog.stops, dog.sent, dog.heard_count) == (1, 1, 50)


def test_a_late_poll_after_the_watchdogs_own_stall_decides_nothing_the_next_one_does():
    """Review: stalled ≥ the timeout, the timer's thread could run before the queued command was delivered and zero a
    live stream (a velocity step on the arm)."""
    dog = CommandWatchdog(0.1, repeat=0.0)
    dog.heard(0.0, MOVING)
    assert dog.poll(0.3, late=True) == IDLE  # its own stall: the queued command may come next
    dog.heard(0.3, MOVING)  # ... it did
    assert dog.poll(0.31) == IDLE
    assert dog.poll(0.6, late=True) == IDLE  # a real silence, seen late twice: the second decides
    assert dog.poll(0.65, late=True) == STOP


def test_zeros_repeat_while_the_silence_lasts_and_stop_when_a_stream_returns():
    dog = CommandWatchdog(0.1, repeat=1.0)
    dog.heard(0.0, MOVING)
    assert [dog.poll(t) for t in (0.1, 0.5, 1.09, 1.1, 1.5, 2.1)] == [STOP, IDLE, IDLE, REPEAT, IDLE, REPEAT]
    dog.heard(2.5, MOVING)  # a stream again: watched afresh
    assert [dog.poll(t) for t in (2.55, 3.5, 3.6, 4.6)] == [IDLE, STOP, IDLE, REPEAT]
    assert (dog.stops, dog.sent) == (2, 5)


def test_a_stream_whose_last_word_was_zeros_stopped_the_arm_itself():
    dog = CommandWatchdog(0.1)
    dog.heard(0.0, MOVING)
    dog.heard(0.01, ZEROS)  # (the loop's brakes, or its last word)
    assert [dog.poll(t) for t in (0.2, 1.5, 100.0)] == [IDLE] * 3
    assert not dog.leaving() and dog.sent == 0


def test_nothing_is_sent_before_a_first_command():
    dog = CommandWatchdog(0.1)
    assert [dog.poll(t) for t in (0.0, 1.0, 1e6)] == [IDLE] * 3
    assert not dog.leaving()


def test_a_command_with_a_nan_counts_as_moving():
    dog = CommandWatchdog(0.1)
    dog.heard(0.0, [float("nan")] + ZEROS[1:])
    assert dog.poll(0.2) == STOP


def test_a_clock_that_goes_back_starts_the_silence_again():
    dog = CommandWatchdog(0.1, repeat=1.0)
    dog.heard(50.0, MOVING)
    assert dog.poll(0.05) == IDLE  # a simulation reset: time 0.05 now
    assert dog.poll(0.14) == IDLE
    assert dog.poll(0.16) == STOP
    assert dog.poll(0.01) == IDLE  # back again after the zeros: the repeat counts from here
    assert dog.poll(1.0) == IDLE and dog.poll(1.02) == REPEAT


def test_leaving_zeroes_a_stream_that_was_moving_the_arm():
    dog = CommandWatchdog(0.1)
    dog.heard(0.0, MOVING)
    assert dog.poll(0.05) == IDLE
    assert dog.leaving() and not dog.leaving()  # once
    assert (dog.stops, dog.sent) == (1, 1)


@pytest.mark.parametrize("timeout, repeat, field", [(0.0, 1.0, "timeout"), (float("nan"), 1.0, "timeout"),
                                                    ("0.1", 1.0, "timeout"), (0.1, -1.0, "repeat"),
                                                    (0.1, float("inf"), "repeat")])
def test_bad_settings_are_refused_naming_the_field(timeout, repeat, field):
    with pytest.raises(ValueError, match=f"watchdog {field}"):
        CommandWatchdog(timeout, repeat)


def test_the_silence_is_the_stop_timeout_but_never_less_than_the_link_timeout_and_two_and_a_half_periods():
    # (a running loop writes at least once a sample, or at the link timeout and half a period without one)
    cfg = types.SimpleNamespace(raw=dict(CFG.raw, ros_control={"interface": "velocity", "rate": 200}),
                                path="x.yaml", all_joints=CFG.all_joints)
    s = RosControlSettings.from_config(cfg)
    assert s.zeroed and s.silence == pytest.approx(0.1125)
    assert s.watchdog_silence == pytest.approx(0.2125)  # (the node's own: a velocity loop catching up is not dead)
    assert RosControlSettings.from_config(cfg, interface="effort").watchdog_silence == pytest.approx(0.1)
    assert RosControlSettings.from_config(cfg, interface="effort").stale_after == pytest.approx(0.1125)
    assert RosControlSettings.from_config(cfg, rate=10).silence == pytest.approx(0.55)  # (link timeout: 3 periods)
    cfg.raw["ros_control"]["stop_timeout"] = 0.5
    assert RosControlSettings.from_config(cfg).silence == pytest.approx(0.5)
    assert RosControlSettings.from_config(cfg, interface="effort").zeroed
    assert not RosControlSettings.from_config(cfg, interface="position").zeroed
    cfg.raw = dict(CFG.raw, ros_control={"stop_timeout": 0.0})
    with pytest.raises(ValueError, match="ros_control.stop_timeout 0.0 s"):
        RosControlSettings.from_config(cfg)


class Bridge:
    """The bridge's end of the records and pipes (what ros_control_bridge reads), no ROS."""

    def __init__(self, interface):
        n = self.n = len(CFG.all_joints)
        self.hw_in = SeqlockRecord(in_layout(n), create=True)
        self.hw_out = SeqlockRecord(out_layout(n), create=True)
        self.wake_r, self.wake_w = os.pipe()
        self.command_r, self.command_w = os.pipe()
        o = self.hw_in.local
        o.position[:] = CFG.full_pose("neutral")
        o.sample[0] = 1
        self.hw_in.publish_local()
        self.backend = RosControlBackend(RobotModel(CFG), {
            "in": self.hw_in.name, "out": self.hw_out.name, "wake_fd": self.wake_r, "command_fd": self.command_w,
            "interface": interface, "traj": None})
        self.backend.connect()

    def received(self):
        """(pokes since the last call, the out record now)."""
        os.set_blocking(self.command_r, False)
        try:
            pokes = len(os.read(self.command_r, 4096))
        except BlockingIOError:
            pokes = 0
        assert self.hw_out.read()
        return pokes, self.hw_out.local

    def close(self):
        for fd in (self.wake_r, self.wake_w, self.command_r, self.command_w):
            os.close(fd)
        self.hw_in.close()
        self.hw_out.close()


@pytest.fixture
def bridge(request):
    b = Bridge(request.param)
    yield b
    b.close()


def command(backend, q, v, tau):
    from intera_compat.data.state import CommandMode, HardwareCommand
    c = HardwareCommand.zeros(len(CFG.all_joints), CommandMode.VELOCITY)
    c.position[:], c.velocity[:], c.effort[:] = q, v, tau
    backend.write(c)


@pytest.mark.parametrize("bridge", ["velocity", "effort", "position"], indirect=True)
def test_the_loops_last_word_to_the_bridge_is_a_stop(bridge):
    b, n = bridge.backend, bridge.n
    q = CFG.full_pose("neutral") + 0.1
    command(b, q, np.full(n, 0.3), np.full(n, 5.0))  # moving (velocity), holding against gravity (effort)
    pokes, o = bridge.received()
    assert pokes == 1 and o.command[0] == 1 and o.velocity[0] == 0.3 and o.effort[0] == 5.0
    b.close()  # (the loop process ends: any way but SIGKILL)
    pokes, o = bridge.received()
    # a new command, poked, marked as the last (the bridge sends it and, on an effort arm, holds from it at once:
    # not at the pipe's EOF, which a loaded machine sees tens of ms later while the arm coasts on)
    assert pokes == 1 and o.command[0] == 2 and o.send[0] == SEND_LAST
    # the field the bridge sends is a stop: zero velocity, gravity compensation at the arm's pose (the last joint
    # states': zero effort would let an effort arm fall), the position it holds already
    assert not o.velocity.any()
    if b.settings.interface == "effort":
        assert np.allclose(o.effort, RobotModel(CFG).gravity(CFG.full_pose("neutral"))) and o.effort.any()
    else:
        assert not o.effort.any()
    assert np.array_equal(o.position, q)


@pytest.mark.parametrize("bridge", ["velocity"], indirect=True)
def test_a_velocity_arm_braked_and_then_closed_still_ends_on_zeros(bridge):
    b, n = bridge.backend, bridge.n
    command(b, CFG.full_pose("neutral"), np.full(n, 0.3), np.zeros(n))
    b.brake()  # disabled: the next write would have sent zeros, but the loop ends first
    b.close()
    pokes, o = bridge.received()
    assert pokes == 2 and o.command[0] == 2 and not o.velocity.any()


@pytest.mark.parametrize("bridge", ["position"], indirect=True)
def test_a_position_arm_never_commanded_is_sent_nothing_at_the_end(bridge):
    """(no position to repeat: the record's zeros would be a move to all-zero angles)"""
    bridge.backend.close()
    pokes, o = bridge.received()
    assert pokes == 0 and o.command[0] == 0 and o.send[0] == 0.0


@pytest.mark.parametrize("bridge", ["velocity", "effort"], indirect=True)
def test_a_velocity_or_effort_arm_never_commanded_still_gets_its_stop(bridge):
    bridge.backend.close()
    pokes, o = bridge.received()
    assert pokes == 1 and o.command[0] == 1 and not o.velocity.any()
    g = RobotModel(CFG).gravity(CFG.full_pose("neutral")) if bridge.backend.settings.interface == "effort" else 0.0
    assert np.allclose(o.effort, g)


@pytest.mark.parametrize("bridge", ["effort"], indirect=True)
def test_an_effort_arms_last_word_without_a_finite_pose_is_zeros(bridge):
    o = bridge.hw_in.local
    o.position[2] = np.nan
    bridge.hw_in.publish_local()
    bridge.backend.close()
    pokes, out = bridge.received()
    assert pokes == 1 and not out.effort.any()


def test_the_bridge_holds_an_effort_arm_from_the_loops_last_word_not_its_eof(monkeypatch):
    """The bridge's send thread (rospy's publisher, subscribers and timer replaced, no master) with the loop's end
    of the pipe still open — no EOF comes: the loop's last word alone starts the hold, its torque right after."""
    import rospy
    from sensor_msgs.msg import JointState

    from intera_compat.ros import ros_control_bridge as B
    from ros_helpers import wait_for
    sent = []

    class Pub:
        def __init__(self, *args, **kwargs):
            pass

        def publish(self, m):
            sent.append(tuple(m.data))
    monkeypatch.setattr(rospy, "Publisher", Pub)
    monkeypatch.setattr(rospy, "Subscriber", lambda *args, **kwargs: None)
    monkeypatch.setattr(rospy, "Timer", lambda *args, **kwargs: types.SimpleNamespace(shutdown=lambda: None))
    monkeypatch.setattr(rospy, "get_time", time.time)
    br = B.RosControlBridge(CFG, interface="effort", rate=50)
    br.s = dataclasses.replace(br.s, stop_timeout=60.0)  # (no hold for a silent loop within the test)
    names = list(br.s.joints)
    q = CFG.full_pose("neutral")

    def sample():
        msg = JointState(name=names, position=list(q), velocity=[0.0] * len(names))
        msg.header.stamp = rospy.Time.from_sec(time.time())
        br._on_joint_states(msg)
    sample()
    loop = RosControlBackend(RobotModel(CFG), dict(br.link, traj=None))
    sender = threading.Thread(target=br._send_loop, daemon=True)  # (not ``start``: the pipe's end stays open here)
    sender.start()
    try:
        loop.connect()
        command(loop, q, np.full(len(names), 0.3), np.full(len(names), 5.0))  # moving
        assert wait_for(lambda: len(sent) == 1, 10) and not br.hold.active
        sample()
        loop.close()  # the last word: gravity at the pose
        assert wait_for(lambda: br.hold.active, 10), f"no hold from the last word; sent {len(sent)}"
        assert wait_for(lambda: len(sent) >= 3, 10)  # the last word, then the hold's first torque
        g = RobotModel(CFG).gravity(q)
        assert np.allclose(sent[1], g) and np.allclose(sent[2], g, atol=1e-6)  # (at rest at its anchor: gravity)
        assert sender.is_alive()  # (no EOF: the pipe's write end is still open)
    finally:
        br._closed = True
        os.close(br.command_w)  # the EOF: the send thread ends
        sender.join(10)
        for fd in (br.wake_r, br.wake_w, br.command_r):
            os.close(fd)
        br.hw_in.close()
        br.hw_out.close()
    assert not sender.is_alive()


# ---- the node, on simulated time -------------------------------------------------------------------------------

@pytest.mark.node
def test_the_node_zeroes_a_silent_stream_on_the_ros_clock(launch):
    """Under /use_sim_time the silence is counted on /clock: wall time passing with the clock held sends nothing,
    the clock passing the timeout does."""
    import rospy
    from rosgraph_msgs.msg import Clock
    from std_msgs.msg import Float64MultiArray

    from intera_compat.testing.processes import log_tail
    from ros_helpers import wait_for
    rospy.set_param("/use_sim_time", True)
    clock = rospy.Publisher("/clock", Clock, queue_size=1, latch=True)
    t = [100.0]
    clock.publish(Clock(clock=rospy.Time.from_sec(t[0])))
    topic = "/joint_group_velocity_controller/command"
    got, lock = [], threading.Lock()

    def on_msg(m):
        with lock:
            got.append((m._connection_header.get("callerid"), list(m.data), t[0]))
    sub = rospy.Subscriber(topic, Float64MultiArray, on_msg, queue_size=100)
    pub = rospy.Publisher(topic, Float64MultiArray, queue_size=1, tcp_nodelay=True)
    proc = launch("rosrun", "intera_compat", "command_watchdog", "_interface:=velocity", "_timeout:=0.1",
                  "_repeat:=5", log_name="watchdog.log")
    # (each of ours connects to the other too: two connections each when the watchdog's are there)
    assert wait_for(lambda: pub.get_num_connections() >= 2 and sub.get_num_connections() >= 2, 60), \
        f"the watchdog did not connect (exit {proc.poll()})"

    def zeros():
        with lock:
            return [x for x in got if x[0] == "/command_watchdog"]

    pub.publish(Float64MultiArray(data=MOVING))
    # the clock moves on in 20 ms steps until the watchdog has zeroed the stream (whenever it heard the command)
    assert wait_for(lambda: zeros(), 30, period=0.02, every=lambda: (
        t.__setitem__(0, t[0] + 0.02), clock.publish(Clock(clock=rospy.Time.from_sec(t[0]))))), \
        f"no zeros from the watchdog by clock {t[0]:.2f}; heard {got}; its log:\n{log_tail(proc.log_path)}"
    first = zeros()[0]
    assert first[1] == ZEROS and first[2] >= 100.1 - 1e-9  # (not before 0.1 s of the clock)
    seen = len(zeros())
    # the clock held: wall time passing is no silence (the zeros are repeated every 5 s of the clock only; the clock
    # ran on by less than that while the first zeros came, unless they took 5 s of wall time)
    time.sleep(1.5)
    assert len(zeros()) == seen
    t[0] += 5.1
    clock.publish(Clock(clock=rospy.Time.from_sec(t[0])))
    assert wait_for(lambda: len(zeros()) > seen, 30)
    assert all(x[1] == ZEROS for x in zeros())
    sub.unregister()
    pub.unregister()
    clock.unregister()
