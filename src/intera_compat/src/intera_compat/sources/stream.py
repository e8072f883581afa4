"""TRAJECTORY_MODE JointCommands: streamed (position, velocity, acceleration) points, extrapolated
between commands with constant acceleration; the acceleration is the inverse-dynamics feed-forward.

A point that decelerates (its acceleration against the joint's direction of motion: its velocity's sign, or
for a point at rest the sign of the last velocity the stream gave that joint) is extrapolated only up to where its
velocity reaches zero, and stays there: a stream that stops on a braking point — or on the last point of a
profile, at rest with its braking acceleration still set — never runs back against its own direction of motion
(the command timeout's stop ramp then starts at rest). Joints a command does not name keep extrapolating from
where their last point put them now; when the stream takes over a moving reference, those its first point does not
name brake to rest at their acceleration limit.
"""
from __future__ import annotations

import numpy as np

from ..data.setpoint import Setpoint
from ..data.state import HardwareState
from . import stream_kernel
from .base import SetpointSource


REST_SPEED = stream_kernel.REST_SPEED  # rad/s: a streamed velocity this small is a joint at rest (its sign is rounding)


class StreamSource(SetpointSource):
    streaming = True

    def __init__(self, idx: slice, amax=None):
        """``amax`` (all joints, rad/s²): how hard a joint the first point does not name brakes to rest (None: it
        stops dead)."""
        super().__init__(idx)
        n = idx.stop - idx.start
        self.amax = np.zeros(n) if amax is None else np.asarray(amax, float)[idx].copy()
        self.p, self.v, self.a = np.zeros(n), np.zeros(n), np.zeros(n)
        self.t0 = 0.0
        self._tmp = np.zeros(n)
        self._vel = np.zeros(n)
        self._acc = np.zeros(n)
        self.dir = np.zeros(n)  # per joint: the sign of the last non-zero velocity the stream gave it (0: none yet)
        stream_kernel.warm()

    def _extrapolate(self, tau: float, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> None:
        """The stored point ``tau`` seconds on: q = p + (v + a t/2) t, v + a t, a, with t = min(tau, the time a
        braking joint's velocity takes to reach zero) per joint; a joint past that point rests there (v = a = 0).
        (stream_kernel: compiled.)"""
        stream_kernel.extrapolate(tau, self.p, self.v, self.a, self.dir, q, v, a)

    def _keep_direction(self) -> None:
        """A joint's direction of motion: its velocity's sign, kept while it is at rest (|v| ≤ ``REST_SPEED``: a
        profile's end instant computed in floating point comes as ±1e-16 rad/s, and its sign means nothing)."""
        stream_kernel.keep_direction(self.v, self.dir)

    def _advance(self, tau: float) -> None:
        """Move the stored point ``tau`` seconds along its extrapolation (the direction of motion carries on)."""
        stream_kernel.advance(tau, self.p, self.v, self.a, self.dir, self._tmp, self._vel, self._acc)

    def accept(self, mask: np.ndarray, position, velocity, acceleration, now: float) -> None:
        i = self.idx
        m = mask[i]
        # where the last point went: unnamed joints go on from there, and each joint keeps the direction it took
        self._advance(now - self.t0)
        if np.count_nonzero(m) == len(m):  # the usual case: every joint named
            self.p[:] = position[i]
            self.v[:] = velocity[i]
            self.a[:] = acceleration[i]
        else:
            np.copyto(self.p, position[i], where=m)
            np.copyto(self.v, velocity[i], where=m)
            np.copyto(self.a, acceleration[i], where=m)
        self._keep_direction()
        self.t0 = now

    def activate(self, sp: Setpoint, hw: HardwareState, now: float) -> None:
        """Take over the reference as it moves: a joint the stream's points do not name brakes from its velocity to
        rest at its acceleration limit (it was started at rest where it was, and the shaping pulled it back)."""
        i = self.idx
        measured = sp.torque_only[i].any()
        self.p[:] = hw.position[i] if measured else sp.q[i]
        self.v[:] = hw.velocity[i] if measured else sp.v[i]
        self.dir[:] = 0.0
        self._keep_direction()
        np.multiply(self.dir, self.amax, out=self.a)
        np.negative(self.a, out=self.a)
        self.t0 = now

    def update(self, now: float, hw: HardwareState, sp: Setpoint) -> int:
        # the extrapolation, tracked (sp.track) on the source's joints (the safety chain keeps v within the limits)
        stream_kernel.sample(now - self.t0, self.p, self.v, self.a, self.dir, self._tmp, self._vel, self._acc,
                             sp.block, sp.torque_only, sp.fixed, self.idx.start)
        return 0
