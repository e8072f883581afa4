"""What the emulated controllers share: a MuJoCo arm behind its own position servo (the config's model), the
controller's cycle on a thread of its own (``_loop``, until ``stop``), and the controller's clock: ``now`` is the
time of the current cycle's slot in its schedule (s since it started), ``clock()`` the time something arrives from
outside. A cycle that runs late (the emulator's thread stalled, then catches up) counts at its slot, so what the
controller times — a watchdog, a lifebit — sees the client's silences and not the emulator's own stalls."""
from __future__ import annotations

import threading
import time

from ..config import load_config
from ..data.state import CommandMode, HardwareCommand, HardwareState
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
        self.t0 = time.monotonic()  # the controller started
        self.now = 0.0  # s: the current cycle's slot (``_loop`` sets it)

    def clock(self) -> float:
        """The controller's clock (s since it started), for what arrives from outside between its cycles."""
        return time.monotonic() - self.t0

    def start(self) -> None:
        self._run = True
        self._thread.start()

    def stop(self) -> None:
        self._run = False
        if self._thread.is_alive():
            self._thread.join(1.0)

    def _loop(self) -> None:
        raise NotImplementedError
