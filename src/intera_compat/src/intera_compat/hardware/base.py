"""The backend interface every arm (MuJoCo, UR, Cobot, ros_control) implements; ``registry.py`` names them.

The realtime loop calls ``read(state)`` then ``write(command)`` once per cycle, in-place on
preallocated records, so a backend allocates nothing per cycle. Arrays are in config order
(arm joints, then the head joint if the backend has one).

* **Capabilities** say which control path the loop takes (``adapter.py``): joint torques (inverse dynamics,
  impedance), positions or velocities (the arm's own servo; admittance with a wrench), or whole trajectories
  only; JointCommand modes the arm cannot carry are refused with the reason.
* **Pacing**: a backend whose arm is the clock (``clock = True``: a UR's 500 Hz, a ros_control arm's joint
  states) is waited on (``wait``) and the loop runs one cycle per sample at ``period``; otherwise the loop keeps
  its own schedule at ``period``. Either way, times in the loop are seconds of loop time, not cycles.
* **Robot state**: the loop calls ``enable()`` when the robot becomes enabled, ``disable()`` / ``stop()``
  when it is disabled or stopped (E-stop, fault, set_super_stop); both default to ``brake()``: hold still with
  the arm's own means (a torque arm has none: the loop's brake source holds it with torques, and keeps calling
  ``write``). Until ``enable()`` again, a backend that brakes itself ignores the commands it is given.
* **Reset / ready**: ``reset()`` on ``/robot/set_super_reset`` clears what the arm's controller latched;
  ``ready()`` False keeps an enabled robot from commanding an arm that is still being powered up.
* **Faults**: ``read`` sets ``state.fault`` (``data/faults.py``: link lost, protective stop, hardware E-stop,
  controller error; 0 none) and ``state.fault_joint``; any fault stops the robot (error + stopped) until a
  reset, and nothing moves on reconnect until reset + enable.
* **Trajectory-only** arms (waypoint controllers) implement ``submit`` / ``cancel`` / ``progress`` instead of
  streaming.
"""
from __future__ import annotations

import abc
import collections

from ..data.codes import ARM_RESULT_UNSUPPORTED
from ..data.state import Capability, HardwareCommand, HardwareState


class Backend(abc.ABC):
    """One arm. Subclasses declare ``capabilities`` and ``period`` (native cycle, s)."""

    capabilities: frozenset = frozenset()
    period: float = 0.001
    clock: bool = False  # the arm paces the loop (``wait``)
    holds_itself: bool = False  # disabled, its own controller holds it, even taking torques (a UR's direct torque)
    paced: bool = False  # trajectory-only: the loop's reference follows the arm's progress (its own timing)
    lags: bool = False  # clock backends that run one cycle per sample: ``lag`` counts what the cycles fell behind
    lag: float = 0.0  # s of the arm's time the loop's cycles did not run (its trajectories make it up: the loop)

    @classmethod
    def declared(cls, cfg, options: dict) -> frozenset:
        """The capabilities an instance built from ``cfg`` and ``options`` will have (before it is built)."""
        return cls.capabilities

    def __init__(self, joint_names: list[str]):
        self.joint_names = list(joint_names)
        self.answers: collections.deque = collections.deque()

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

    def wait(self, timeout: float) -> int:
        """Clock backends: block until the arm's next sample or ``timeout`` seconds; the cycles that sample is due
        (0: none came; 1 a cycle; more: the arm's time ran on by as many periods and the loop is to catch up; a bool,
        True for a sample, is taken as one)."""
        raise NotImplementedError(f"{type(self).__name__} is not a clock")

    def add_lag(self, ahead: float, elapsed: float, most: float) -> None:
        """One cycle ran for a sample ``ahead`` s of the arm's time after the last: the periods beyond it join
        ``lag``, no more than the loop's own clock saw pass (``elapsed``: a step of the arm's clock is no time lost;
        stamps that came early take off what late ones added), at most ``most`` — or what it held already (a
        trajectory that came late starts further behind: loop/lag.py)."""
        p = self.period
        self.lag = min(max(self.lag + min(ahead, elapsed + 0.5 * p) - p, 0.0), max(most, self.lag))

    def sample_timeout(self, dt: float) -> float:
        """Clock backends: how long the loop waits for the arm's next sample before it runs a cycle without one
        (``dt``: the period) — 1.5 periods."""
        return 1.5 * dt

    # ---- robot state (called on the robot's transitions, not every cycle) ----------------------------------
    def enable(self) -> None:
        """The robot is enabled: commands are to be executed from the next ``write`` on."""

    def brake(self) -> None:
        """Hold still with the arm's own means, and ignore commands until ``enable``."""

    def disable(self) -> None:
        self.brake()

    def stop(self) -> None:
        """A stop (E-stop, fault, set_super_stop): stop now. Default: ``brake``."""
        self.brake()

    def reset(self) -> None:
        """The robot was reset (``/robot/set_super_reset``): clear what the arm's controller latched (a protective
        stop, a stopped program) so that it can be enabled again; must not block the cycle (work that takes
        longer runs beside it, and ``read`` keeps reporting a fault that remains once it is done)."""

    # ---- requests to the arm's own controller (``data.codes`` ARM_*: zero the F/T sensor, set the payload,
    # tool contact); answered later through ``answers`` ((request id, ARM_RESULT_*, value), appended by any
    # thread): the cycle passes them on -----------------------------------------------------------------
    requests: frozenset = frozenset()  # the ``data.codes.ARM_REQUESTS`` names this arm serves

    def request(self, rid: float, code: int, args) -> None:
        """Start request ``code`` with ``args`` (a copy); must not block the cycle."""
        self.answers.append((rid, float(ARM_RESULT_UNSUPPORTED), 0.0))  # (the listener refuses these first)

    def ready(self) -> bool:
        """The arm executes commands now (False while it is powered up or its program started after ``enable``:
        the robot is reported enabled once it is). Called every cycle."""
        return True

    # ---- simulated arms --------------------------------------------------------------------------------
    def push(self, link: int, wrench, duration: float) -> None:
        """A simulated arm: push on link ``link`` (``model.mujoco_model.link_frames`` index) with ``wrench`` (force,
        torque; base axes, at the link frame's origin) for ``duration`` s (0: end a push). Real arms have nothing
        to push with (the listener offers /robot/sim/apply_wrench on simulated arms only)."""

    def simulate_fault(self, code: int, duration: float) -> None:
        """A simulated arm: report fault ``code`` (``data.faults``: link lost, protective stop, controller error,
        hardware E-stop) from ``read`` for ``duration`` s, as a real arm would. Real arms ignore it."""

    # ---- trajectory-only arms --------------------------------------------------------------------------
    def submit(self, t, q, v, a) -> bool:
        """Hand a whole trajectory (times (k,), positions/velocities/accelerations (k, n)) to the arm."""
        raise NotImplementedError(f"{type(self).__name__} streams: it takes no whole trajectories")

    def waypoint(self, q, speed) -> bool:
        """``Capability.WAYPOINT``: go to ``q`` (arm joints; a POSITION command's target) at no more than ``speed``
        (rad/s per joint), the arm's own way."""
        raise NotImplementedError(f"{type(self).__name__} takes no single waypoints")

    def cancel(self) -> None:
        """Stop the submitted trajectory (on its path where the arm can)."""
        raise NotImplementedError(f"{type(self).__name__} streams: it takes no whole trajectories")

    def progress(self) -> tuple[int, float]:
        """(PROGRESS_* state, seconds along the trajectory by the arm) of the submitted trajectory."""
        raise NotImplementedError(f"{type(self).__name__} streams: it takes no whole trajectories")

    def close(self) -> None:
        """Release the hardware (stop streaming, brakes on)."""
