"""``command_watchdog`` (ros_control.launch): stops the arm's velocity / effort group controller when its command
stream stops — the dead-man for the realtime_loop node's own death, which its bridge cannot cover (the logic:
``hardware/command_watchdog.py``). A velocity arm gets zeros. An effort arm would fall on zeros: it is held from its
joint states instead (``hardware/effort_hold.py``, ``hold_stream.py``: gravity compensation and a damped spring at
the pose where the commands stopped, zero effort only while the joint states are stale or missing) until commands
come back; when the watchdog shuts down (a launch taken down with the realtime_loop node) it holds on until the arm
rests (``ros_control.hold_on_exit`` at most) and leaves gravity compensation at its pose as the last word.

Parameters: ``~config`` (robot config; "" the default), ``~interface`` ("" the config's ``ros_control.interface``),
``~rate`` (Hz, 0 the config's), ``~link_timeout`` (s, 0 the config's), ``~timeout`` (s of silence after a moving
command; 0: ``RosControlSettings.watchdog_silence``, the bridge's silence and on a velocity arm a link timeout
more), ``~repeat`` (s between zeros while the silence lasts; 0 once), ``~topic`` ("" the controller's command
topic from the config). Times are ROS time (simulated time under ``/use_sim_time``). On a position or trajectory
controller there is nothing to do (it holds its last position): the node says so and exits. Run it on the arm's
computer (a ``<machine>``) and it also covers a lost network link. The effort hold's model is built from the same
config (its URDF) as the loop's.
"""
from __future__ import annotations

import threading

import rospy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from ..config import load_config
from ..hardware.command_watchdog import IDLE, STOP, CommandWatchdog
from ..hardware.ros_control import JointStateMap, RosControlSettings
from ..model.robot_model import RobotModel
from .hold_stream import HoldStream
from .node_init import init_node


class CommandWatchdogNode:
    """``hold``: an effort arm's (None: zeros stop the arm); ``s``: the ros_control settings (its joint states)."""

    def __init__(self, topic: str, n: int, dog: CommandWatchdog, what: str, s: RosControlSettings | None = None,
                 rm: RobotModel | None = None):
        self.topic, self.dog, self.what = topic, dog, what
        self.me = rospy.get_name()
        # the subscriber's and the timer's threads share the watchdog (taken before the hold's own lock, never after)
        self.lock = threading.Lock()
        self.zeros = Float64MultiArray(data=[0.0] * n)
        self.zeros.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
        self.pub = rospy.Publisher(topic, Float64MultiArray, queue_size=1, tcp_nodelay=True)
        self.hold = None
        if what == "effort":
            self.hold = HoldStream(s.effort_hold(rm), self.pub, "command_watchdog", topic, s.stale_after / 2.0)
            self._map = JointStateMap(s.joints)
            rospy.Subscriber(s.joint_states, JointState, self._on_joint_states, queue_size=1, tcp_nodelay=True)
        self.sub = rospy.Subscriber(topic, Float64MultiArray, self._on_command, queue_size=1, tcp_nodelay=True)
        self.timer = rospy.Timer(rospy.Duration(dog.timeout / 4.0), self._check, reset=True)
        rospy.on_shutdown(self._leave)

    def _on_joint_states(self, msg: JointState) -> None:
        idx, missing = self._map(msg.name)
        if len(missing):
            return  # (another publisher's joints, or a message lacking ours: no sample; the hold goes stale)
        try:
            q = [msg.position[k] for k in idx]
            v = [msg.velocity[k] for k in idx] if len(msg.velocity) else None
        except IndexError:
            return  # (a malformed message is no sample)
        self.hold.observe(msg.header.stamp.to_sec(), q, v)

    def _on_command(self, msg: Float64MultiArray) -> None:
        if msg._connection_header.get("callerid") == self.me:
            return  # (our own zeros or hold)
        now = rospy.get_time()
        with self.lock:
            self.dog.heard(now, msg.data)
            if self.hold is not None:
                self.hold.mark()  # (where the arm is: the hold's pose should the commands stop here; a hold ends)

    def _check(self, event) -> None:
        late = event.current_expected is not None and \
            (event.current_real - event.current_expected).to_sec() > self.dog.timeout / 2.0
        with self.lock:
            what = self.dog.poll(rospy.get_time(), late)
            if what == IDLE:
                return
            if self.hold is not None:
                if what == STOP:
                    self.hold.start(f"no command on {self.topic} for {self.dog.timeout:g} s (is the realtime loop "
                                    f"gone?)")
                return  # (the hold streams for itself; a fallback's zeros were sent once, and stay)
        self.pub.publish(self.zeros)
        if what == STOP:
            rospy.logwarn(f"command_watchdog: no command on {self.topic} for {self.dog.timeout:g} s after a moving "
                          f"one (is the realtime loop gone?): zero {self.what} sent")

    def _moving(self) -> bool:
        with self.lock:
            return self.dog.moving

    def _leave(self) -> None:
        if self.hold is not None:  # (rospy's on_shutdown: the subscribers and the timer still run meanwhile)
            self.hold.leave("shutting down", self._moving, self.dog.timeout)
            return
        with self.lock:
            due = self.dog.leaving()
        if due:
            self.pub.publish(self.zeros)
            rospy.logwarn(f"command_watchdog: shutting down while {self.topic} moved the arm: zero {self.what} sent")


def main() -> None:
    init_node("command_watchdog")
    try:
        cfg = load_config(rospy.get_param("~config", None) or None)
        s = RosControlSettings.from_config(cfg, str(rospy.get_param("~interface", "")),
                                           float(rospy.get_param("~rate", 0.0)),
                                           float(rospy.get_param("~link_timeout", 0.0)))
        timeout = float(rospy.get_param("~timeout", 0.0)) or s.watchdog_silence
        dog = CommandWatchdog(timeout, float(rospy.get_param("~repeat", 1.0)))
    except (ValueError, RuntimeError) as e:
        rospy.logfatal(f"command_watchdog: {e}")
        raise SystemExit(1) from None
    if not s.zeroed:
        rospy.loginfo(f"command_watchdog: a {s.interface} controller holds its last position by itself: nothing to "
                      f"watch")
        return
    topic = str(rospy.get_param("~topic", "")) or s.command_topic
    CommandWatchdogNode(topic, len(s.joints), dog, s.interface, s, RobotModel(cfg) if s.interface == "effort" else None)
    if s.interface == "effort":
        rospy.loginfo(f"command_watchdog: the arm held from {s.joint_states} (gravity + a damped spring) after "
                      f"{timeout:g} s without a command on {topic}")
    else:
        rospy.loginfo(f"command_watchdog: zero {s.interface} to {topic} after {timeout:g} s without a command "
                      f"(then every {dog.repeat:g} s while silent)")
    rospy.spin()
