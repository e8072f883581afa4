"""The interface of a per-cycle control law: setpoint + measurement → backend command."""
from __future__ import annotations

import abc

from ..hardware.base import HardwareCommand, HardwareState
from ..sources.base import Setpoint


class ControlLaw(abc.ABC):
    @abc.abstractmethod
    def compute(self, hw: HardwareState, sp: Setpoint, cmd: HardwareCommand) -> None:
        """Fill ``cmd`` (in place) for this cycle."""

    def reset(self) -> None:
        """Forget integrator state (source switch, enable)."""
