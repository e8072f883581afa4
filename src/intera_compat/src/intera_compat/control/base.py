"""The interface of a per-cycle control law: setpoint + measurement → backend command."""
from __future__ import annotations

import abc

from ..data.setpoint import Setpoint
from ..data.state import HardwareCommand, HardwareState


class ControlLaw(abc.ABC):
    freeze = False  # the integrator keeps its value this cycle (brakes stop the arm: its run-on is no model error)

    @abc.abstractmethod
    def compute(self, hw: HardwareState, sp: Setpoint, cmd: HardwareCommand) -> None:
        """Fill ``cmd`` (in place) for this cycle."""

    def reset(self) -> None:
        """Forget integrator state (source switch, enable)."""
