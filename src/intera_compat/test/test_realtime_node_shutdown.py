"""The realtime_loop node's callbacks after its shutdown closed the channel to the loop: rospy may still deliver a
command, an enable or a speed ratio then, and each is a quiet no-op (they posted into the closed ring and printed
"'SpscRing' object has no attribute '_hdr'" tracebacks). No ROS master: the callbacks run on a bare instance over a
real channel."""
import contextlib

import numpy as np
import pytest
import rospy
from intera_core_msgs.msg import JointCommand
from std_msgs.msg import Bool, Float64, UInt16

from intera_compat.loop.channel import Channel
from intera_compat.ros.realtime_node import MSG_ENABLE, RealtimeLoopNode


@pytest.fixture
def node(monkeypatch):
    logs = []
    for name in ("logerr", "logwarn", "loginfo", "logerr_throttle", "logwarn_throttle", "logerr_throttle_identical",
                 "logwarn_throttle_identical"):
        monkeypatch.setattr(rospy, name, lambda *a, _n=name, **k: logs.append((_n, a)))
    n = RealtimeLoopNode.__new__(RealtimeLoopNode)
    n.channel = Channel(8, create=True)
    n.loop_hz = 1000.0
    n.logs = logs
    yield n
    with contextlib.suppress(AttributeError):  # (closed by the test already: a second close finds nothing)
        n.channel.close()


def callbacks(n):
    cmd = JointCommand(mode=JointCommand.POSITION_MODE, names=["right_j0"], position=[0.1])
    n._on_command(cmd)
    n._on_enable(Bool(True))
    n._on_timeout(Float64(0.2))
    n._on_speed_ratio(Float64(0.5))
    n._on_speed_override(Float64(0.5))
    n._on_rate(UInt16(50))
    return n._event(MSG_ENABLE, 1.0)


def test_callbacks_after_the_channel_closed_are_quiet_no_ops(node):
    with node.channel.lock:  # (as shutdown does it)
        node._closed = True
        node.channel.close()
    assert callbacks(node) is False
    assert not [x for x in node.logs if x[0] != "loginfo"]  # (no "ring full", no traceback)


def test_a_callback_caught_between_its_check_and_the_close_is_quiet_too(node, monkeypatch):
    """The flag was clear when the callback looked, and shutdown closed the channel before it posted."""
    post, set_control = node.channel.post, node.channel.set_control

    def closing(real):
        def f(*a, **k):
            with node.channel.lock:
                node._closed = True
                node.channel.close()
            return real(*a, **k)  # (into the closed ring: raises)
        return f
    monkeypatch.setattr(node.channel, "post", closing(post))
    assert node._event(MSG_ENABLE, 1.0) is False
    node._closed = False
    monkeypatch.setattr(node.channel, "set_control", closing(set_control))
    node._on_speed_ratio(Float64(0.5))
    assert not [x for x in node.logs if x[0] != "loginfo"]


def test_the_closed_ring_is_what_raised(node):
    """(what the flag guards against: the same post, without it, raises)"""
    node.channel.close()
    with pytest.raises(AttributeError, match="_hdr"):
        node._event(MSG_ENABLE, np.array([1.0]))
