"""The realtime_loop node's publisher thread when the loop process dies between the two sequence increments of a
state record write (issue 32 item 9): it notices, says so and shuts the node down instead of spinning for ever.
No ROS master: the node's thread runs on a bare instance, rospy's shutdown and logging stubbed."""
import os
import threading

import numpy as np
import rospy

from intera_compat.data.shm import SeqlockRecord
from intera_compat.loop.layouts import TICK_JOINT_STATES, state_layout
from intera_compat.ros.realtime_node import RealtimeLoopNode

HANG_GUARD_S = 60.0  # only a guard against a hang (the thread returns at once): no timing is asserted


class DeadLoop:
    """The loop process as ``subprocess.Popen`` shows it after it died (exit code 3)."""

    def __init__(self):
        self.polls = 0

    def poll(self):
        self.polls += 1
        return 3

    def wait(self, timeout=None):
        return 3


class Node:
    channel = None


def test_the_publisher_thread_stops_when_the_loop_died_mid_write(monkeypatch):
    shutdowns, errors = [], []
    monkeypatch.setattr(rospy, "signal_shutdown", lambda why: shutdowns.append(why))
    monkeypatch.setattr(rospy, "logerr", lambda msg, *a: errors.append(msg))
    monkeypatch.setattr(rospy, "is_shutdown", lambda: bool(shutdowns))
    state = SeqlockRecord(state_layout(8), create=True)
    read_fd, write_fd = os.pipe()
    try:
        state.publish_local()
        state.raw[0] += 1.0  # the loop died inside its next write: the sequence stays odd
        state.raw[1:] = np.nan
        os.write(write_fd, bytes([TICK_JOINT_STATES]))  # its last tick, with the pipe still open (not yet EOF)
        node = RealtimeLoopNode.__new__(RealtimeLoopNode)
        node.channel = Node()
        node.channel.state = state
        node.read_fd, node.proc = read_fd, DeadLoop()
        t = threading.Thread(target=node._publish_loop, daemon=True)
        t.start()
        t.join(HANG_GUARD_S)
        assert not t.is_alive(), "the publisher thread spins on a record the dead loop left mid-write"
        assert node.proc.polls >= 1
        assert shutdowns == ["realtime loop process exited"]
        assert errors and "exit code 3" in errors[0]
    finally:
        os.close(write_fd)
        os.close(read_fd)
        state.close()
