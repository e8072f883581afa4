"""The loop without processes or ROS: core + sim backend stepped synchronously, as fast as possible.

Used by unit tests and benchmarks to exercise exactly the code the realtime process runs.
"""
from __future__ import annotations

import numpy as np

from ..config import RobotConfig, load_config
from ..hardware.sim import SimBackend
from ..model.robot_model import RobotModel
from .commands import CommandMailbox, CommandValidator
from .core import LoopCore
from .layouts import command_layout, control_layout, state_layout
from .shm import Layout, Record


class _LocalRecord:
    """The ``SeqlockRecord`` API over private memory (single process)."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.raw = np.zeros(layout.size)
        self.shared = self.local = Record(layout, self.raw)

    def publish_local(self) -> None:
        self.raw[0] += 2


class OfflineLoop:
    def __init__(self, cfg: RobotConfig | None = None, initial_pose: str = "neutral", start_enabled: bool = True):
        self.cfg = cfg or load_config()
        self.rm = RobotModel(self.cfg)
        n = len(self.cfg.all_joints)
        self.backend = SimBackend(self.rm, self.cfg.full_pose(initial_pose))
        self.backend.connect()
        self.dt = self.backend.period
        self.command = _LocalRecord(command_layout(n))
        self.control = _LocalRecord(control_layout())
        self.state = _LocalRecord(state_layout(n))
        ctl = self.control.local
        ctl.speed_ratio[0] = self.cfg.control["speed_ratio"]
        ctl.command_timeout[0] = self.cfg.control["command_timeout"]
        self.core = LoopCore(self.cfg, self.rm, self.command.local, self.control.local, self.state.local, self.dt,
                             start_enabled=start_enabled)
        lim = self.cfg.limits
        self.validator = CommandValidator(self.cfg.all_joints, lim.lower, lim.upper, lim.velocity, lim.effort)
        self.mailbox = CommandMailbox(self.command)
        self.time = 0.0
        self.backend.read(self.core.hw_state)

    # ---- inputs, as the listeners would write them
    def send(self, mode: int, names, **arrays):
        v = self.validator.check(mode, list(names), {k: list(a) for k, a in arrays.items()})
        if v.ok:
            self.mailbox.post(v, self.state.local.consumed_cmd_id[0])
        return v

    def bump(self, key: str, **values):
        ctl = self.control.local
        for k, val in values.items():
            getattr(ctl, k)[0] = val
        getattr(ctl, key)[0] += 1

    def set(self, **values):
        for k, val in values.items():
            getattr(self.control.local, k)[0] = val

    # ---- stepping
    def step(self):
        self.backend.read(self.core.hw_state)
        self.core.step(self.time)
        self.backend.write(self.core.hw_cmd)
        self.time += self.dt

    def run(self, seconds: float, every=None, period: float = 0.01):
        """Step for ``seconds``; call ``every()`` each ``period`` (like a client streaming commands)."""
        n = int(round(seconds / self.dt))
        k_every = max(1, int(round(period / self.dt)))
        for k in range(n):
            if every is not None and k % k_every == 0:
                every()
            self.step()

    @property
    def q(self) -> np.ndarray:
        return self.state.local.position.copy()

    @property
    def arm_q(self) -> np.ndarray:
        return self.q[: self.cfg.n_arm]
