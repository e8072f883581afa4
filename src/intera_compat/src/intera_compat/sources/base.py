"""The setpoint record and the interface every setpoint source implements."""
from __future__ import annotations

import abc

from ..data.setpoint import Setpoint
from ..data.state import HardwareState


class SetpointSource(abc.ABC):
    """One input kind. A source owns the joints in ``idx`` (a slice of the config order) and
    writes only those entries of the setpoint.

    * ``activate`` is called when the arbiter hands it the arm: start from ``sp`` (the setpoint
      the previous source produced last cycle), so switching never jumps;
    * ``update`` writes this cycle's setpoint and returns 0, or a fault code (``data.faults``);
    * ``rebase`` is called after the safety chain moved the setpoint (limits, following-error
      window): sources that integrate a reference pull it back so it cannot wind up.
    """

    #: True for streaming inputs that must keep arriving within ``joint_command_timeout``
    streaming: bool = False
    #: backend capability this source needs (None: any)
    requires = None

    def __init__(self, idx: slice):
        self.idx = idx

    def activate(self, sp: Setpoint, hw: HardwareState, now: float) -> None:
        """Take over from setpoint ``sp`` at loop time ``now``."""

    @abc.abstractmethod
    def update(self, now: float, hw: HardwareState, sp: Setpoint) -> int:
        """Write this cycle's setpoint for ``self.idx``; 0 or a fault code."""

    def rebase(self, sp: Setpoint) -> None:
        """The safety chain changed ``sp`` for this source's joints (anti-windup)."""
