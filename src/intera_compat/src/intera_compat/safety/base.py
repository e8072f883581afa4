"""The interface every safety plugin implements, and the chain that runs them in order.

A plugin may check (and repair) the measured state before any source reads it (``on_state``),
reshape the setpoint before the control law (``on_setpoint``) and/or check and reshape the
command after it (``on_output``). Either returns 0 or a fault code
(``data.faults``) and leaves the joint concerned in ``fault_joint``. The chain stops at the
first fault; the loop then stops the robot. Adding a safety feature = adding a plugin file and
its name in the config's ``safety_chain`` list.

The command's last word is not the config's order: plugins marked ``final_output``
(``finite_guard``) check it after every other plugin, and always, even when one of those faulted,
so whatever ran before them the backend gets finite values and efforts within the tightest
``effort_limit`` any plugin of the chain declares (``torque_guard``: the joints' effort limits).
"""
from __future__ import annotations

import numpy as np

from ..data.setpoint import Setpoint
from ..data.state import HardwareCommand, HardwareState


class SafetyContext:
    """What the loop tells its safety plugins about this cycle (written by ``LoopCycle`` before the chain runs)."""

    def __init__(self):
        self.active = False  # robot enabled and not stopped
        self.trajectory = False  # the arm follows a trajectory (TRAJECTORY_MODE stream or a whole trajectory)
        self.avoidance = True  # collision avoidance on: not suppressed, no bypass
        self.detection = True  # collision detection on: not suppressed, not in zero-G, no bypass
        self.now = 0.0


class SafetyPlugin:
    name = "plugin"
    final_output = False  # True: ``on_output`` runs after every other plugin's, and always (SafetyChain)
    effort_limit = None  # per-joint |effort| bound (Nm) the plugin stands for; the final plugins enforce the tightest

    def __init__(self):
        self.fault_joint = -1
        self.interventions = 0  # cycles in which the plugin changed something

    def on_state(self, hw: HardwareState) -> int:
        """Check / repair the measured state in place, first thing in the cycle; 0 or a fault code."""
        return 0

    def on_setpoint(self, hw: HardwareState, sp: Setpoint) -> int:
        """Reshape the setpoint in place before the law; 0 or a fault code."""
        return 0

    def on_output(self, hw: HardwareState, sp: Setpoint, cmd: HardwareCommand) -> int:
        """Check / reshape the command in place after the law; 0 or a fault code."""
        return 0

    def commit(self, sp: Setpoint) -> None:
        """The setpoint as the whole chain left it (every plugin passed): remember what you need."""

    def reset(self, hw: HardwareState, sp: Setpoint) -> None:
        """The robot (re)starts from ``sp`` (enable, source switch after a fault)."""


class SafetyChain:
    def __init__(self, plugins: list):
        self.plugins = list(plugins)
        self.fault_code = 0
        self.fault_joint = -1
        self._state = [p for p in self.plugins if type(p).on_state is not SafetyPlugin.on_state]
        self._setpoint = [p for p in self.plugins if type(p).on_setpoint is not SafetyPlugin.on_setpoint]
        self._commit = [p for p in self.plugins if type(p).commit is not SafetyPlugin.commit]
        self._final = [p for p in self.plugins if p.final_output]
        self._output = [p for p in self.plugins if not p.final_output
                        and type(p).on_output is not SafetyPlugin.on_output]
        limits = [np.asarray(p.effort_limit, float) for p in self.plugins if p.effort_limit is not None]
        if limits:
            tightest = np.minimum.reduce(limits)
            if not np.all(tightest > 0.0):  # (False for a NaN too)
                raise ValueError(f"safety chain: effort limits must be > 0 Nm, got {tightest.tolist()}")
            for p in self._final:
                p.effort_limit = tightest.copy()

    def _result(self, p: SafetyPlugin, code: int) -> int:
        self.fault_code, self.fault_joint = code, p.fault_joint
        return code

    def on_state(self, hw: HardwareState) -> int:
        for p in self._state:
            code = p.on_state(hw)
            if code:
                return self._result(p, code)
        return 0

    def on_setpoint(self, hw: HardwareState, sp: Setpoint) -> int:
        np.copyto(sp.source_q, sp.q)
        for p in self._setpoint:  # (the base's on_setpoint does nothing: only the plugins that override it)
            code = p.on_setpoint(hw, sp)
            if code:
                return self._result(p, code)
        for p in self._commit:
            p.commit(sp)
        return 0

    def on_output(self, hw: HardwareState, sp: Setpoint, cmd: HardwareCommand) -> int:
        """The plugins in config order up to the first fault, then the final ones whatever happened: the
        first fault is the chain's."""
        code = 0
        for p in self._output:
            code = p.on_output(hw, sp, cmd)
            if code:
                self._result(p, code)
                break
        for p in self._final:
            c = p.on_output(hw, sp, cmd)
            if c and not code:
                code = self._result(p, c)
        return code

    def reset(self, hw: HardwareState, sp: Setpoint) -> None:
        for p in self.plugins:
            p.reset(hw, sp)

    def restart(self, hw: HardwareState, sp: Setpoint) -> None:
        """The robot restarts from ``sp`` as this cycle's final setpoint (no ``on_setpoint`` runs on it: a fault's
        cycle): reset, then committed — the next cycle steps from it, not from the cycle before it (``joint_limits``
        took the brakes' first step for a double one and chased it at the acceleration limit)."""
        self.reset(hw, sp)
        for p in self._commit:
            p.commit(sp)

    def get(self, name: str) -> SafetyPlugin | None:
        return next((p for p in self.plugins if p.name == name), None)
