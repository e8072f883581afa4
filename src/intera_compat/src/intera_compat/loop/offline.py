"""The loop without processes or ROS: the realtime process's cycle (``LoopCycle.step``) on the
MuJoCo Sawyer, stepped synchronously as fast as possible. The channel is the real shared-memory
channel (both ends in this process), so tests exercise exactly what the process runs.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..config import RobotConfig, load_config
from ..hardware.sim import SimBackend
from ..model.robot_model import RobotModel
from .channel import Channel
from .client import TrajectoryClient
from .commands import make_validator
from .cycle import LoopCycle


class OfflineLoop:
    def __init__(self, cfg: RobotConfig | None = None, initial_pose: str = "neutral", start_enabled: bool = True,
                 backend=None):
        self.cfg = cfg or load_config()
        self.rm = RobotModel(self.cfg)
        n = len(self.cfg.all_joints)
        self.backend = backend or SimBackend(self.rm, self.cfg.full_pose(initial_pose))
        self.backend.connect()
        self.dt = self.backend.period
        pairs = len(self.rm.tight.collisionPairs)
        self.channel = Channel(n, create=True, pairs=pairs)  # the listener's end
        self._loop_end = Channel(n, self.channel.names, pairs=pairs)  # the loop's end
        weakref.finalize(self, _close, self._loop_end, self.channel)
        self.channel.set_control(speed_ratio=self.cfg.control["speed_ratio"],
                                 command_timeout=self.cfg.control["command_timeout"])
        self.cycle = LoopCycle(self.cfg, self.rm, self.backend, self._loop_end, start_enabled=start_enabled)
        self.validator = make_validator(self.cfg)
        self.trajectories = TrajectoryClient(self.channel, self.cfg)
        self.state = self.channel.state  # read after every step: ``state.local`` is the latest

    # ---- inputs, as the listeners would write them
    def send(self, mode: int, names, **arrays):
        v = self.validator.check(mode, list(names), {k: list(a) for k, a in arrays.items()}, self.cycle.now)
        if v.ok:
            assert self.channel.post_command(v.mode, v.mask, v.arrays)
        return v

    def event(self, kind: int, *values) -> None:
        assert self.channel.post(kind, np.asarray(values, float))

    def set(self, **values) -> None:
        self.channel.set_control(**values)

    # ---- stepping
    def step(self) -> None:
        self.cycle.step()
        self.cycle.publish_safety()
        self.validator.relax(self.cycle.bypass)  # (the listener follows the safety record)
        self.state.read()
        self.trajectories.poll()

    def run(self, seconds: float, every=None, period: float = 0.01) -> None:
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


def _close(*channels) -> None:
    for c in channels:
        c.close()
