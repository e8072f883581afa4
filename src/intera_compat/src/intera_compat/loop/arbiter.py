"""Which setpoint source drives the arm this cycle.

Priority: the brakes while the robot is not enabled (or stopped); then an engaged override
(slots for cuff zero-G and interaction control: sources with an ``engaged()`` method, highest
priority first); then the source of the latest request (a JointCommand mode, a whole
trajectory, or the hold it reverts to). The head joint keeps its own source whatever the
limb does. A switch hands the new source the last setpoint, so it never jumps.
"""
from __future__ import annotations

from ..data.codes import R_JOINT_COMMAND, R_ROBOT_DISABLED
from ..data.setpoint import Setpoint
from ..data.state import HardwareState
from ..sources.base import SetpointSource
from ..sources.trajectory import TrajectorySource


class Arbiter:
    def __init__(self, brake: SetpointSource, hold: SetpointSource, head: SetpointSource | None):
        self.brake, self.hold, self.head = brake, hold, head
        self.overrides: list = []
        self.selected: SetpointSource = hold
        self.active: SetpointSource = brake
        self.switches = 0

    def _switch(self, to: SetpointSource, sp: Setpoint, hw: HardwareState, now: float) -> None:
        old = self.active
        if isinstance(old, TrajectorySource):
            old.deactivate(R_ROBOT_DISABLED if to is self.brake else R_JOINT_COMMAND)
        to.activate(sp, hw, now)
        if to is self.brake:
            self.selected = self.hold  # after the brakes the arm starts from a hold, not an old request
        if old is self.brake and self.head is not None:
            self.head.activate(sp, hw, now)
        self.active = to
        self.switches += 1

    def select(self, source: SetpointSource, sp: Setpoint, hw: HardwareState, now: float) -> None:
        """A request for ``source`` arrived while the robot is active: it drives the limb from now
        on (unless overridden), starting this cycle even if the brakes were on until now."""
        self.selected = source
        if self.active is not source and not self._override():
            self._switch(source, sp, hw, now)

    def _override(self):
        for o in self.overrides:
            if o.engaged():
                return o
        return None

    def update(self, now: float, hw: HardwareState, sp: Setpoint, robot_active: bool) -> int:
        """Run the winning source (and the head's); returns its fault code."""
        want = (self._override() or self.selected) if robot_active else self.brake
        if want is not self.active:
            self._switch(want, sp, hw, now)
        code = want.update(now, hw, sp)
        if want is not self.brake and self.head is not None:
            code = code or self.head.update(now, hw, sp)
        return code
