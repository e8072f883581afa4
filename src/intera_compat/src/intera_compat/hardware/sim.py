"""MuJoCo Sawyer: a torque-driven plant stepped in lockstep with the loop (one ``mj_step`` per write)."""
from __future__ import annotations

import mujoco
import numpy as np

from ..model.mujoco_model import load_mujoco
from ..model.robot_model import RobotModel
from .base import Backend, Capability, CommandMode, HardwareCommand, HardwareState


class SimBackend(Backend):
    capabilities = frozenset({Capability.TORQUE, Capability.SIM_TIME})

    def __init__(self, rm: RobotModel, initial_q: np.ndarray | None = None):
        super().__init__(rm.joint_names)
        self.rm = rm
        self.period = float(rm.cfg.sim.get("timestep", 0.001))
        self.initial_q = None if initial_q is None else np.asarray(initial_q, float)
        self.m = None
        self.d = None

    def connect(self) -> None:
        self.m = load_mujoco(self.rm)
        self.d = mujoco.MjData(self.m)
        names = self.joint_names
        self._qadr = np.array([self.m.joint(n).qposadr[0] for n in names])
        self._dadr = np.array([self.m.joint(n).dofadr[0] for n in names])
        if self.initial_q is not None:
            self.d.qpos[self._qadr] = self.initial_q
        mujoco.mj_forward(self.m, self.d)
        self._lo = self.m.actuator_ctrlrange[:, 0].copy()
        self._hi = self.m.actuator_ctrlrange[:, 1].copy()
        self._tmp = np.zeros(len(self.joint_names))
        # MjData's arrays, fetched once (each attribute access builds a new array object)
        d = self.d
        self._qpos, self._qvel, self._ctrl = d.qpos, d.qvel, d.ctrl
        self._qfrc_act, self._qfrc_con = d.qfrc_actuator, d.qfrc_constraint

    def set_state(self, q: np.ndarray, v: np.ndarray | None = None) -> None:
        """Teleport the plant (tests, resets)."""
        self.d.qpos[self._qadr] = q
        self.d.qvel[self._dadr] = 0.0 if v is None else v
        mujoco.mj_forward(self.m, self.d)

    def read(self, state: HardwareState) -> None:
        self._qpos.take(self._qadr, out=state.position)
        self._qvel.take(self._dadr, out=state.velocity)
        # measured joint torque: what the motor delivers net of the constraint forces (dry friction,
        # joint-limit stops) — not the command
        self._qfrc_act.take(self._dadr, out=state.effort)
        self._qfrc_con.take(self._dadr, out=self._tmp)
        state.effort += self._tmp

    def write(self, command: HardwareCommand) -> None:
        if command.mode != CommandMode.TORQUE:
            raise ValueError("the MuJoCo Sawyer is torque-driven")
        ctrl = self._ctrl
        np.maximum(command.effort, self._lo, out=ctrl)
        np.minimum(ctrl, self._hi, out=ctrl)
        mujoco.mj_step(self.m, self.d)
