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
        # views into MjData, made once (each attribute access builds a new array object); the
        # joints' entries as slices when they are contiguous (they are for the Sawyer model)
        d = self.d
        self._src = [self._view(d.qpos, self._qadr), self._view(d.qvel, self._dadr),
                     self._view(d.qfrc_actuator, self._dadr), self._view(d.qfrc_constraint, self._dadr)]
        self._ctrl = d.ctrl

    @staticmethod
    def _view(arr: np.ndarray, idx: np.ndarray):
        n = len(idx)
        if n and np.array_equal(idx, np.arange(idx[0], idx[0] + n)):
            return arr[idx[0]:idx[0] + n]
        return arr, idx  # not contiguous: gathered with take

    def set_state(self, q: np.ndarray, v: np.ndarray | None = None) -> None:
        """Teleport the plant (tests, resets)."""
        self.d.qpos[self._qadr] = q
        self.d.qvel[self._dadr] = 0.0 if v is None else v
        mujoco.mj_forward(self.m, self.d)

    def read(self, state: HardwareState) -> None:
        q, v, act, con = self._src
        _get(q, state.position)
        _get(v, state.velocity)
        # measured joint torque: what the motor delivers net of the constraint forces (dry friction,
        # joint-limit stops) — not the command
        _get(act, state.effort)
        if isinstance(con, tuple):
            state.effort += con[0][con[1]]
        else:
            state.effort += con

    def write(self, command: HardwareCommand) -> None:
        if command.mode != CommandMode.TORQUE:
            raise ValueError("the MuJoCo Sawyer is torque-driven")
        ctrl = self._ctrl
        np.maximum(command.effort, self._lo, out=ctrl)
        np.minimum(ctrl, self._hi, out=ctrl)
        mujoco.mj_step(self.m, self.d)


def _get(src, out: np.ndarray) -> None:
    if isinstance(src, tuple):
        src[0].take(src[1], out=out)
    else:
        np.copyto(out, src)
