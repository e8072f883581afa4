"""An effort arm's dead-man hold (``hardware/effort_hold.py``) wired to the arm's effort group controller: the bridge's
(the loop process died or hung) and ``command_watchdog``'s (the realtime_loop node died). One torque per joint-state
sample while it holds, zeros once (logged) when the samples cannot be trusted, a log line when anything changes,
and at the holder's shutdown ``leave``: hold until the arm is at rest (``hold_on_exit`` of its stamps at most), then
gravity compensation at its pose as the last word, which the controller keeps.

Times: ROS time (``rospy.get_time``) for freshness and the silence, the arm's stamps for rest and ``hold_on_exit``.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import rospy
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from ..hardware.effort_hold import HOLD, LAST_WORD, WAIT, EffortHold, exit_verdict

LEAVE_POLL = 0.01  # s between looks at the hold while leaving
LEAVE_GUARD = 5.0  # s of wall time a leaving holder gives the arm's stamps beyond hold_on_exit (a stopped clock)


class HoldStream:
    def __init__(self, hold: EffortHold, pub: rospy.Publisher, who: str, topic: str, check_period: float):
        self.hold, self.pub, self.who, self.topic = hold, pub, who, topic
        n = hold.n
        self.lock = threading.Lock()  # the hold: joint-state callbacks, the timer, the caller's start / stop / leave
        self.msg = Float64MultiArray()
        self.msg.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
        self.left = False  # the last word was sent: nothing more goes out
        self.sent = 0  # hold commands sent (zeros on a fallback included)
        if hold.capped:
            rospy.logwarn(f"{who}: the effort hold's frequency is more than the joint-state rate allows: "
                          f"{hold.omega / (2 * np.pi):.2g} Hz used")
        self.timer = rospy.Timer(rospy.Duration(check_period), self._check)

    @property
    def active(self) -> bool:
        return self.hold.active

    def _send(self) -> None:
        """(under ``lock``)"""
        self.msg.data = self.hold.tau.tolist()
        self.pub.publish(self.msg)
        self.sent += 1

    def observe(self, stamp: float, q, v) -> None:
        """A joint-state sample (config order; ``v`` None: the message had none); while holding, its torque goes
        out."""
        told = None
        with self.lock:
            if self.left:
                return
            h = self.hold
            now = rospy.get_time()
            h.observe(now, stamp, q, v)
            if h.active:
                st = h.command(now)
                if st == HOLD or h.changed:  # (a fallback's zeros once)
                    self._send()
                if h.changed:
                    told = (st, h.describe())
        if told is not None:
            (rospy.loginfo if told[0] == HOLD else rospy.logerr)(f"{self.who}: {told[1]}")

    def mark(self) -> bool:
        """A command went to the arm (not ours): remember where the arm is; a hold running ends (True)."""
        with self.lock:
            self.hold.mark()
            if not self.hold.active:
                return False
            self.hold.stop()
        rospy.loginfo(f"{self.who}: commands on {self.topic} again: the hold ends")
        return True

    def start(self, why: str) -> None:
        """The commands stopped (``why``): hold the arm where they left it, from the latest sample on."""
        with self.lock:
            h = self.hold
            if self.left or h.active:
                return
            now = rospy.get_time()
            h.start(now)
            st = h.command(now)
            if st == HOLD or h.changed:
                self._send()
            text = h.describe()
        rospy.logwarn(f"{self.who}: {why}: {text}")

    def _check(self, _event) -> None:
        with self.lock:
            if self.left or not self.hold.check(rospy.get_time()):
                return
            self._send()
            text = self.hold.describe()
        rospy.logerr(f"{self.who}: {text}")

    def leave(self, why: str, stream_moving=lambda: False, stream_timeout: float = 0.0) -> None:
        """The holder shuts down (``why``): keep holding until the arm rests (or ``hold_on_exit`` of its stamps), then
        send gravity compensation at its pose as the last word; nothing after. ``stream_moving()``: the loop's
        stream was last heard moving the arm (a hold may still start: wait for it)."""
        h = self.hold
        t0 = rospy.get_time()
        give_up = time.monotonic() + h.on_exit + stream_timeout + LEAVE_GUARD
        while True:
            moving = stream_moving()
            with self.lock:
                verdict = exit_verdict(h, moving, rospy.get_time() - t0, stream_timeout)
                late = verdict == WAIT and time.monotonic() > give_up
                if verdict != WAIT or late:
                    was_active, rest, held = h.active, h.at_rest(), h.held_for()
                    h.stop()
                    self.left = True
                    if verdict == LAST_WORD or (late and was_active):
                        gravity = h.gravity_word(rospy.get_time())
                        self._send()
                    break
            time.sleep(LEAVE_POLL)
        self.timer.shutdown()
        if verdict == LAST_WORD or (late and was_active):
            how = (f"at rest after {held:.2f} s of hold" if rest else
                   f"not at rest after {held:.2f} s of hold" + (" (its clock stopped?)" if late else ""))
            word = "gravity compensation at its pose (nothing holds it against a push or a payload the model " \
                   "lacks)" if gravity else "zero effort (no fresh joint state to compute gravity from)"
            rospy.logwarn(f"{self.who}: {why}: the arm {how}; last word to {self.topic}: {word}")
        elif was_active:
            rospy.logwarn(f"{self.who}: {why}: leaving the arm on zero effort (no trustworthy joint states)")
