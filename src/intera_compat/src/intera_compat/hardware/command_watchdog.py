"""A dead-man for a ros_control group controller that keeps its last command for ever (a
``JointGroupVelocityController`` or ``JointGroupEffortController`` has no timeout of its own).

It watches the commands going to the controller and says when to stop the arm — zeros; an effort arm, which would
fall on zeros, the node holds instead (``effort_hold.py``) —: once the stream has been silent for ``timeout`` after a
*moving* command (one not all zeros), and again every ``repeat`` s while the silence lasts (a zero lost or overtaken
by a late command is made good; ``repeat`` 0: once). A stream whose last word was zeros has stopped the arm itself:
nothing is sent. When the watchdog itself ends, a stream it saw moving the arm is zeroed at once (``leaving``):
nothing watches the arm after it (an effort arm: ``effort_hold.exit_verdict`` instead).

Plain Python, no ROS: times are seconds of whatever clock the caller reads (ROS time in the node, simulated
time under ``/use_sim_time``); a clock that goes back (a simulation reset) starts the silence again.
"""
from __future__ import annotations

import math

IDLE, STOP, REPEAT = 0, 1, 2  # poll(): nothing to send; zeros (a moving stream fell silent); zeros again


class CommandWatchdog:
    def __init__(self, timeout: float, repeat: float = 1.0):
        """``timeout``: s of silence after a moving command before zeros; ``repeat``: s between zeros while the
        silence lasts (0: zeros once)."""
        if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0.0):
            raise ValueError(f"command watchdog timeout {timeout!r} s: give a positive number")
        if not (isinstance(repeat, (int, float)) and math.isfinite(repeat) and repeat >= 0.0):
            raise ValueError(f"command watchdog repeat {repeat!r} s: give 0 (once) or a positive number")
        self.timeout, self.repeat = float(timeout), float(repeat)
        self.last: float | None = None  # when the last command was heard (None: none yet)
        self.moving = False  # the last command heard was not all zeros
        self.zeroed_at: float | None = None  # when zeros were last sent, since the last command heard
        self.heard_count = 0
        self._skipped = False  # the last poll was skipped as late
        self.stops = 0  # moving streams that fell silent and were zeroed
        self.sent = 0  # zero commands to send, in all (stops, repeats, leaving)

    def heard(self, now: float, command) -> None:
        """A command went to the controller at ``now`` (anyone's but ours)."""
        self.last = now
        self.moving = any(x != 0.0 for x in command)  # (a NaN counts as moving: zeros are safe whatever it holds)
        self.zeroed_at = None
        self.heard_count += 1

    def poll(self, now: float, late: bool = False) -> int:
        """What to do at ``now``: ``IDLE``, or send zeros (``STOP``: a moving stream fell silent; ``REPEAT``: it is
        still silent). ``late``: this poll comes late (the watchdog's own process stalled): commands may be waiting
        in its queue, so it decides nothing this once — a silence it sees after its own stall is not the stream's
        (zeros into a live stream are a velocity step on the arm); two late polls in a row decide as usual."""
        if late and not self._skipped:
            self._skipped = True
            return IDLE
        self._skipped = False
        last = self.last
        if last is None:
            return IDLE  # (a controller starts at zero: nothing to stop before a first command)
        if now < last or (self.zeroed_at is not None and now < self.zeroed_at):
            self.last = now  # the clock went back: the silence starts again
            if self.zeroed_at is not None:
                self.zeroed_at = now
            return IDLE
        if now - last < self.timeout:
            return IDLE
        if self.moving:
            self.moving = False
            self.stops += 1
            what = STOP
        elif self.zeroed_at is None or self.repeat <= 0.0 or now - self.zeroed_at < self.repeat:
            return IDLE
        else:
            what = REPEAT
        self.zeroed_at = now
        self.sent += 1
        return what

    def leaving(self) -> bool:
        """The watchdog ends: True if the last command heard was moving the arm (send zeros now)."""
        if not self.moving:
            return False
        self.moving = False
        self.stops += 1
        self.sent += 1
        return True
