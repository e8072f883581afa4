"""``command_watchdog`` (ros_control.launch): zeros to the arm's velocity / effort group controller when its command
stream stops — the dead-man for the realtime_loop node's own death, which its bridge cannot cover (the logic:
``hardware/command_watchdog.py``).

Parameters: ``~config`` (robot config; "" the default), ``~interface`` ("" the config's ``ros_control.interface``),
``~rate`` (Hz, 0 the config's), ``~timeout`` (s of silence after a moving command; 0: the config's
``ros_control`` silence, ``max(stop_timeout, 3 periods)``), ``~repeat`` (s between zeros while the silence lasts;
0 once), ``~topic`` ("" the controller's command topic from the config). Times are ROS time (simulated time under
``/use_sim_time``). On a position or trajectory controller there is nothing to do (it holds its last position):
the node says so and exits. Run it on the arm's computer (a ``<machine>``) and it also covers a lost network link.
"""
from __future__ import annotations

import threading

import rospy
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from ..config import load_config
from ..hardware.command_watchdog import IDLE, STOP, CommandWatchdog
from ..hardware.ros_control import RosControlSettings


class CommandWatchdogNode:
    def __init__(self, topic: str, n: int, dog: CommandWatchdog, what: str):
        self.topic, self.dog, self.what = topic, dog, what
        self.me = rospy.get_name()
        self.lock = threading.Lock()  # the subscriber's and the timer's threads share the watchdog
        self.zeros = Float64MultiArray(data=[0.0] * n)
        self.zeros.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
        self.pub = rospy.Publisher(topic, Float64MultiArray, queue_size=1, tcp_nodelay=True)
        self.sub = rospy.Subscriber(topic, Float64MultiArray, self._on_command, queue_size=1, tcp_nodelay=True)
        self.timer = rospy.Timer(rospy.Duration(dog.timeout / 4.0), self._check, reset=True)
        rospy.on_shutdown(self._leave)

    def _on_command(self, msg: Float64MultiArray) -> None:
        if msg._connection_header.get("callerid") == self.me:
            return  # (our own zeros)
        now = rospy.get_time()
        with self.lock:
            self.dog.heard(now, msg.data)

    def _check(self, _event) -> None:
        with self.lock:
            what = self.dog.poll(rospy.get_time())
        if what == IDLE:
            return
        self.pub.publish(self.zeros)
        if what == STOP:
            rospy.logwarn(f"command_watchdog: no command on {self.topic} for {self.dog.timeout:g} s after a moving "
                          f"one (is the realtime loop gone?): zero {self.what} sent")

    def _leave(self) -> None:
        with self.lock:
            due = self.dog.leaving()
        if due:
            self.pub.publish(self.zeros)
            rospy.logwarn(f"command_watchdog: shutting down while {self.topic} moved the arm: zero {self.what} sent")


def main() -> None:
    rospy.init_node("command_watchdog")
    try:
        cfg = load_config(rospy.get_param("~config", None) or None)
        s = RosControlSettings.from_config(cfg, str(rospy.get_param("~interface", "")),
                                           float(rospy.get_param("~rate", 0.0)))
        timeout = float(rospy.get_param("~timeout", 0.0)) or s.silence
        dog = CommandWatchdog(timeout, float(rospy.get_param("~repeat", 1.0)))
    except (ValueError, RuntimeError) as e:
        rospy.logfatal(f"command_watchdog: {e}")
        raise SystemExit(1) from None
    if not s.zeroed:
        rospy.loginfo(f"command_watchdog: a {s.interface} controller holds its last position by itself: nothing to "
                      f"watch")
        return
    topic = str(rospy.get_param("~topic", "")) or s.command_topic
    CommandWatchdogNode(topic, len(s.joints), dog, s.interface)
    rospy.loginfo(f"command_watchdog: zero {s.interface} to {topic} after {timeout:g} s without a command "
                  f"(then every {dog.repeat:g} s while silent)")
    rospy.spin()
