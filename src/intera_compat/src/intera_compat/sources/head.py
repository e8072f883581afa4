"""The head pan (HeadPanCommand, contract §2.8): held where it is, turned to a target at
``speed_ratio × v_max``.

Modes (HeadPanCommand / HeadState): ACTIVE (1, and PASSIVE 0: the target is the pan joint's angle);
ACTIVE_CANCELLATION (2: the target is the head's yaw in the base frame, held whatever the arm's first
joint does — the pan is recomputed every cycle from the measured j0). ``blocked``: the yaw asked for
is out of the pan joint's reach (it goes as far as it can). NO_MODE_CHANGE (3) keeps the mode.
"""
from __future__ import annotations

import math

import numpy as np

from ..data.setpoint import Setpoint
from ..data.state import HardwareState
from .position import PositionSource

PASSIVE, ACTIVE, ACTIVE_CANCELLATION, NO_MODE_CHANGE = 0, 1, 2, 3
TWO_PI = 2.0 * math.pi
RETARGET = 1e-4  # rad: a cancelling pan target that moved less is not re-aimed


class HeadSource(PositionSource):
    """``yaw_offset``: the head's yaw in the base frame with the pan and ``j0`` at zero (both turn about the
    base's vertical: yaw = offset + q[j0] + pan); ``j0`` None: no cancellation (the target is the pan)."""

    def __init__(self, idx: slice, lower, upper, vmax, amax, dt: float, yaw_offset: float = 0.0,
                 j0: int | None = 0):
        super().__init__(idx, lower, upper, vmax, amax, dt)
        self.yaw_offset, self.j0 = float(yaw_offset), j0
        self.mode = ACTIVE
        self.yaw = 0.0
        self.blocked = False
        self.held = False  # the safety E-stop latch holds the head where it was (``hold_here``)
        self._pan = np.zeros(1)
        self._rest = np.zeros(1)
        self.set_ratio(1.0)

    @property
    def target(self) -> float:
        """The pan angle the head is heading for (rad)."""
        return float(self.interp.target[0])

    def command(self, target: float, speed_ratio: float, mode: int) -> None:
        """A validated HeadPanCommand (finite target, ratio in [0, 1], mode 0..3)."""
        if mode != NO_MODE_CHANGE:  # (PASSIVE holds its target like ACTIVE: the sim's head has no give)
            self.mode = ACTIVE if mode == ACTIVE_CANCELLATION and self.j0 is None else mode
        self.set_ratio(speed_ratio)
        if self.mode == ACTIVE_CANCELLATION:
            self.yaw = target  # (the pan follows in update())
        else:
            self._aim(target)

    def _aim(self, pan: float) -> None:
        lo, hi = float(self.lower[0]), float(self.upper[0])
        self._pan[0] = min(max(pan, lo), hi)
        self.blocked = False
        self.interp.set_target(self._pan)

    def _cancel(self, hw: HardwareState) -> None:
        """The pan that puts the head at ``yaw``: of the angles 2π apart, the reachable one nearest the current
        target; none reachable (the pan's range is short of a turn): the limit nearest to it (blocked)."""
        want = self.yaw - self.yaw_offset - float(hw.position[self.j0])
        lo, hi = float(self.lower[0]), float(self.upper[0])
        now = float(self.interp.target[0])
        want += TWO_PI * round((now - want) / TWO_PI)  # the equivalent nearest where the head is heading
        best, blocked = want, True
        for cand in (want, want - TWO_PI, want + TWO_PI):
            if lo <= cand <= hi and (blocked or abs(cand - now) < abs(best - now)):
                best, blocked = cand, False
        if blocked:  # (the yaw falls in the pan's gap: the limit nearer to it in angle, the one it is at kept while
            # it stays in the gap — never a sweep across the whole range because j0 jittered about the gap's middle)
            if now in (lo, hi):
                best = now
            else:
                best = hi if abs(math.remainder(want - hi, TWO_PI)) <= abs(math.remainder(want - lo, TWO_PI)) else lo
        self.blocked = blocked
        if abs(best - now) > RETARGET:  # (j0's measurement noise does not restart the interpolator every cycle)
            self._pan[0] = best
            self.interp.set_target(self._pan)

    def activate(self, sp: Setpoint, hw: HardwareState, now: float) -> None:
        """After the brakes: the head stays where it is (a cancelled yaw becomes the one it has now)."""
        super().activate(sp, hw, now)
        self.blocked = False
        if self.mode == ACTIVE_CANCELLATION:
            self.yaw = self.yaw_offset + float(hw.position[self.j0]) + float(self.interp.target[0])

    def hold_here(self, hw: HardwareState) -> None:
        """The safety E-stop latch: the head stops dead where it is measured and takes no target
        until ``release``; a cancelled yaw is not chased while held."""
        self.held = True
        self.blocked = False
        self.interp.reset(hw.position[self.idx], self._rest)

    def release(self, sp: Setpoint, hw: HardwareState, now: float) -> None:
        """The latch ended: the head stays where it is until its next command (a cancelled yaw becomes the one
        it has now, as after the brakes)."""
        self.held = False
        self.activate(sp, hw, now)

    def update(self, now: float, hw: HardwareState, sp: Setpoint) -> int:
        if self.mode == ACTIVE_CANCELLATION and not self.held:
            self._cancel(hw)
        return super().update(now, hw, sp)


def head_yaw(rm, q: np.ndarray, frame: str = "head") -> float:
    """The yaw of ``frame`` in the base frame at ``q`` (all joints, config order)."""
    r = rm.fk(q, frame).rotation
    return math.atan2(r[1, 0], r[0, 0])


def head_cancellation(rm, cfg, frame: str = "head") -> tuple[float, int | None]:
    """(yaw offset, j0 index) for ``HeadSource``: j0 None when the model has no ``frame`` or the head's yaw is
    not the arm's first joint plus the pan (cancellation then refused: the target stays the pan angle)."""
    n = len(cfg.all_joints)
    if not cfg.head_joint or not rm.has_frame(frame):
        return 0.0, None
    q = np.zeros(n)
    offset = head_yaw(rm, q, frame)
    q[0], q[n - 1] = 0.3, -0.2
    if abs(math.remainder(head_yaw(rm, q, frame) - offset - 0.1, TWO_PI)) > 1e-6:
        return offset, None
    return offset, 0
