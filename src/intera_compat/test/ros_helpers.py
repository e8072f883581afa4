"""Helpers of the node tests: latest-message holders, polling with a deadline, the arm's joints."""
import threading
import time

import numpy as np
import rospy
from intera_core_msgs.msg import JointCommand

TOL = 0.008726646
ARM = [f"right_j{i}" for i in range(7)]


class Latest:
    """Keeps the newest message of a topic and counts arrivals."""

    def __init__(self, topic, cls):
        self.msg, self.count, self.event = None, 0, threading.Event()
        self.sub = rospy.Subscriber(topic, cls, self._cb, queue_size=10)

    def _cb(self, m):
        self.msg = m
        self.count += 1
        self.event.set()

    def wait(self, timeout=20.0):
        assert self.event.wait(timeout), f"nothing on {self.sub.name}"
        return self.msg

    def close(self):
        self.sub.unregister()


def wait_for(pred, timeout, period=0.01, every=None):
    end = time.time() + timeout
    while time.time() < end:
        if every:
            every()
        if pred():
            return True
        time.sleep(period)
    return False


def arm_positions(js):
    """The arm joints' positions (``js.arm``: a backend fixture's joint names; a Sawyer's by default)."""
    m = js.msg
    return np.array([m.position[m.name.index(n)] for n in getattr(js, "arm", ARM)])


def publisher(topic, cls, latch=False):
    pub = rospy.Publisher(topic, cls, queue_size=1, latch=latch, tcp_nodelay=True)
    assert wait_for(lambda: pub.get_num_connections() > 0, 10)
    return pub


SERVICE_WAIT_S = 60.0  # a setup bound, like a launch's: the node may come up late on a loaded machine


def service(name, cls, timeout=SERVICE_WAIT_S):
    """A proxy of service ``name`` once it answers; on timeout the failure says what the master knows of it."""
    try:
        rospy.wait_for_service(name, timeout)
    except rospy.ROSException:
        import rosgraph
        master = rosgraph.Master("/pytest")
        try:
            where = master.lookupService(name)
        except rosgraph.MasterError as e:
            where = f"not registered ({e})"
        servers = {s: n for s, n in master.getSystemState()[2] if s.startswith(name.rsplit("/", 1)[0])}
        raise AssertionError(f"service {name} did not answer in {timeout:g} s: master says {where}; "
                             f"services beside it: {servers}") from None
    return rospy.ServiceProxy(name, cls)


def send_positions(pub, target):
    pub.publish(JointCommand(mode=JointCommand.POSITION_MODE, names=ARM[:len(target)], position=list(target)))


def joint_motion(js, joint_names, dq) -> None:
    """What go_to_joint_angles.py does — a JOINT trajectory by the motion controller from where the arm is to
    ``dq`` away — and that it arrived."""
    import actionlib
    from geometry_msgs.msg import PoseStamped
    from intera_motion_msgs.msg import (MotionCommandAction, MotionCommandGoal, Trajectory, TrajectoryOptions,
                                        Waypoint, WaypointOptions)
    client = actionlib.SimpleActionClient("/motion/motion_command", MotionCommandAction)
    assert client.wait_for_server(rospy.Duration(30))
    q0 = arm_positions(js)
    target = q0 + np.asarray(dq)
    n = len(joint_names)
    wpo = WaypointOptions(label="default", max_joint_speed_ratio=0.5, max_joint_accel=[5.0] * n,
                          max_linear_speed=0.6, max_linear_accel=0.6, max_rotational_speed=1.57,
                          max_rotational_accel=1.57)
    client.send_goal(MotionCommandGoal(command="start", trajectory=Trajectory(
        label="go_to_joint_angles", joint_names=list(joint_names),
        trajectory_options=TrajectoryOptions(interpolation_type="JOINT"),
        waypoints=[Waypoint(joint_positions=list(q), active_endpoint="right_hand", pose=PoseStamped(), options=wpo)
                   for q in (q0, target)])))
    assert client.wait_for_result(rospy.Duration(30))
    assert client.get_result().result, client.get_result().errorId
    assert np.abs(arm_positions(js) - target).max() < 0.01


def held(js, seconds: float = 1.0, tol: float = 1e-3) -> np.ndarray:
    """The arm's positions after ``seconds`` more in which it moved less than ``tol`` (AssertionError otherwise)."""
    q = arm_positions(js)
    time.sleep(seconds)
    moved = np.abs(arm_positions(js) - q).max()
    assert moved < tol, f"the arm moved {moved:.4f} rad in {seconds:g} s"
    return q


def enabled(robot):
    """(JTAS client, joint_states, /robot/state) of a started robot (``conftest._start_robot``'s generator), once
    it is enabled and its joint trajectory action server is up; closes them when the generator is closed."""
    import actionlib
    from control_msgs.msg import FollowJointTrajectoryAction
    from intera_core_msgs.msg import RobotAssemblyState
    js = next(robot)
    state = Latest("/robot/state", RobotAssemblyState)
    try:
        assert wait_for(lambda: state.msg is not None and state.msg.enabled, 30)
        client = actionlib.SimpleActionClient("/robot/limb/right/follow_joint_trajectory",
                                              FollowJointTrajectoryAction)
        assert client.wait_for_server(rospy.Duration(60))
        yield client, js, state
    finally:
        state.close()
        robot.close()


def reset_and_enable(state):
    """RobotEnable.reset() then enable(), as the SDK does them (a UR's protective stop unlocks 5 s after it
    happened: its backend retries, and the robot reports itself enabled then)."""
    from std_msgs.msg import Bool, Empty
    reset = publisher("/robot/set_super_reset", Empty)
    assert wait_for(lambda: not state.msg.stopped, 60, period=0.2, every=lambda: reset.publish())
    enable = publisher("/robot/set_super_enable", Bool)
    assert wait_for(lambda: state.msg.enabled, 60, period=0.2, every=lambda: enable.publish(True)), \
        f"not enabled 60 s after the reset (the robot's state: {state.msg})"


def io_value(state, name):
    """A signal's value in an IODeviceStatus, as intera_io reads it (its format must carry "type" and "role")."""
    import json
    sig = next(x for x in state.signals if x.name == name)
    assert {"type", "role"} <= set(json.loads(sig.format))  # (the client reads both)
    return json.loads(sig.data)[0]


class IOClient:
    """IODeviceInterface's view of /io/<node>/<device>: its config, its state and set_signal_value."""

    def __init__(self, node, device, wait=10.0):
        from intera_core_msgs.msg import IOComponentCommand, IODeviceConfiguration, IODeviceStatus
        base = f"/io/{node}/{device}"
        self.config = Latest(f"{base}/config", IODeviceConfiguration)
        self.state = Latest(f"{base}/state", IODeviceStatus)
        self.pub = publisher(f"{base}/command", IOComponentCommand)
        assert self.config.wait(wait).time.secs != 0 and self.state.wait(10).time.secs != 0

    def get(self, name):
        return io_value(self.state.msg, name)

    def send(self, args: str) -> str:
        """A command re-sent every 0.1 s until acknowledged; its response ('' = applied)."""
        from intera_core_msgs.msg import IOComponentCommand
        stamp = rospy.Time.now()
        cmd = IOComponentCommand(time=stamp, op="set", args=args)
        assert wait_for(lambda: stamp in self.state.msg.commands, 5, period=0.1, every=lambda: self.pub.publish(cmd))
        return self.state.msg.responses[list(self.state.msg.commands).index(stamp)]

    def set(self, name, v, kind) -> str:
        import json
        return self.send(json.dumps({"signals": {name: {"format": {"type": kind}, "data": [v]}}}))

    def close(self):
        self.config.close()
        self.state.close()
