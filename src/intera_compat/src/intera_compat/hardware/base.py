"""The backend interface every arm (MuJoCo, UR, Cobot, ros_control) implements.

The realtime loop calls ``read(state)`` then ``write(command)`` once per cycle, in-place on
preallocated records, so a backend allocates nothing per cycle. Arrays are in config order
(arm joints, then the head joint if the backend has one).
"""
from __future__ import annotations

import abc
import enum
from dataclasses import dataclass, field

import numpy as np


class Capability(str, enum.Enum):
    TORQUE = "torque"  # accepts joint torques (full dynamics control in the loop)
    POSITION = "position"  # accepts joint position setpoints
    VELOCITY = "velocity"  # accepts joint velocity setpoints
    TRAJECTORY_ONLY = "trajectory_only"  # only whole trajectories (no streaming)
    WRENCH = "wrench"  # measures the endpoint wrench
    EFFORT = "effort"  # measures link-side joint torques (collision detection needs them)
    SPEED_SCALING = "speed_scaling"  # reports a speed-scaling factor (UR slider, Cobot progress)
    FREEDRIVE = "freedrive"
    FORCE_MODE = "force_mode"
    IO = "io"
    SIM_TIME = "sim_time"  # steps its own time: may run faster or slower than real time


class CommandMode(enum.IntEnum):
    TORQUE = 1
    POSITION = 2
    VELOCITY = 3


@dataclass
class HardwareState:
    """Measured state, filled in place by ``Backend.read``."""

    position: np.ndarray  # rad
    velocity: np.ndarray  # rad/s
    effort: np.ndarray  # Nm, measured joint torque
    wrench: np.ndarray = field(default_factory=lambda: np.zeros(6))  # N, Nm at the tip (base axes)
    speed_scaling: float = 1.0

    @classmethod
    def zeros(cls, n: int) -> "HardwareState":
        block = np.zeros((3, n))  # position, velocity, effort contiguous (one copy to publish)
        hs = cls(block[0], block[1], block[2])
        hs.block = block
        return hs


@dataclass
class HardwareCommand:
    """What the loop sends each cycle; ``mode`` says which array the backend must use."""

    mode: CommandMode
    effort: np.ndarray
    position: np.ndarray
    velocity: np.ndarray

    @classmethod
    def zeros(cls, n: int, mode: CommandMode = CommandMode.TORQUE) -> "HardwareCommand":
        block = np.zeros((3, n))  # contiguous: one reduction checks every array
        cmd = cls(mode, block[0], block[1], block[2])
        cmd.block = block
        return cmd


class Backend(abc.ABC):
    """One arm. Subclasses declare ``capabilities`` and ``period`` (native cycle, s)."""

    capabilities: frozenset = frozenset()
    period: float = 0.001

    def __init__(self, joint_names: list[str]):
        self.joint_names = list(joint_names)

    def has(self, cap: Capability) -> bool:
        return cap in self.capabilities

    def connect(self) -> None:
        """Open the connection / build the plant. Called once, before the first read."""

    @abc.abstractmethod
    def read(self, state: HardwareState) -> None:
        """Fill ``state`` with the latest measurement."""

    @abc.abstractmethod
    def write(self, command: HardwareCommand) -> None:
        """Send one cycle's command (simulated backends step their plant here)."""

    def close(self) -> None:
        """Release the hardware (stop streaming, brakes on)."""
