"""POSITION_MODE: time-synchronised, speed-ratio-limited setpoint generation (ruckig, online).

Every cycle ``update`` advances a jerk-limited setpoint toward the latest targets with every
joint scaled to arrive at the same time (Intera/SIM behaviour), velocity limited to
``speed_ratio × v_max`` and acceleration to ``max(speed_ratio, accel_floor) × a_max``.
"""
from __future__ import annotations

import struct

import numpy as np
from ruckig import InputParameter, OutputParameter, Result, Ruckig, RuckigError

MIN_RATIO = 1e-3  # ratio 0 would mean "never arrive"; the SDK clips to [0, 1]


class PositionInterpolator:
    def __init__(self, vmax: np.ndarray, amax: np.ndarray, dt: float, jerk_factor: float = 10.0,
                 accel_floor: float = 0.3):
        self.n = len(vmax)
        self.vmax = np.asarray(vmax, float)
        self.amax = np.asarray(amax, float)
        self.jerk_factor = jerk_factor
        self.accel_floor = accel_floor
        self.otg = Ruckig(self.n, dt)
        self.inp = InputParameter(self.n)
        self.out = OutputParameter(self.n)
        # q, v, a: rows of one block whose last row (a torque) stays zero — a setpoint's rows (Setpoint.track_rows)
        self.qva = np.zeros((4, self.n))
        self.q, self.v, self.a = self.qva[0], self.qva[1], self.qva[2]
        # ruckig's new state (three lists) into q, v, a in one call (three list → array assignments cost ~4x more)
        self._pack = struct.Struct(f"={3 * self.n}d").pack_into
        self._bytes = memoryview(self.qva).cast("B")
        self.target = np.zeros(self.n)
        self._dirty = True
        self._settled = False
        self._zero = [0.0] * self.n
        self.ratio = -1.0
        self.set_ratio(0.3)

    def set_ratio(self, ratio: float) -> None:
        """Clipped to [MIN_RATIO, 1]; a non-finite ratio is ignored (the last one stays)."""
        ratio = float(ratio)
        if not np.isfinite(ratio):
            return
        ratio = min(max(ratio, MIN_RATIO), 1.0)
        if ratio == self.ratio:
            return
        self.ratio = ratio
        acc = self.amax * max(ratio, self.accel_floor)
        self.acc = acc
        self.inp.max_velocity = (self.vmax * ratio).tolist()
        self.inp.max_acceleration = acc.tolist()
        self.inp.max_jerk = (acc * self.jerk_factor).tolist()
        self._dirty = True

    def reset(self, q: np.ndarray, v: np.ndarray | None = None, a: np.ndarray | None = None,
              keep_target: bool = False) -> None:
        """Restart from state (q, v, a); the target becomes ``q`` unless ``keep_target``.

        The acceleration is clipped to the speed ratio's limit: ruckig would otherwise spend its
        jerk budget unwinding an acceleration it may not use, and overshoot."""
        self.q[:] = q
        self.v[:] = 0.0 if v is None else np.clip(v, -self.vmax, self.vmax)
        self.a[:] = 0.0 if a is None else np.clip(a, -self.acc, self.acc)
        if not keep_target:
            self.target[:] = q
        self._dirty = True

    def set_target(self, target: np.ndarray) -> None:
        if (self.target != target).any():  # a re-sent target (move_to_joint_positions at 100 Hz) costs nothing
            self.target[:] = target
            self._dirty = True

    def update(self) -> bool:
        """Advance one cycle (results in ``q``, ``v``, ``a``); False if ruckig refused the input.

        Once the target is reached nothing is computed until the target or the state changes.
        On failure the state is left untouched: the caller decides how to stop.
        """
        if not self._dirty and self._settled:
            return True
        if self._dirty:
            inp = self.inp
            inp.current_position = self.q.tolist()
            inp.current_velocity = self.v.tolist()
            inp.current_acceleration = self.a.tolist()
            inp.target_position = self.target.tolist()
            inp.target_velocity = self._zero
            inp.target_acceleration = self._zero
            self._dirty = False
        try:
            res = self.otg.update(self.inp, self.out)
        except RuckigError:  # e.g. a non-finite target
            res = Result.Error
        if res != Result.Working and res != Result.Finished:
            self._dirty = True
            return False
        out = self.out
        self._pack(self._bytes, 0, *out.new_position, *out.new_velocity, *out.new_acceleration)
        out.pass_to_input(self.inp)
        self._settled = res == Result.Finished
        if self._settled:  # exactly at rest on the target
            self.q[:] = self.target
            self.v[:] = 0.0
            self.a[:] = 0.0
        return True
