"""``robot_ready`` (sawyer_test.launch): says when the robot is ready for a script, so that a test never sleeps blindly.

It watches the master until every robot-side interface the Intera SDK uses is there (``doctor``'s list: the state
topics, the command topics, the IO nodes, the kinematics services, the motion and trajectory action servers —
those the launch leaves out excepted, ``~skip``), the parameters are loaded, joint states flow and ``/robot/state``
says enabled (or disabled, with ``~enabled`` false); then it publishes ``/robot/ready`` (std_msgs/Bool, latched)
True and sets the parameter ``/robot/ready``. It stays up (a latched topic lives as long as its publisher).
"""
from __future__ import annotations

import time

import rosgraph
import rospy
from intera_core_msgs.msg import RobotAssemblyState
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

from .doctor import INTERFACES, PARAMS
from .node_init import init_node


def missing(master: rosgraph.Master, skip=()) -> list:
    """What of the SDK's interfaces (and parameters) the master does not know of yet."""
    pubs, subs, srvs = master.getSystemState()
    published, subscribed, services = {t for t, _ in pubs}, {t for t, _ in subs}, {s for s, _ in srvs}
    out = [p for p in PARAMS if not master.hasParam(p)]
    for name, kind, _ in INTERFACES:
        if name in skip:
            continue
        there = {"pub": name in published, "sub": name in subscribed, "srv": name in services,
                 "act": f"{name}/status" in published and f"{name}/goal" in subscribed}[kind]
        if not there:
            out.append(f"{kind} {name}")
    return out


def main() -> None:
    init_node("robot_ready")
    enabled = bool(rospy.get_param("~enabled", True))
    skip = [s for s in str(rospy.get_param("~skip", "")).split() if s]
    timeout = float(rospy.get_param("~timeout", 120.0))
    pub = rospy.Publisher("/robot/ready", Bool, queue_size=1, latch=True)
    rospy.set_param("/robot/ready", False)
    rospy.on_shutdown(lambda: rospy.set_param("/robot/ready", False))  # (not ready once this launch ends)
    pub.publish(Bool(False))
    master = rosgraph.Master(rospy.get_name())
    deadline = time.monotonic() + timeout  # (wall time: sim time may not run yet)
    left = missing(master, skip)
    while left and not rospy.is_shutdown():
        if time.monotonic() > deadline:
            rospy.logerr(f"robot_ready: not ready after {timeout:g} s, missing: {', '.join(left)}")
            deadline = float("inf")
        time.sleep(0.2)
        left = missing(master, skip)
    seen = {}
    subs = [rospy.Subscriber("/robot/joint_states", JointState, lambda m: seen.__setitem__("js", m), queue_size=1),
            rospy.Subscriber("/robot/state", RobotAssemblyState, lambda m: seen.__setitem__("state", m),
                             queue_size=1)]
    deadline = time.monotonic() + timeout

    def as_asked() -> bool:
        state = seen.get("state")
        return "js" in seen and state is not None and state.enabled == enabled and not state.stopped
    while not as_asked() and not rospy.is_shutdown():
        if time.monotonic() > deadline:
            rospy.logerr(f"robot_ready: the robot is not {'enabled' if enabled else 'disabled'} and running after "
                         f"{timeout:g} s: {seen.get('state')}")
            deadline = float("inf")
        time.sleep(0.02)
    for sub in subs:
        sub.unregister()
    if rospy.is_shutdown():
        return
    rospy.set_param("/robot/ready", True)
    pub.publish(Bool(True))
    rospy.loginfo("robot_ready: every robot-side interface is up, /robot/ready")
    rospy.spin()
