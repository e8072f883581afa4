"""The measured state a backend fills in place each cycle and the command the loop sends (preallocated records:
nothing allocated per cycle), and what a backend can do (``Capability``)."""
from __future__ import annotations

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
    WAYPOINT = "waypoint"  # a trajectory-only arm that takes single waypoints: POSITION commands go as one
    FREEDRIVE = "freedrive"
    FORCE_MODE = "force_mode"
    IO = "io"
    SIM_TIME = "sim_time"  # steps its own time: may run faster or slower than real time


# what a trajectory-only arm did with its last submission (``Backend.progress``)
PROGRESS_NONE, PROGRESS_ACTIVE, PROGRESS_DONE, PROGRESS_FAILED = 0, 1, 2, 3


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
    fault: int = 0  # data/faults.py code the backend reports (0: none)
    fault_joint: int = -1  # the joint it concerns (-1: the arm)
    estop: bool = False  # the arm's own E-stop is pressed (the robot's E-stop button follows it)

    @classmethod
    def zeros(cls, n: int) -> "HardwareState":
        block = np.zeros((3, n))  # position, velocity, effort contiguous (one copy to publish)
        hs = cls(block[0], block[1], block[2])
        hs.block = block
        return hs


@dataclass
class HardwareCommand:
    """What the loop sends each cycle; ``mode`` says which array the backend must use.

    Beside the stream, an arm with ``Capability.FORCE_MODE`` / ``FREEDRIVE`` is told what its own controller
    should do for interaction control (rows of ``cartesian``, six values each, zeros when not asked):
    ``force_axes`` (1: the arm regulates the force along / about this axis of ``force_frame``),
    ``force_wrench`` (what the tool should exert there, N / Nm, frame axes), ``force_frame`` (the task frame:
    position and rotation vector in the base frame); ``free_axes`` (1: the arm yields to a hand along / about this
    axis of ``free_frame``; any set: freedrive), ``free_frame`` (the feature frame, as ``force_frame``)."""

    mode: CommandMode
    effort: np.ndarray
    position: np.ndarray
    velocity: np.ndarray

    @classmethod
    def zeros(cls, n: int, mode: CommandMode = CommandMode.TORQUE) -> "HardwareCommand":
        block = np.zeros((3, n))  # contiguous: one reduction checks every array
        cmd = cls(mode, block[0], block[1], block[2])
        cmd.block = block
        cmd.cartesian = np.zeros((5, 6))
        cmd.force_axes, cmd.force_wrench, cmd.force_frame, cmd.free_axes, cmd.free_frame = cmd.cartesian
        return cmd
