"""The setpoint record (what the control law tracks this cycle) and the in-place arithmetic sources and safety
stages share on it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def clamp(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, out: np.ndarray) -> None:
    """out = min(max(x, lo), hi) with two ufunc calls (np.clip's Python wrapper costs ~1 µs a call)."""
    np.maximum(x, lo, out=out)
    np.minimum(out, hi, out=out)


def stopping_step(distance: np.ndarray, dstep: np.ndarray, out: np.ndarray) -> None:
    """out = the largest step (rad per cycle) from which steps shrinking by ``dstep`` per cycle
    (the acceleration limit) still stop within ``distance`` (≥ 0): s(s + Δs) / (2Δs) ≤ distance."""
    np.multiply(distance, 8.0, out=out)
    out *= dstep
    out += dstep * dstep
    np.sqrt(out, out=out)
    out -= dstep
    out *= 0.5


def limit_steps(pos: np.ndarray, lower: np.ndarray, upper: np.ndarray, dstep: np.ndarray,
                lo: np.ndarray, hi: np.ndarray) -> None:
    """The step range (rad per cycle) from ``pos`` that can still stop on the position limits:
    ``hi`` toward ``upper`` (≥ 0), ``lo`` toward ``lower`` (≤ 0)."""
    np.subtract(upper, pos, out=hi)
    np.maximum(hi, 0.0, out=hi)
    stopping_step(hi, dstep, hi)
    np.subtract(pos, lower, out=lo)
    np.maximum(lo, 0.0, out=lo)
    stopping_step(lo, dstep, lo)
    np.negative(lo, out=lo)


@dataclass
class Setpoint:
    """What the control law should do this cycle, per joint (config order).

    ``q`` rad, ``v`` rad/s, ``a`` rad/s² are tracked by the law on every joint whose
    ``torque_only`` flag is False; joints with the flag set get ``tau`` (Nm) plus gravity
    compensation and no position feedback (TORQUE_MODE). ``gravity`` False removes gravity
    compensation from the output (``suppress_gravity_compensation``). ``fixed`` marks joints
    holding a fixed target (hold, brakes): the following-error window bounds their pull back
    but never faults them. The safety chain fills the rest: ``source_q`` is the source's own
    reference (before the chain shaped it), ``shaped`` tells whether ``joint_limits`` moved it
    this cycle, ``any_windowed`` whether the following-error window pinned some joint to the
    measured angle.
    """

    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    tau: np.ndarray
    torque_only: np.ndarray  # bool
    fixed: np.ndarray  # bool: a held target (windowed, never a following-error fault)
    gravity: bool = True
    source_q: np.ndarray | None = None
    shaped: bool = False
    any_windowed: bool = False

    @classmethod
    def zeros(cls, n: int) -> "Setpoint":
        block = np.zeros((4, n))  # q, v, a, tau contiguous: one reduction checks them all
        sp = cls(block[0], block[1], block[2], block[3], np.zeros(n, dtype=bool), np.zeros(n, dtype=bool),
                 source_q=np.zeros(n))
        sp.block = block
        return sp

    def track(self, i: slice, q, v, a, fixed: bool = False) -> None:
        """Joints ``i`` follow the reference ``q``, ``v``, ``a`` (arrays or scalars), no torque feed-through."""
        self.q[i] = q
        self.v[i] = v
        self.a[i] = a
        self.tau[i] = 0.0
        self.torque_only[i] = False
        self.fixed[i] = fixed

    def track_rows(self, i: slice, rows: np.ndarray, fixed: bool = False) -> None:
        """``track`` with the reference in one (4, m) array: rows q, v, a and a zero row (the torque) — three
        assignments instead of six (``block``: the record from ``zeros``)."""
        self.block[:, i] = rows
        self.torque_only[i] = False
        self.fixed[i] = fixed
