"""Joint limits on the setpoint: position range, velocity and acceleration, of the reference
itself and of its feed-forward. Joints driven by torque are left to ``torque_guard``.

The reference may change its per-cycle step by at most ``a_max·dt²`` (acceleration) and step by
at most ``v_max·dt`` (velocity), and it slows down toward a position limit early enough to stop
on it. Sources whose output already respects the limits (ruckig, validated trajectories, a
ramped velocity) pass untouched: the check tolerates ``tolerance`` rad of discontinuity per
cycle (the seams of a streamed trajectory). Anything else — a velocity step, a mode switch onto
a moving stream, a jump, and near a position limit a step from which the reference can no longer
stop on it (a smooth stream running into the limit) — is shaped into the fastest motion the limits
allow (a hold returns at most at ``hold_speed × v_max``), with the feed-forward velocity and
acceleration of the shaped reference, until the source can take over again without a step in
acceleration; the loop then rebases the source on it. The brakes and a fault restart the
reference from the measured position (``reset``). The following-error window runs after this plugin and has the last word; the
next cycle starts from the reference as the whole chain left it (``commit``).
"""
from __future__ import annotations

import numpy as np

from ..data.setpoint import Setpoint, clamp, stopping_step
from ..data.state import HardwareState
from . import kernels
from .base import SafetyPlugin


def relaxed_range(lower, upper, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """The position range widened by ``tolerance`` × its width on both sides (hector's safety
    bypass: ``safety_bypass_joint_limit_tolerance``, 3 % by default)."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    r = (upper - lower) * tolerance
    return lower - r, upper + r


class JointLimits(SafetyPlugin):
    name = "joint_limits"

    def __init__(self, lower, upper, vmax, amax, dt: float, margin: float = 1.05, tolerance: float = 2e-5,
                 hold_speed: float = 0.3):
        super().__init__()
        self.lower, self.upper = np.asarray(lower, float), np.asarray(upper, float)
        self.vmax, self.amax = np.asarray(vmax, float), np.asarray(amax, float)
        self.dt = dt
        self.step = self.vmax * dt * margin  # largest step per cycle (velocity)
        self._nstep = -self.step
        self.hold_step = self.vmax * dt * hold_speed  # a hold returning to its target: at most this fast
        self._nhold_step = -self.hold_step
        self.dstep = self.amax * dt * dt * margin  # largest change of the step per cycle (acceleration)
        self._thr = self.dstep + tolerance
        n = len(self.lower)
        # the check, in one comparison: the step, its change, the feed-forward's change against v_max·dt, a_max·dt²
        # (+ seam tolerance); then how near the upper and the lower limit the reference is (prev − upper,
        # lower − prev) against −reach: the stopping distance from the largest step the check lets through
        # (v_max·dt·margin, braking by dstep a cycle) plus a step of slack — farther, every such step stops in time
        reach = self.step * (self.step + self.dstep) / (2.0 * self.dstep) + self.step
        # one buffer of limits for the kernels (kernels.limits_check, limits_clamp): rows 0-4 the check's thresholds,
        # 5-7 lower q, v, a, 8-10 upper q, v, a (rows q, v, a of the setpoint block against their ranges, one clamp)
        self._L = np.concatenate([np.stack([self.step, self._thr, self._thr, -reach, -reach]),
                                  np.stack([self.lower, -self.vmax, -self.amax]),
                                  np.stack([self.upper, self.vmax, self.amax])])
        self._thr5, self._lo3, self._hi3 = self._L[:5], self._L[5:8], self._L[8:]
        self.lower, self.upper = self._lo3[0], self._hi3[0]  # the position range in force (set_range)
        self._X = np.zeros((8, n))  # the check's values (5 rows), then the clamped q, v, a
        self._x5, self._x3 = self._X[:5], self._X[5:]
        self._x3c = self._x5[:3]
        self._xd, self._xdd, self._xv, self._xu, self._xl = self._x5
        self._b3 = np.zeros((3, n), dtype=bool)
        # ... flagged, and a row for the joints shaped last cycle (_hand_back): any of them → _flagged
        self._b6 = np.zeros((6, n), dtype=bool)
        self._b5, self._b3c, self._bnear, self._sticky = self._b6[:5], self._b6[:3], self._b6[3:5], self._b6[5]
        self._blim, self._near = np.zeros(n, dtype=bool), False  # near a limit: the steps that cannot stop on it
        self._sd, self._bn2, self._stops = np.zeros(n), np.zeros((2, n), dtype=bool), False
        self._dstep2, self._i2ds = 2.0 * self.dstep, 0.5 / self.dstep
        self._ds2 = np.stack([self.dstep, self.dstep])
        self._ids2 = 1.0 / self._ds2
        self._g2, self._j2, self._k2 = np.zeros((2, n)), np.zeros((2, n)), np.zeros((2, n))
        self._lhi, self._llo = self._g2  # (then the steps that still stop on them: ≥ 0 toward upper, ≤ 0 toward lower)
        self._bb, self._g, self._src_prev = np.zeros(n, dtype=bool), np.zeros(n), np.zeros(n)
        self._dstep_hb = self.dstep * (1.0 + 1e-9)  # (a shaped step's change is dstep exactly, rounded)
        self._pp = np.zeros((2, n))
        self.prev, self.pd = self._pp  # last cycle's reference, its last step (rad per cycle)
        self._d, self._lo, self._hi, self._t, self._u, self._c, self._w = (np.zeros(n) for _ in range(7))
        self._free, self._m = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        self._r, self._rb, self._brk, self._up = np.zeros(n), np.zeros(n), np.zeros(n, dtype=bool), np.zeros(n, bool)
        self._past = np.zeros(n, dtype=bool)
        self._primed = False
        kernels.warm(n)

    def set_range(self, lower: np.ndarray, upper: np.ndarray) -> None:
        """The position range in force from now on (the safety bypass widens it)."""
        self.lower[:] = lower
        self.upper[:] = upper

    def reset(self, hw: HardwareState, sp: Setpoint) -> None:
        """The reference restarts at ``sp`` (q, v) as it stands this cycle."""
        np.multiply(sp.v, self.dt, out=self.pd)
        clamp(self.pd, self._nstep, self.step, self.pd)
        np.subtract(sp.q, self.pd, out=self.prev)
        self._sticky.fill(False)
        self._primed = True

    def on_setpoint(self, hw: HardwareState, sp: Setpoint) -> int:
        changed = sp.shaped = False
        # (torque-driven joints may be flagged too: _shape leaves them alone)
        if self._primed and kernels.limits_check(self._X, self._L, self._b6, sp.block, self._pp, self.dt) \
                and self._flagged(sp):
            self._shape(sp)
            changed = sp.shaped = True
        # position range, velocity and acceleration (rows q, v, a of the block, in place)
        if kernels.limits_clamp(self._X, self._L, sp.block):
            changed = True
        self.interventions += changed
        return 0

    def commit(self, sp: Setpoint) -> None:
        """The final reference (after the following-error window too) is where the next cycle starts."""
        kernels.limits_commit(self._pp, sp.q, self._primed)  # pd ← q − prev (primed), prev ← q
        self._primed = True

    def _flagged(self, sp: Setpoint) -> bool:
        """Some joint flagged, near a limit, or shaped last cycle: the joints to shape in ``_m`` (torque-driven ones
        too: _shape leaves them alone), whether there are any."""
        self._near = near = bool(np.count_nonzero(self._bnear))
        self._stops = False
        lim = near and self._near_limit(sp)
        back = bool(np.count_nonzero(self._sticky))
        if back:
            self._hand_back()
        if not np.count_nonzero(self._b3c):
            if not (lim or back and np.count_nonzero(self._sticky)):
                return False  # (only near a limit, and every step stops in time)
            self._m.fill(False)
        else:
            np.logical_or.reduce(self._b3c, axis=0, out=self._m)  # the check
        m = self._m
        if lim:
            m |= self._blim
        if back:
            m |= self._sticky
        return True

    def _hand_back(self) -> None:
        """The joints shaped last cycle go back to the source where that is no step in acceleration (within the
        acceleration limit, no seam tolerance): its step now (``_xd``), and the source's own next one (as its step now:
        they differ by the gap the shaped reference left last cycle)."""
        g = self._g
        np.subtract(self._src_prev, self.prev, out=g)
        np.abs(g, out=g)
        np.maximum(g, self._xdd, out=g)  # (|the step's change|: the check's abs)
        self._sticky &= np.greater(g, self._dstep_hb, out=self._bb)

    def _near_limit(self, sp: Setpoint) -> bool:
        """Some joint is within its reach of a position limit (``_xu``, ``_xl``): whether some joint's step can no
        longer stop on it, those marked in ``_blim``. First (cheap) whether some step's braking distance with a slack
        that covers the discrete stop, s(s + 2Δs)/(2Δs), exceeds its distance to a limit; only then the exact steps
        that still stop on the limits (``_stop_steps``)."""
        g, t = self._g2, self._sd
        np.negative(self._x5[3:], out=g)  # the distances to the limits
        np.add(self._xd, self._dstep2, out=t)  # (|the step|: the check's abs)
        t *= self._xd
        t *= self._i2ds
        if not np.count_nonzero(np.less(g, t, out=self._bn2)):
            return False
        self._stop_steps()
        b, sd = self._blim, self._sd
        np.subtract(sp.q, self.prev, out=sd)  # the step (its sign)
        np.greater(sd, self._lhi, out=b)
        b |= np.less(sd, self._llo, out=self._bb)
        np.copyto(b, False, where=sp.torque_only)  # (_shape leaves them alone)
        return bool(np.count_nonzero(b))

    def _stop_steps(self) -> None:
        """The distances in ``_g2`` → the largest steps from which braking by ``dstep`` a cycle stops within them,
        exactly (``stopping_step``'s closed form is up to dstep/8 too generous: a reference braking by it onto a
        limit would be cut there by the range clamp, a step in acceleration): braking from s = j·Δs + r
        (0 ≤ r < Δs) covers Δs·j(j+1)/2 + (j+1)·r. In place; the lower row negated."""
        self._stops = True
        x, j, k = self._g2, self._j2, self._k2
        np.maximum(x, 0.0, out=x)
        x *= self._ids2  # the distance in units of Δs
        np.multiply(x, 8.0, out=j)  # j: the whole decrements, ⌊(√(8x + 1) − 1) / 2⌋
        j += 1.0
        np.sqrt(j, out=j)
        j -= 1.0
        j *= 0.5
        np.floor(j, out=j)
        np.add(j, 1.0, out=k)
        x /= k  # r = (x − j(j+1)/2) / (j+1) = x/(j+1) − j/2
        x += j
        np.multiply(j, 0.5, out=k)
        x -= k
        x *= self._ds2
        np.negative(x[1], out=x[1])

    def _shape(self, sp: Setpoint) -> None:
        """Move the reference toward the source's as fast as the limits allow this cycle.

        Per flagged joint, the step ``d`` (rad per cycle) lies within the last step ± the
        acceleration limit and ±v_max·dt, closes the gap ``e`` to the source's reference no
        faster than it can still match its velocity on arrival (a square-root law on the gap,
        so it converges without overshoot), and slows toward a position limit in time to stop
        on it (that one wins over the acceleration limit). Shaped joints stay shaped until ``_hand_back``: handed
        back as soon as the check passes (within its seam tolerance), the last of the gap would be a step in
        acceleration.
        """
        dt, prev, d, lo, hi, t, u, c = self.dt, self.prev, self._d, self._lo, self._hi, self._t, self._u, self._c
        # steps reachable from the last one, within ±v_max·dt
        np.subtract(self.pd, self.dstep, out=lo)
        np.maximum(lo, self._nstep, out=lo)
        np.add(self.pd, self.dstep, out=hi)
        np.minimum(hi, self.step, out=hi)
        # a hold (pushed away, brakes) returns no faster than hold_speed × v_max (no faster than
        # it already moves, if that is more)
        np.maximum(self.pd, self.hold_step, out=t)
        np.minimum(hi, t, out=t)
        np.copyto(hi, t, where=sp.fixed)
        np.minimum(self.pd, self._nhold_step, out=t)
        np.maximum(lo, t, out=t)
        np.copyto(lo, t, where=sp.fixed)
        # converge on the source: the gap left after keeping its pace, c = e − v_src·dt, closes by
        # at most min(|c|, √(2·Δs·|c|)) per cycle (clipped into the reachable range)
        np.subtract(sp.q, prev, out=d)  # e: the step the source asks for
        np.multiply(sp.v, dt, out=u)
        np.subtract(d, u, out=c)
        np.maximum(c, 0.0, out=t)
        self._close(t)
        t += u  # highest step
        np.maximum(t, lo, out=t)
        np.minimum(hi, t, out=hi)
        np.minimum(c, 0.0, out=t)
        np.negative(t, out=t)
        self._close(t)
        np.subtract(u, t, out=t)  # lowest step
        np.minimum(t, hi, out=t)
        np.maximum(lo, t, out=lo)
        self._rest(sp, lo, hi)
        clamp(d, lo, hi, d)
        if self._near:  # ... and no faster toward a position limit than stops on it (farther, every step stops in time);
            if not self._stops:
                self._stop_steps()
            clamp(d, self._llo, self._lhi, d)  # that wins over the rest (either way: the lower limit over a pace)
        m = self._m  # (_flagged)
        m &= np.logical_not(sp.torque_only, out=self._free)
        self._sticky[:] = m  # (next cycle: handed back to the source, or shaped on)
        self._src_prev[:] = sp.q  # (the source's reference)
        np.add(prev, d, out=t)
        np.copyto(sp.q, t, where=m)
        # feed-forward of the shaped reference: its own velocity and acceleration
        np.divide(d, dt, out=t)
        np.copyto(sp.v, t, where=m)
        np.subtract(d, self.pd, out=t)
        t /= dt * dt
        np.copyto(sp.a, t, where=m)

    def _rest(self, sp: Setpoint, lo: np.ndarray, hi: np.ndarray) -> None:
        """Where the source brakes (v and a of opposite signs: a stream's last point, a stop), the step range toward where it comes to
        rest is no more than stops there: a reference catching up with a braking source never passes its resting
        point to come back, and one that ran ahead of the source does not step back to it (the acceleration limit
        still wins: it is a target, not a limit)."""
        r, rb, brk = self._r, self._rb, self._brk
        np.sign(sp.v, out=r)  # (signs, not v·a: a raw stream's huge values must not overflow)
        np.sign(sp.a, out=rb)
        r *= rb
        np.less(r, 0.0, out=brk)
        if not np.count_nonzero(brk):
            return
        # the resting point relative to the last reference: (q − prev) + v |v / (2a)|, in the direction of v
        np.abs(sp.a, out=rb)
        rb *= 2.0
        np.divide(sp.v, rb, out=r, where=brk)
        np.abs(r, out=r)
        r *= sp.v
        r += sp.q
        r -= self.prev
        np.maximum(r, 0.0, out=rb)  # moving up: at most the step that still stops there
        stopping_step(rb, self.dstep, rb)
        np.maximum(rb, lo, out=rb)
        up = self._up
        np.greater(sp.v, 0.0, out=up)
        up &= brk
        np.copyto(hi, np.minimum(hi, rb, out=rb), where=up)
        np.minimum(r, 0.0, out=rb)  # moving down: likewise
        np.negative(rb, out=rb)
        stopping_step(rb, self.dstep, rb)
        np.negative(rb, out=rb)
        np.minimum(rb, hi, out=rb)
        np.less(sp.v, 0.0, out=up)
        up &= brk
        np.copyto(lo, np.maximum(lo, rb, out=rb), where=up)
        # nor, short of that resting point, steps back to meet the source (a reference that ran ahead of it waits for
        # it: going back, then on again to the resting point, was a reversal — 0.11 mrad in a fuzz run), as far as
        # the acceleration limit allows; past the resting point it comes back to it (a point at rest whose braking
        # acceleration is still set: held there, the reference stuck and buzzed, a review's find)
        up &= np.less_equal(r, 0.0, out=self._past)
        np.minimum(hi, 0.0, out=rb)
        np.maximum(rb, lo, out=rb)
        np.copyto(hi, rb, where=up)
        np.greater(sp.v, 0.0, out=up)
        up &= brk
        up &= np.greater_equal(r, 0.0, out=self._past)
        np.maximum(lo, 0.0, out=rb)
        np.minimum(rb, hi, out=rb)
        np.copyto(lo, rb, where=up)

    def _close(self, gap: np.ndarray) -> None:
        """gap (≥ 0) → how much of it one cycle may close and still arrive at rest relative to
        the source (at most the whole gap), in place."""
        stopping_step(gap, self.dstep, self._w)
        np.minimum(gap, self._w, out=gap)
