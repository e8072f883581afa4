"""A jerk-limited stop: brings moving joints from (q, v, a) to rest (ruckig velocity interface).

Used wherever the arm must stop smoothly instead of being pulled back to where it was: command
timeout, trajectory cancel. Limits are the joint acceleration limits and ``jerk_factor ×`` those
per second; the arm comes to rest wherever the ramp ends.
"""
from __future__ import annotations

import numpy as np
from ruckig import ControlInterface, InputParameter, OutputParameter, Result, Ruckig, RuckigError


class StopRamp:
    def __init__(self, vmax: np.ndarray, amax: np.ndarray, dt: float, jerk_factor: float = 10.0):
        n = self.n = len(vmax)
        self.otg = Ruckig(n, dt)
        self.inp = InputParameter(n)
        self.out = OutputParameter(n)
        self.inp.control_interface = ControlInterface.Velocity
        self.inp.max_velocity = np.asarray(vmax, float).tolist()
        self.inp.max_acceleration = np.asarray(amax, float).tolist()
        self.inp.max_jerk = (np.asarray(amax, float) * jerk_factor).tolist()
        self.inp.target_velocity = [0.0] * n
        self.inp.target_acceleration = [0.0] * n
        self.q, self.v, self.a = np.zeros(n), np.zeros(n), np.zeros(n)
        self.active = False

    def start(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> None:
        """Begin stopping from this state (rad, rad/s, rad/s²)."""
        self.q[:], self.v[:], self.a[:] = q, v, a
        inp = self.inp
        inp.current_position = self.q.tolist()
        inp.current_velocity = np.clip(self.v, -np.asarray(inp.max_velocity), inp.max_velocity).tolist()
        inp.current_acceleration = np.clip(self.a, -np.asarray(inp.max_acceleration), inp.max_acceleration).tolist()
        self.active = bool(np.any(self.v) or np.any(self.a))

    def update(self) -> bool:
        """Advance one cycle; True while still moving. On a ruckig error: stop dead at ``q``."""
        if not self.active:
            return False
        try:
            res = self.otg.update(self.inp, self.out)
        except RuckigError:
            res = Result.Error
        if res == Result.Working or res == Result.Finished:
            self.q[:] = self.out.new_position
            self.v[:] = self.out.new_velocity
            self.a[:] = self.out.new_acceleration
            self.out.pass_to_input(self.inp)
            self.active = res == Result.Working
        else:
            self.v[:] = 0.0
            self.a[:] = 0.0
            self.active = False
        return self.active
