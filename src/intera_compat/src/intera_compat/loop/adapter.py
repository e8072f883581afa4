"""Backend adapter: picks the control path a backend can carry from its capabilities.

* ``torque``   → inverse dynamics + PID, joint torques (every JointCommand mode);
* ``position`` → the setpoint's positions (TORQUE_MODE refused: the arm cannot take torques);
* ``velocity`` → velocity with position feedback (TORQUE_MODE refused).
Trajectory-only backends (waypoint controllers, a FollowJointTrajectory controller) have no streaming path:
JointCommands are refused for them (but POSITION_MODE on an arm that takes single waypoints: its target goes as
one), and the loop hands them whole trajectories (``forwarding.Forwarder``); the position path only keeps the loop's
reference.
"""
from __future__ import annotations

from ..config import RobotConfig
from ..control.base import ControlLaw
from ..control.direct import DirectLaw
from ..control.inverse_dynamics import InverseDynamicsLaw
from ..data.codes import POSITION_MODE, TORQUE_MODE, TRAJECTORY_MODE, VELOCITY_MODE
from ..data.state import Capability, CommandMode, HardwareCommand
from ..hardware.base import Backend
from ..model.robot_model import RobotModel

_MODE_NAMES = {POSITION_MODE: "POSITION_MODE", VELOCITY_MODE: "VELOCITY_MODE", TORQUE_MODE: "TORQUE_MODE",
               TRAJECTORY_MODE: "TRAJECTORY_MODE"}
_STREAMING = frozenset({Capability.TORQUE, Capability.POSITION, Capability.VELOCITY})


def mode_refusal(mode: int, caps: frozenset) -> str | None:
    """Why an arm with ``caps`` cannot carry JointCommand ``mode`` (None: it can)."""
    if not caps & _STREAMING:
        if mode == POSITION_MODE and Capability.WAYPOINT in caps:
            return None  # (its target goes as one waypoint)
        return f"{_MODE_NAMES.get(mode, mode)} needs a streaming arm; this one takes whole trajectories" + \
            (" and single waypoints (POSITION_MODE) only" if Capability.WAYPOINT in caps else " only")
    if mode == TORQUE_MODE and Capability.TORQUE not in caps:
        return "TORQUE_MODE needs an arm that takes joint torques; this one takes " + \
            " and ".join(sorted(c.value + "s" for c in caps & _STREAMING))
    return None


class BackendAdapter:
    def __init__(self, backend: Backend, law: ControlLaw, mode: CommandMode):
        self.backend, self.law, self.mode = backend, law, mode
        self.command = HardwareCommand.zeros(len(backend.joint_names), mode)
        self.forwarder = None  # a trajectory-only arm's path (forwarding.Forwarder: the loop wires it)

    def supports(self, cap) -> bool:
        return cap is None or self.backend.has(cap)

    def write(self, driving, robot_active: bool, speed_override: float) -> int:
        """This cycle's command to the arm — and to a trajectory-only arm the whole trajectory ``driving`` (the
        source driving the arm) starts, its stop, its waypoints. Returns a fault code (the arm's controller runs
        behind the reference) or 0."""
        code = 0 if self.forwarder is None else self.forwarder.step(driving, robot_active, speed_override)
        self.backend.write(self.command)
        return code


def make_adapter(backend: Backend, cfg: RobotConfig, rm: RobotModel, dt: float) -> BackendAdapter:
    n = len(backend.joint_names)
    if backend.has(Capability.TORQUE):
        c = cfg.control
        fr = c.get("friction") or {}
        law = InverseDynamicsLaw(rm, c["kp"], c["kd"], c["ki"], c["integral_limit"], dt, fr.get("viscous"),
                                 fr.get("coulomb"), float(fr.get("velocity", 0.02)), cfg.limits.effort)
        return BackendAdapter(backend, law, CommandMode.TORQUE)
    if backend.has(Capability.POSITION):
        return BackendAdapter(backend, DirectLaw(n), CommandMode.POSITION)
    if backend.has(Capability.VELOCITY):
        law = DirectLaw(n, float(cfg.control.get("velocity_kp", 10.0)), cfg.limits.velocity)
        return BackendAdapter(backend, law, CommandMode.VELOCITY)
    if backend.has(Capability.TRAJECTORY_ONLY):  # nothing is streamed: the positions are the loop's reference only
        return BackendAdapter(backend, DirectLaw(n), CommandMode.POSITION)
    raise ValueError(f"backend {type(backend).__name__} has no interface (torque, position, velocity or trajectory)")
