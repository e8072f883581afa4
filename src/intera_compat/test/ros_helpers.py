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


def send_positions(pub, target):
    pub.publish(JointCommand(mode=JointCommand.POSITION_MODE, names=ARM[:len(target)], position=list(target)))
