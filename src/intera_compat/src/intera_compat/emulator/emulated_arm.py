"""What the emulated controllers share: a MuJoCo arm behind its own position servo (the config's model), and the
controller's cycle on a thread of its own (``_loop``, until ``stop``)."""
from __future__ import annotations

import threading

from ..config import load_config
from ..hardware.base import CommandMode, HardwareCommand, HardwareState
from ..hardware.sim import SimPositionBackend
from ..model.robot_model import RobotModel


class EmulatedArm:
    def _init_arm(self, config: str, initial_pose: str, thread_name: str) -> None:
        """``cfg``, ``rm``, ``n`` (arm joints), the ``plant`` at ``initial_pose``, its ``state`` and a ``cmd``
        holding it there."""
        self.cfg = load_config(config)
        self.rm = RobotModel(self.cfg)
        self.n = self.cfg.n_arm
        self.plant = SimPositionBackend(self.rm, self.cfg.full_pose(initial_pose))
        self.plant.connect()
        self.state = HardwareState.zeros(len(self.cfg.all_joints))
        self.plant.read(self.state)
        self.cmd = HardwareCommand.zeros(len(self.cfg.all_joints), CommandMode.POSITION)
        self.cmd.position[:] = self.state.position
        self._run = False
        self._thread = threading.Thread(target=self._loop, daemon=True, name=thread_name)

    def start(self) -> None:
        self._run = True
        self._thread.start()

    def stop(self) -> None:
        self._run = False
        if self._thread.is_alive():
            self._thread.join(1.0)

    def _loop(self) -> None:
        raise NotImplementedError
