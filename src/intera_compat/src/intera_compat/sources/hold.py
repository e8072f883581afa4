"""Hold: keep the joints where they are (after a stop when they were moving).

Three ways to come to rest (``stop``):

- ``"ramp"``: a hold decelerates along the last setpoint, then keeps it (the default source, the command-timeout
  fallback, the end of a cancelled trajectory);
- ``"brakes"``: the brakes of a disabled, stopped or E-stopped arm the loop drives by its joint torques, and the
  safety E-stop latch: from the *measured* state at the joints' acceleration limits, biting within ``1/BRAKE_JERK``
  s, then holding where the arm stopped. A brake never springs back: stopping dead at the measurement
  pulled a 0.5 rad/s arm back 5 mrad past its stop and it crept there afterwards. When the stop ends the brakes
  bite where the arm is (``bitten``: the loop restarts its safety chain's shaping there) — held at the stop's end,
  a wrist that ran on 0.6 mrad past it was pulled back 1.0 mrad through the plant's stick-slip (a fuzz run's find). While a detected collision
  holds the arm (``contact``) they stop dead instead: braking on from the measured speed pushed it into what it
  hit (63 N on the table against 13 N);
- ``"dead"``: the measurement itself (an arm that brakes itself: the loop's setpoint only follows it; a detected
  collision).
"""
from __future__ import annotations

import numpy as np

from ..data.setpoint import Setpoint, clamp
from ..data.state import HardwareState
from ..trajectory.stop import StopRamp
from .base import SetpointSource

BRAKE_JERK = 50.0  # brakes: jerk limit = this × the acceleration limits per second (full bite in 20 ms)
STOPS = ("ramp", "brakes", "dead")


class HoldSource(SetpointSource):
    def __init__(self, idx: slice, lower: np.ndarray, upper: np.ndarray, vmax: np.ndarray, amax: np.ndarray,
                 dt: float, stop: str = "ramp"):
        super().__init__(idx)
        if stop not in STOPS:
            raise ValueError(f"HoldSource stop: {stop!r} is none of {', '.join(STOPS)}")
        self.lower, self.upper = lower[idx], upper[idx]
        self.measured = stop != "ramp"  # the stop starts from the measured state, and the hold slips where pushed
        self.ramp = None if stop == "dead" else StopRamp(vmax[idx], amax[idx], dt,
                                                         BRAKE_JERK if stop == "brakes" else 10.0)
        self.q = np.zeros(len(self.lower))
        self._zero = np.zeros(len(self.lower))
        self.bitten = False  # brakes: their stop ended this cycle, the hold taken where the arm was measured
        # brakes: a detected collision holds the arm (the loop sets it) — they stop dead at the measurement instead,
        # as the collision hold does: the arm's run-on is into what it hit
        self.contact = False

    def activate(self, sp: Setpoint, hw: HardwareState, now: float) -> None:
        """Decelerate along the last setpoint (ramp) or from the measured state (brakes), or stop dead at the
        measurement.

        After TORQUE_MODE there is no tracked setpoint: the ramp starts from the measured state.
        """
        i = self.idx
        self.bitten = False
        if self.ramp is None or (self.measured and self.contact):
            np.clip(hw.position[i], self.lower, self.upper, out=self.q)
            if self.ramp is not None:
                self.ramp.active = False
            return
        if self.measured or sp.torque_only[i].any():
            self.ramp.start(hw.position[i], hw.velocity[i], self._zero)
        else:
            self.ramp.start(sp.q[i], sp.v[i], sp.a[i])
        np.clip(self.ramp.q, self.lower, self.upper, out=self.q)

    @property
    def braking(self) -> bool:
        """Brakes whose stop from the measured state is under way."""
        return self.measured and self.ramp is not None and self.ramp.active

    def update(self, now: float, hw: HardwareState, sp: Setpoint) -> int:
        i = self.idx
        r = self.ramp
        if r is not None and r.active:
            r.update()
            if self.measured and not r.active:
                self.bitten = True
                clamp(hw.position[i], self.lower, self.upper, self.q)
                sp.track(i, self.q, 0.0, 0.0, fixed=True)
                return 0
            clamp(r.q, self.lower, self.upper, self.q)
            sp.track(i, self.q, r.v, r.a)
        else:
            sp.track(i, self.q, 0.0, 0.0, fixed=True)
        return 0

    def rebase(self, sp: Setpoint) -> None:
        """The chain held the setpoint back (following-error window, limits).

        A stop under way restarts from there. Stopped, brakes hold where the arm was pushed to (they slip,
        they do not spring back); a hold keeps its target and returns to it at the pace the safety chain allows.
        """
        i = self.idx
        if self.ramp is not None and self.ramp.active:
            self.ramp.start(sp.q[i], sp.v[i], sp.a[i])
        elif self.measured:
            clamp(sp.q[i], self.lower, self.upper, self.q)


class SafetyHold(HoldSource):
    """An override that holds the arm while ``on``, from where it was measured when it engaged: the arbiter's
    override slot, the chain restarts from it. The safety E-stop latch brakes (``"brakes"``: never springing
    back); a detected collision stops dead (``"dead"``: the arm's own run-on was into what it hit, and it
    gives back that much)."""

    def __init__(self, idx: slice, lower: np.ndarray, upper: np.ndarray, vmax: np.ndarray, amax: np.ndarray, dt: float,
                 stop: str):
        super().__init__(idx, lower, upper, vmax, amax, dt, stop)
        self.on = False

    def engaged(self) -> bool:
        return self.on
