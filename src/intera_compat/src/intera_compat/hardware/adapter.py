"""Backend adapter: picks the control path a backend can carry from its capabilities.

* ``torque``   → inverse dynamics + PID, joint torques (every JointCommand mode);
* ``position`` → the setpoint's positions (TORQUE_MODE refused: the arm cannot take torques);
* ``velocity`` → velocity with position feedback (TORQUE_MODE refused).
Trajectory-only backends (waypoint controllers) have no streaming path: they are refused here
and driven through whole trajectories instead.
"""
from __future__ import annotations

from ..config import RobotConfig
from ..control.base import ControlLaw
from ..control.direct import DirectLaw
from ..control.inverse_dynamics import InverseDynamicsLaw
from ..model.robot_model import RobotModel
from .base import Backend, Capability, CommandMode, HardwareCommand


class BackendAdapter:
    def __init__(self, backend: Backend, law: ControlLaw, mode: CommandMode):
        self.backend, self.law, self.mode = backend, law, mode
        self.command = HardwareCommand.zeros(len(backend.joint_names), mode)

    def supports(self, cap) -> bool:
        return cap is None or self.backend.has(cap)

    def write(self) -> None:
        self.backend.write(self.command)


def make_adapter(backend: Backend, cfg: RobotConfig, rm: RobotModel, dt: float) -> BackendAdapter:
    n = len(backend.joint_names)
    if backend.has(Capability.TORQUE):
        c = cfg.control
        fr = c.get("friction") or {}
        law = InverseDynamicsLaw(rm, c["kp"], c["kd"], c["ki"], c["integral_limit"], dt, fr.get("viscous"),
                                 fr.get("coulomb"), float(fr.get("velocity", 0.02)))
        return BackendAdapter(backend, law, CommandMode.TORQUE)
    if backend.has(Capability.POSITION):
        return BackendAdapter(backend, DirectLaw(n), CommandMode.POSITION)
    if backend.has(Capability.VELOCITY):
        return BackendAdapter(backend, DirectLaw(n, float(cfg.control.get("velocity_kp", 10.0))), CommandMode.VELOCITY)
    raise ValueError(f"backend {type(backend).__name__} has no streaming interface (torque, position or velocity)")
