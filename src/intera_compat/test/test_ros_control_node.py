"""ros_control.launch against the MuJoCo arm that offers gazebo_ros_control's interface (fake:=true): the
commands it cannot carry are refused once with the reason, a lost link stops the robot, and nothing moves on
reconnect until reset + enable; a trajectory-only arm (interface:=trajectory) gets whole trajectories on its
FollowJointTrajectory controller, and that controller vanishing stops the robot with an error; a velocity-controlled
arm moves, and is stopped by its dead-men (the loop's last word, the bridge, command_watchdog) however the loop ends;
an effort-controlled arm is held where it was by them (gravity + a damped spring), never dropped."""
import collections
import os
import signal
import threading
import time
import xmlrpc.client

import actionlib
import numpy as np
import pytest
import rospy
from actionlib_msgs.msg import GoalStatus
from control_msgs.msg import (FollowJointTrajectoryAction, FollowJointTrajectoryActionGoal,
                              FollowJointTrajectoryActionResult, FollowJointTrajectoryGoal)
from intera_core_msgs.msg import JointCommand, RobotAssemblyState
from rosgraph_msgs.msg import Log
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty, Float64, Float64MultiArray
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectoryPoint

from intera_compat.config import load_config
from intera_compat.testing.processes import descendants, log_tail
from ros_helpers import ARM, TOL, Latest, arm_positions, publisher, send_positions, service, wait_for

pytestmark = pytest.mark.node


@pytest.fixture
def rc(launch):
    launch("roslaunch", "intera_compat", "ros_control.launch", "fake:=true", "rate:=50", "no_rt:=true",
           log_name="rc.log")
    js = Latest("/robot/joint_states", JointState)
    js.wait(60)
    yield js
    js.close()


def test_torque_mode_is_refused_once_with_the_reason_and_the_arm_holds(rc):
    logs = []
    sub = rospy.Subscriber("/rosout", Log, lambda m: logs.append(m.msg) if "JointCommand refused" in m.msg
                           else None, queue_size=100)
    assert wait_for(lambda: sub.get_num_connections() > 0, 10)  # (every node publishes its log there)
    cmd = publisher("/robot/limb/right/joint_command", JointCommand)
    q0 = arm_positions(rc)
    for _ in range(100):
        cmd.publish(JointCommand(mode=JointCommand.TORQUE_MODE, names=ARM, effort=[5.0] * 7))
        time.sleep(0.01)
    time.sleep(0.5)
    sub.unregister()
    assert len(logs) == 1 and "TORQUE_MODE needs an arm that takes joint torques" in logs[0]
    assert np.abs(arm_positions(rc) - q0).max() < 2e-3


def test_positions_stream_to_the_group_controller(rc):
    sent = Latest("/joint_group_position_controller/command", Float64MultiArray)
    cmd = publisher("/robot/limb/right/joint_command", JointCommand)
    target = arm_positions(rc) + np.array([0.3, -0.2, 0, 0.3, 0, 0, 0])
    assert wait_for(lambda: np.abs(arm_positions(rc) - target).max() < TOL, 20,
                    every=lambda: send_positions(cmd, target))
    assert len(sent.wait(1).data) == 8  # one per joint of the controller, head_pan included
    sent.close()


def test_a_lost_link_stops_the_robot_and_nothing_moves_until_reset_and_enable(rc):
    state = Latest("/robot/state", RobotAssemblyState)
    cmd = publisher("/robot/limb/right/joint_command", JointCommand)
    pause = service("/fake_ros_control/pause_joint_states", SetBool)
    q0 = arm_positions(rc)
    target = q0 + np.array([0, 0, 0, 0.5, 0, 0, 0])
    assert wait_for(lambda: np.abs(arm_positions(rc) - q0).max() > 0.05, 10, every=lambda: send_positions(cmd, target))
    pause(True)  # mid-motion
    assert wait_for(lambda: state.msg is not None and state.msg.stopped and state.msg.error, 5)
    assert not state.msg.enabled
    time.sleep(0.5)
    pause(False)
    time.sleep(0.3)
    q_back = arm_positions(rc)
    for _ in range(100):  # commands while stopped are not executed
        send_positions(cmd, target)
        time.sleep(0.01)
    assert np.abs(arm_positions(rc) - q_back).max() < 2e-3 and state.msg.stopped
    enable = publisher("/robot/set_super_enable", Bool)
    enable.publish(Bool(True))  # refused while stopped
    time.sleep(0.3)
    assert not state.msg.enabled
    reset = publisher("/robot/set_super_reset", Empty)
    assert wait_for(lambda: not state.msg.stopped and not state.msg.error, 5, every=reset.publish)
    assert wait_for(lambda: state.msg.enabled, 5, every=lambda: enable.publish(Bool(True)))
    assert np.abs(arm_positions(rc) - q_back).max() < 2e-3  # no jump on enable
    assert wait_for(lambda: np.abs(arm_positions(rc) - target).max() < TOL, 20,
                    every=lambda: send_positions(cmd, target))
    state.close()


@pytest.fixture
def jtc(launch):
    """ros_control.launch on a trajectory-only arm: the fake offers a FollowJointTrajectory controller only."""
    launch("roslaunch", "intera_compat", "ros_control.launch", "fake:=true", "rate:=50", "no_rt:=true",
           "interface:=trajectory", log_name="jtc.log")
    js = Latest("/robot/joint_states", JointState)
    js.wait(60)
    client = actionlib.SimpleActionClient("/robot/limb/right/follow_joint_trajectory", FollowJointTrajectoryAction)
    assert client.wait_for_server(rospy.Duration(60))
    yield client, js
    js.close()


def jtas_goal(q0, q1, duration=2.0):
    g = FollowJointTrajectoryGoal()
    g.trajectory.joint_names = ARM
    for t, q in ((0.0, q0), (duration, q1)):
        g.trajectory.points.append(JointTrajectoryPoint(positions=list(q), velocities=[0.0] * 7,
                                                        time_from_start=rospy.Duration.from_sec(t)))
    return g


def test_a_trajectory_only_arm_runs_whole_trajectories_and_refuses_streaming(jtc):
    client, js = jtc
    arm_goals = Latest("/pos_joint_traj_controller/follow_joint_trajectory/goal", FollowJointTrajectoryActionGoal)
    assert wait_for(lambda: arm_goals.sub.get_num_connections() > 0, 10)  # (the bridge's goal publisher found)
    q0 = arm_positions(js)
    target = q0 + np.array([0.3, -0.2, 0.1, 0.3, 0.0, 0.2, 0.4])
    client.send_goal(jtas_goal(q0, target))
    assert client.wait_for_result(rospy.Duration(30))
    assert client.get_state() == GoalStatus.SUCCEEDED and client.get_result().error_code == 0
    assert np.abs(arm_positions(js) - target).max() < TOL
    sent = arm_goals.wait(1)  # it went to the arm's controller whole, joints by the arm's names
    assert sent.goal.trajectory.joint_names == ARM and len(sent.goal.trajectory.points) >= 2
    assert "/joint_group_position_controller/command" not in {t for t, _ in rospy.get_published_topics()}
    cmd = publisher("/robot/limb/right/joint_command", JointCommand)  # streaming: refused, the arm holds
    for _ in range(50):
        send_positions(cmd, q0)
        time.sleep(0.01)
    time.sleep(0.3)
    assert np.abs(arm_positions(js) - target).max() < 2e-3
    arm_goals.close()


def test_a_trajectory_controller_that_vanishes_mid_motion_stops_the_robot_with_an_error(jtc):
    client, js = jtc
    state = Latest("/robot/state", RobotAssemblyState)
    drop = service("/fake_ros_control/drop_trajectory_action", SetBool)
    q0 = arm_positions(js)
    client.send_goal(jtas_goal(q0, q0 + np.array([0.0, 0.0, 0.0, 0.6, 0.0, 0.0, 0.0]), 3.0))
    assert wait_for(lambda: np.abs(arm_positions(js) - q0).max() > 0.05, 10)
    drop(True)
    assert wait_for(lambda: state.msg is not None and state.msg.stopped and state.msg.error, 5)
    assert client.wait_for_result(rospy.Duration(10))
    assert client.get_state() == GoalStatus.ABORTED and client.get_result().error_code != 0
    q_stop = arm_positions(js)
    time.sleep(1.0)
    assert np.abs(arm_positions(js) - q_stop).max() < 2e-3  # it stopped (the fake's controller holds)
    # the fault is one event: reset and enable work (the controller is still gone: the next goal fails again)
    reset, enable = publisher("/robot/set_super_reset", Empty), publisher("/robot/set_super_enable", Bool)
    assert wait_for(lambda: not state.msg.stopped and not state.msg.error, 5, every=reset.publish)
    assert wait_for(lambda: state.msg.enabled, 5, every=lambda: enable.publish(Bool(True)))
    time.sleep(0.5)
    assert state.msg.enabled and not state.msg.error
    client.send_goal(jtas_goal(q_stop, q_stop + np.array([0.2, 0, 0, 0, 0, 0, 0])))
    assert client.wait_for_result(rospy.Duration(10)) and client.get_state() == GoalStatus.ABORTED
    assert wait_for(lambda: state.msg.stopped and state.msg.error, 5)  # no server: a controller error again
    assert np.abs(arm_positions(js) - q_stop).max() < 2e-3
    state.close()


def test_the_operators_speed_override_stops_a_forwarded_trajectory(jtc):
    """The arm's controller runs on its own clock: a pause (speed_override 0) cannot slow it, so it stops it."""
    client, js = jtc
    override = publisher("/realtime_loop/speed_override", Float64, latch=True)
    q0 = arm_positions(js)
    target = q0 + np.array([0.0, 0.0, 0.0, 0.8, 0.0, 0.0, 0.0])
    client.send_goal(jtas_goal(q0, target, 4.0))
    assert wait_for(lambda: np.abs(arm_positions(js) - q0).max() > 0.05, 10)
    override.publish(Float64(0.0))
    assert client.wait_for_result(rospy.Duration(10)) and client.get_state() != GoalStatus.SUCCEEDED
    q_stop = arm_positions(js)
    time.sleep(1.0)
    assert np.abs(arm_positions(js) - q_stop).max() < 2e-3 and np.abs(q_stop - target).max() > 0.2
    override.publish(Float64(1.0))


def test_an_arm_controller_that_takes_a_goal_but_does_not_run_it_is_a_controller_error(jtc):
    client, js = jtc
    state = Latest("/robot/state", RobotAssemblyState)
    service("/fake_ros_control/stall_trajectory", SetBool)(True)
    q0 = arm_positions(js)
    client.send_goal(jtas_goal(q0, q0 + np.array([0.0, 0.0, 0.0, 0.4, 0.0, 0.0, 0.0]), 3.0))
    assert wait_for(lambda: state.msg is not None and state.msg.stopped and state.msg.error, 6)  # > 1 s behind
    assert client.wait_for_result(rospy.Duration(10)) and client.get_state() == GoalStatus.ABORTED
    assert np.abs(arm_positions(js) - q0).max() < 2e-3
    state.close()


# ---- a velocity-controlled arm and its dead-men ---------------------------------------------------------------

VELOCITY_TOPIC = "/joint_group_velocity_controller/command"


def test_a_velocity_controlled_arm_follows_velocity_and_position_commands(launch):
    """(It did not move at all: until the loop's first command the fake's velocity controller took the arm's angles
    for its velocity command, so its integrated reference ran away for seconds, pressing the arm out of its pose and
    past right_j6's limit, and never came back: the loop's limit and following-error stages then held the loop's
    reference at the arm, ~0 rad/s commanded.)"""
    launch("roslaunch", "intera_compat", "ros_control.launch", "fake:=true", "rate:=50", "no_rt:=true",
           "interface:=velocity", "jtas:=false", log_name="rcv.log")
    js = Latest("/robot/joint_states", JointState)
    js.wait(60)
    state = Latest("/robot/state", RobotAssemblyState)
    assert wait_for(lambda: state.msg is not None and state.msg.enabled, 30)
    q0 = arm_positions(js)
    assert np.abs(q0 - load_config().full_pose("neutral")[:7]).max() < 0.01  # it stayed where it was put
    cmd = publisher("/robot/limb/right/joint_command", JointCommand)
    assert wait_for(lambda: arm_positions(js)[0] - q0[0] > 0.2, 20, every=lambda: cmd.publish(JointCommand(
        mode=JointCommand.VELOCITY_MODE, names=["right_j0"], velocity=[0.3])))
    q1 = arm_positions(js)
    target = q1 + np.array([0.0, 0.0, 0.0, 0.4, 0.0, 0.0, 0.0])
    assert wait_for(lambda: np.abs(arm_positions(js) - target).max() < TOL, 20,
                    every=lambda: send_positions(cmd, target))
    js.close()
    state.close()


class Commands:
    """Every message on a group controller's command topic, with who sent it."""

    def __init__(self, topic=VELOCITY_TOPIC):
        self.got, self.lock = [], threading.Lock()
        self.sub = rospy.Subscriber(topic, Float64MultiArray, self._cb, queue_size=1000)

    def _cb(self, m):
        with self.lock:
            self.got.append((m._connection_header.get("callerid"), tuple(m.data)))

    def mark(self) -> int:
        with self.lock:
            return len(self.got)

    def zeros_from(self, node, since) -> int:
        """How many all-zero commands ``node`` sent after ``mark()`` gave ``since``."""
        with self.lock:
            return sum(1 for who, data in self.got[since:] if who == node and data and not any(data))

    def close(self):
        self.sub.unregister()


class ArmStates:
    """The arm's own /joint_states (the fake's, not the loop's), kept for a few seconds of their stamps."""

    def __init__(self, keep=500):
        self.q = collections.deque(maxlen=keep)
        self.names = []
        self.sub = rospy.Subscriber("/joint_states", JointState, self._cb, queue_size=100)

    def _cb(self, m):
        self.names = m.name
        self.q.append((m.header.stamp.to_sec(), np.array(m.position), np.array(m.velocity)))

    def velocity(self) -> np.ndarray:
        return self.q[-1][2] if self.q else np.zeros(1)

    def still(self, span=0.5, tol=1e-3) -> bool:
        """The arm moved less than ``tol`` rad and ran slower than 0.01 rad/s over the last ``span`` s of its own
        stamps."""
        q = list(self.q)
        if not q or q[-1][0] - q[0][0] < span:
            return False
        recent = [x for x in q if x[0] >= q[-1][0] - span]
        pos = np.array([x[1] for x in recent])
        return np.ptp(pos, axis=0).max() < tol and max(np.abs(x[2]).max() for x in recent) < 0.01

    def close(self):
        self.sub.unregister()


class Stream:
    """A VELOCITY_MODE stream (0.3 rad/s on right_j0, 100 Hz) until ``stop``."""

    def __init__(self):
        self.pub = publisher("/robot/limb/right/joint_command", JointCommand)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        msg = JointCommand(mode=JointCommand.VELOCITY_MODE, names=["right_j0"], velocity=[0.3])
        while not self.done.wait(0.01):
            self.pub.publish(msg)

    def stop(self):
        self.done.set()
        self.thread.join()
        self.pub.unregister()


@pytest.fixture
def moving_arm(launch):
    """A velocity-controlled fake arm started on its own (as Gazebo would be: it outlives the launch),
    ros_control.launch streaming to it, and the arm moving at 0.3 rad/s on right_j0. Yields (the launch process,
    Commands, ArmStates, Stream)."""
    arm = launch("rosrun", "intera_compat", "fake_ros_control", "_interface:=velocity", "_rate:=50",
                 log_name="arm.log")
    states = ArmStates()
    assert wait_for(lambda: len(states.q) > 0, 60), f"no joint states from the arm: {log_tail(arm.log_path)}"
    rc = launch("roslaunch", "intera_compat", "ros_control.launch", "interface:=velocity", "rate:=50", "no_rt:=true",
                "jtas:=false", log_name="rc.log")
    robot = Latest("/robot/state", RobotAssemblyState)
    assert wait_for(lambda: robot.msg is not None and robot.msg.enabled, 60), log_tail(rc.log_path)
    robot.close()
    commands = Commands()
    stream = Stream()
    assert wait_for(lambda: states.velocity()[0] > 0.25, 30), "the arm did not move"
    yield rc, commands, states, stream
    stream.stop()
    commands.close()
    states.close()


def sends_to(publisher: str, subscriber: str, topic: str) -> bool:
    """``publisher`` has a live connection to ``subscriber`` on ``topic`` (its own bus information)."""
    import rosgraph
    try:
        code, _, bus = xmlrpc.client.ServerProxy(rosgraph.Master("/pytest").lookupNode(publisher)).getBusInfo(
            "/pytest")
    except (rosgraph.MasterError, OSError):
        return False
    return code == 1 and any(c[1] == subscriber and c[2] == "o" and c[4] == topic and c[5] for c in bus)


def node_pid(name: str) -> int:
    import rosgraph
    code, _, pid = xmlrpc.client.ServerProxy(rosgraph.Master("/pytest").lookupNode(name)).getPid("/pytest")
    assert code == 1, f"{name} did not say its pid"
    return int(pid)


def loop_process_pid(launch_proc) -> int:
    """The realtime loop's own process (``python -m intera_compat.loop.process``, the realtime_loop node's child)."""
    for pid in descendants(launch_proc.pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"intera_compat.loop.process" in f.read():
                    return pid
        except OSError:
            continue
    raise AssertionError("no realtime loop process under the launch")


def assert_stopped_by(node, commands, states, since, launch_proc):
    assert wait_for(lambda: commands.zeros_from(node, since) > 0, 30), \
        f"no zeros from {node}; sent since: {sorted(set(w for w, _ in commands.got[since:]))}; " \
        f"log:\n{log_tail(launch_proc.log_path)}"
    assert wait_for(states.still, 30), f"the arm did not come to rest: {states.velocity()}"


def test_the_loop_process_killed_the_bridge_zeroes_the_velocity_controller(moving_arm):
    rc, commands, states, stream = moving_arm
    since = commands.mark()
    os.kill(loop_process_pid(rc), signal.SIGKILL)  # (no last word: only the bridge sees it go)
    stream.stop()
    assert_stopped_by("/realtime_loop", commands, states, since, rc)


def test_the_realtime_loop_node_killed_the_watchdog_zeroes_the_velocity_controller(moving_arm):
    rc, commands, states, stream = moving_arm
    assert wait_for(lambda: sends_to("/realtime_loop", "/command_watchdog", VELOCITY_TOPIC), 30), \
        log_tail(rc.log_path)
    since = commands.mark()
    os.kill(node_pid("/realtime_loop"), signal.SIGKILL)  # (its bridge dies with it)
    stream.stop()
    assert_stopped_by("/command_watchdog", commands, states, since, rc)


def test_ctrl_c_on_the_launch_ends_the_stream_with_zeros(moving_arm):
    rc, commands, states, stream = moving_arm
    since = commands.mark()
    os.killpg(rc.pid, signal.SIGINT)  # (what Ctrl-C in its terminal does)
    assert_stopped_by("/realtime_loop", commands, states, since, rc)
    stream.stop()


# ---- an effort-controlled arm: its dead-men hold it (a Gazebo effort arm has no brakes: zero effort drops it) -------

EFFORT_TOPIC = "/joint_group_effort_controller/command"
REST_TOL = 1e-3  # rad: "at rest" — every joint within this over the span, slower than 0.01 rad/s
HELD_TOL = 0.02  # rad: how far from where it was when the loop died the arm may come to rest


@pytest.fixture
def moving_effort_arm(launch):
    """An effort-controlled fake arm on its own (a Gazebo arm outlives the launch), ros_control.launch streaming
    torques to it, the arm moving at 0.3 rad/s on right_j0. Yields (the launch process, Commands, ArmStates,
    Stream)."""
    arm = launch("rosrun", "intera_compat", "fake_ros_control", "_interface:=effort", "_rate:=50",
                 log_name="arm.log")
    states = ArmStates(keep=3000)  # (60 s of stamps at 50 Hz: from the kill to well after the launch is gone)
    assert wait_for(lambda: len(states.q) > 0, 60), f"no joint states from the arm: {log_tail(arm.log_path)}"
    rc = launch("roslaunch", "intera_compat", "ros_control.launch", "interface:=effort", "rate:=50", "no_rt:=true",
                "jtas:=false", log_name="rc.log")
    robot = Latest("/robot/state", RobotAssemblyState)
    assert wait_for(lambda: robot.msg is not None and robot.msg.enabled, 60), log_tail(rc.log_path)
    robot.close()
    commands = StampedCommands(states)
    stream = Stream()
    assert wait_for(lambda: states.velocity()[0] > 0.25, 30), f"the arm did not move: {log_tail(rc.log_path)}"
    yield rc, commands, states, stream
    stream.stop()
    commands.close()
    states.close()


class StampedCommands(Commands):
    """Commands on the effort topic, each with the arm's latest joint-state stamp when it came."""

    def __init__(self, states, topic=EFFORT_TOPIC):
        self.states = states
        super().__init__(topic)

    def _cb(self, m):
        with self.lock:
            self.got.append((m._connection_header.get("callerid"), tuple(m.data),
                             self.states.q[-1][0] if self.states.q else 0.0))

    def nonzero_from(self, node, after) -> int:
        """Commands from ``node`` not all zeros that came after the arm's stamp ``after``."""
        with self.lock:
            return sum(1 for who, data, t in self.got if who == node and t > after and any(data))


def held_where_it_was(rc, commands, states, holder, t_kill, q_kill, driven_until_end=False):
    """After the kill at the arm's stamp ``t_kill`` (pose ``q_kill``) our launch goes down entirely; the arm comes to
    rest within HELD_TOL of ``q_kill`` and stays there for 2 s of its stamps after the last of our processes has
    gone (the controller keeps the last word: gravity at that pose, never zero effort); the hold torques came from
    ``holder``. ``driven_until_end``: the loop went on driving the arm after the signal until it ended (an orderly
    end): the pose to come back to is where it last ran at the commanded speed instead. Returns (rest time after
    the kill and distance from that pose, both by the arm's stamps)."""
    assert wait_for(lambda: rc.poll() is not None, 90), f"the launch did not end:\n{log_tail(rc.log_path)}"
    t_gone = states.q[-1][0]  # (the arm's time when the launch was seen gone)
    assert wait_for(lambda: states.q[-1][0] - t_gone >= 2.0, 30), "the arm's joint states stopped"
    samples = [x for x in list(states.q) if x[0] >= t_kill]
    if driven_until_end:
        t_kill, q_kill = [(t, q) for t, q, v in samples if abs(v[0]) >= 0.25][-1]
    after = [x for x in samples if x[0] >= t_gone]
    q_after = np.array([x[1] for x in after])
    q_rest = q_after[-1]
    away = np.abs(q_rest - q_kill).max()
    assert away < HELD_TOL, f"the arm came to rest {away:.3f} rad from where it was (joints " \
                            f"{np.round(q_rest - q_kill, 3).tolist()}); log:\n{log_tail(rc.log_path)}"
    assert np.ptp(q_after, axis=0).max() < REST_TOL and max(np.abs(x[2]).max() for x in after) < 0.01, \
        f"the arm moved after our processes had gone: {np.ptp(q_after, axis=0).round(4)}"
    # who held it: torques, not zeros, from the holder once the loop was gone (5 periods after the kill), and a
    # last word that is not zero effort
    assert commands.nonzero_from(holder, t_kill + 0.1) > 0, \
        f"no hold torques from {holder}; from: {sorted(set(w for w, _, t in commands.got if t > t_kill))}"
    with commands.lock:
        last = commands.got[-1]
    assert any(last[1]), f"the last word on {EFFORT_TOPIC} is zero effort (from {last[0]})"
    moving = [x[0] for x in samples if np.abs(x[1] - q_rest).max() >= REST_TOL or np.abs(x[2]).max() >= 0.01]
    t_rest = (moving[-1] if moving else t_kill) - t_kill
    print(f"\n{holder}: at rest {t_rest:.3f} s after the {'end of the drive' if driven_until_end else 'kill'} "
          f"(the arm's stamps), {away * 1000:.1f} mrad from where it was (the largest joint), still for "
          f"{after[-1][0] - t_gone:.1f} s after the launch ended")
    return t_rest, away


def test_the_loop_process_killed_the_bridge_holds_the_effort_arm_where_it_was(moving_effort_arm):
    rc, commands, states, stream = moving_effort_arm
    t_kill, q_kill = states.q[-1][0], states.q[-1][1]
    os.kill(loop_process_pid(rc), signal.SIGKILL)  # (no last word: only the bridge sees it go)
    stream.stop()
    held_where_it_was(rc, commands, states, "/realtime_loop", t_kill, q_kill)


def test_the_realtime_loop_node_killed_the_watchdog_holds_the_effort_arm_where_it_was(moving_effort_arm):
    rc, commands, states, stream = moving_effort_arm
    assert wait_for(lambda: sends_to("/realtime_loop", "/command_watchdog", EFFORT_TOPIC), 30), \
        log_tail(rc.log_path)
    assert wait_for(lambda: sends_to("/command_watchdog", "/fake_ros_control", EFFORT_TOPIC), 30), \
        "the watchdog has no connection to the arm's controller"
    t_kill, q_kill = states.q[-1][0], states.q[-1][1]
    os.kill(node_pid("/realtime_loop"), signal.SIGKILL)  # (its bridge dies with it; the launch goes down after)
    stream.stop()
    held_where_it_was(rc, commands, states, "/command_watchdog", t_kill, q_kill)


def test_ctrl_c_on_the_launch_leaves_the_effort_arm_held_where_it_was(moving_effort_arm):
    rc, commands, states, stream = moving_effort_arm
    t_kill, q_kill = states.q[-1][0], states.q[-1][1]
    os.killpg(rc.pid, signal.SIGINT)  # (what Ctrl-C in its terminal does)
    stream.stop()
    held_where_it_was(rc, commands, states, "/realtime_loop", t_kill, q_kill, driven_until_end=True)


def test_a_hung_loop_process_the_bridge_holds_the_effort_arm_where_it_was(moving_effort_arm):
    """The loop process stops (SIGSTOP: alive, silent): after the silence the bridge holds the arm; the launch stays
    up."""
    rc, commands, states, stream = moving_effort_arm
    pid = loop_process_pid(rc)
    t_kill, q_kill = states.q[-1][0], states.q[-1][1]
    os.kill(pid, signal.SIGSTOP)
    try:
        stream.stop()
        assert wait_for(lambda: states.q[-1][0] - t_kill >= 3.0, 30), "the arm's joint states stopped"
        recent = [x for x in list(states.q) if x[0] >= states.q[-1][0] - 1.0]
        q_recent = np.array([x[1] for x in recent])
        assert np.ptp(q_recent, axis=0).max() < REST_TOL and max(np.abs(x[2]).max() for x in recent) < 0.01, \
            f"the arm is not at rest 2 s after the loop hung: {np.ptp(q_recent, axis=0).round(4)}"
        away = np.abs(q_recent[-1] - q_kill).max()
        assert away < HELD_TOL, f"the arm came to rest {away:.3f} rad from where it was; log:\n{log_tail(rc.log_path)}"
        assert commands.nonzero_from("/realtime_loop", t_kill + 0.2) > 0  # (the loop is silent: the bridge holds)
        assert rc.poll() is None
        print(f"\nhung loop: {away * 1000:.1f} mrad from where it was, at rest by the arm's stamps")
    finally:
        os.kill(pid, signal.SIGCONT)


def test_the_loop_process_killed_the_bridge_cancels_the_trajectory_controllers_goal(launch):
    """A trajectory-only arm (started on its own, as Gazebo would be): the loop process killed mid-trajectory, the
    bridge cancels the goal the arm's controller runs (it ran on to its end, unwatched) and the arm stops short of it."""
    arm = launch("rosrun", "intera_compat", "fake_ros_control", "_interface:=trajectory", "_rate:=50",
                 log_name="arm.log")
    states = ArmStates()
    assert wait_for(lambda: len(states.q) > 0, 60), f"no joint states from the arm: {log_tail(arm.log_path)}"
    results = Latest("/pos_joint_traj_controller/follow_joint_trajectory/result",
                     FollowJointTrajectoryActionResult)
    rc = launch("roslaunch", "intera_compat", "ros_control.launch", "interface:=trajectory", "rate:=50",
                "no_rt:=true", log_name="rc.log")
    client = actionlib.SimpleActionClient("/robot/limb/right/follow_joint_trajectory", FollowJointTrajectoryAction)
    assert client.wait_for_server(rospy.Duration(60)), log_tail(rc.log_path)
    js = Latest("/robot/joint_states", JointState)
    js.wait(60)
    q0 = arm_positions(js)
    target = q0 + np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.5])
    client.send_goal(jtas_goal(q0, target, 6.0))
    assert wait_for(lambda: q0[6] - arm_positions(js)[6] > 0.1, 30), \
        f"the arm did not move (goal {client.get_state()}, {client.get_result()}): {log_tail(rc.log_path)}"
    os.kill(loop_process_pid(rc), signal.SIGKILL)  # (no last word: only the bridge sees it go)
    assert wait_for(lambda: results.msg is not None, 30), f"the arm's goal did not end: {log_tail(rc.log_path)}"
    assert results.msg.status.status == GoalStatus.PREEMPTED  # cancelled, not run to its end
    assert wait_for(states.still, 30), f"the arm did not come to rest: {states.velocity()}"
    i = list(states.names).index("right_j6")  # (the arm's own states: the launch goes down with the loop)
    assert states.q[-1][1][i] > target[6] + 0.5
    js.close()
    results.close()
    states.close()
