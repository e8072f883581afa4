"""A jerk-limited stop: brings moving joints from (q, v, a) to rest (ruckig velocity interface).

Used wherever the arm must stop smoothly instead of being pulled back to where it was: command
timeout, trajectory cancel. Limits are the joint acceleration limits and ``jerk_factor ×`` those
per second; the arm comes to rest wherever the ramp ends.

A stop never runs back: a joint braking hard at low speed (its velocity below a²/2j) cannot shed its braking
within the jerk limit before its velocity reaches zero — ruckig's profile passed through zero and came back (50 mrad
on a Sawyer's base after a stream timed out braking at the acceleration limit; 65 mrad at a position limit). Such a
joint gets the jerk that brings its velocity and its acceleration to zero together, a²/2|v| (up to ``JERK_CAP`` ×
its limit: a short, firm bite instead of an effort step); beyond that cap it rests where its velocity reaches zero
(its braking ends there at once). A joint at rest when the stop starts stays at rest.
"""
from __future__ import annotations

import numpy as np
from ruckig import ControlInterface, InputParameter, OutputParameter, Result, Ruckig, RuckigError

JERK_CAP = 10.0  # × the jerk limit: the most a joint braking at low speed gets to end its braking at rest


class StopRamp:
    def __init__(self, vmax: np.ndarray, amax: np.ndarray, dt: float, jerk_factor: float = 10.0):
        n = self.n = len(vmax)
        self.otg = Ruckig(n, dt)
        self.inp = InputParameter(n)
        self.out = OutputParameter(n)
        self.inp.control_interface = ControlInterface.Velocity
        self.inp.max_velocity = np.asarray(vmax, float).tolist()
        self.inp.max_acceleration = np.asarray(amax, float).tolist()
        self.jerk = np.asarray(amax, float) * jerk_factor
        self.inp.max_jerk = self.jerk.tolist()
        self.inp.target_velocity = [0.0] * n
        self.inp.target_acceleration = [0.0] * n
        self.q, self.v, self.a = np.zeros(n), np.zeros(n), np.zeros(n)
        self.dir = np.zeros(n)  # each joint's direction of motion when the stop started (0: at rest, or done)
        self._back = np.zeros(n, dtype=bool)
        self._tmp = np.zeros(n)
        self._j = np.zeros(n)
        self.active = False

    def start(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> None:
        """Begin stopping from this state (rad, rad/s, rad/s²)."""
        self.q[:], self.v[:], self.a[:] = q, v, a
        np.sign(self.v, out=self.dir)
        self.a[self.dir == 0.0] = 0.0  # (at rest: it stays there)
        inp = self.inp
        inp.current_position = self.q.tolist()
        inp.current_velocity = np.clip(self.v, -np.asarray(inp.max_velocity), inp.max_velocity).tolist()
        inp.current_acceleration = np.clip(self.a, -np.asarray(inp.max_acceleration), inp.max_acceleration).tolist()
        j, av = self._j, np.abs(self.v)
        np.multiply(self.a, self.a, out=j)
        np.divide(j, 2.0 * av, out=j, where=av > 0.0)  # a²/2|v|: velocity and acceleration reach zero together
        np.copyto(j, self.jerk, where=(self.a * self.dir >= 0.0) | (j <= self.jerk))  # (braking hard, slow only)
        np.minimum(j, JERK_CAP * self.jerk, out=j)
        j *= 1.0 + 1e-9  # (ruckig: within its limit, not on it)
        inp.max_jerk = j.tolist()
        self.active = bool(np.any(self.v))

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
            back = self._back
            np.multiply(self.v, self.dir, out=self._tmp)
            np.less(self._tmp, 0.0, out=back)  # (at rest, or done: dir 0)
            if back.any():  # its velocity reached zero: it rests there (no run-back), the others stop on
                self.v[back] = 0.0
                self.a[back] = 0.0
                self.dir[back] = 0.0
                self.inp.current_velocity = self.v.tolist()
                self.inp.current_acceleration = self.a.tolist()
            self.active = res == Result.Working and bool(np.any(self.dir))
        else:
            self.v[:] = 0.0
            self.a[:] = 0.0
            self.active = False
        return self.active
