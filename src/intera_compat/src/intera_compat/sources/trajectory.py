"""Whole trajectories handed to the loop once and sampled every cycle on a speed-scaled time base.

Time along the trajectory advances by ``dt × scaling`` per cycle, ``scaling`` = the sender's factor
(``set_scaling``) × the loop's ``speed`` (backend: UR slider, Cobot progress; × operator override): at 0 the arm
pauses on the path, it does not abort. Above 1 only (``speed_max``) for an arm that times its motion itself, or to
make up time a clock backend's arm ran that the loop's cycles did not (``Backend.lag``), within every joint's
velocity limit; for the first, its time never passes ``time_cap``, which restarts at 0 with each trajectory, and
where the cap holds the time back, the velocity and acceleration are those of the time actually passed. The
applied factor follows a change within ``scaling_ramp`` seconds for the full range (a pause decelerates along the
path, it is not a step); velocities and accelerations are scaled with it (a = a_path·s² + v_path·ṡ). The applied
factor is a second-order signal: its rate ṡ keeps every joint within its acceleration limit (signs
included: braking against the path's own acceleration has more room), its change per cycle keeps
v_path·s̈ within ``jerk_factor`` × the acceleration limit per second, and it slows down before the
target so that ṡ reaches 0 there (a stop ends without an acceleration step). A path that by itself
exceeds a limit (cubic knots are accepted up to 1.5×) is not slowed faster than it already is.

* ``prepare`` checks a new trajectory against the current setpoint and stages it. A first knot
  at t > 0 is reached from the current setpoint (a knot is prepended at t = 0); a first knot at
  t = 0 must lie within ``start_tolerance`` of its position and ``start_velocity_tolerance`` of
  its velocity (no jump). Joints the trajectory does not name hold. A trajectory that replaces a
  moving one starts at scaling 1 (its path velocity is the arm's) and ramps to the sender's factor.
* ``cancel`` = the time scaling goes to 0 as fast as those limits allow (no ``scaling_ramp``
  cap): the arm decelerates *along the path* (every point it passes was on the planned — and
  checked — path) and holds where it stopped; the result is reported once it is at rest. A
  trajectory must therefore end at rest (its last velocities and accelerations 0).
* Every trajectory ends with exactly one result in ``results`` (the loop forwards them):
  SUCCEEDED at the end time, CANCELLED, PREEMPTED (another trajectory or a JointCommand took
  over), ABORTED (robot disabled / stopped / fault) or REJECTED (never started).
"""
from __future__ import annotations

import numpy as np

from ..data.codes import (ABORTED, CANCELLED, END_ACCEL, END_SPEED, MAX_KP, PREEMPTED, REJECTED, R_INVALID,
                          R_JOINT_COMMAND, R_LIMITS, R_NEWER_TRAJECTORY, R_NONE, R_NOT_ENABLED, R_START_DEVIATION,
                          R_TOO_LONG, SUCCEEDED, TRACK_FEEDFORWARD, TRACK_POSITION, TRACK_VELOCITY, TRAJ_DONE,
                          TRAJ_IDLE, TRAJ_RUNNING, TRAJ_STOPPING)
from ..data.setpoint import Setpoint
from ..data.state import HardwareState
from ..trajectory.spline import KnotTrajectory, limit_violation
from .base import SetpointSource


class TrajectorySource(SetpointSource):
    def __init__(self, idx: slice, vmax, amax, dt: float, max_knots: int = 10000, start_tolerance: float = 0.05,
                 scaling_ramp: float = 0.2, start_velocity_tolerance: float = 0.05, jerk_factor: float = 10.0):
        super().__init__(idx)
        self.m = m = len(vmax[idx])
        self.vmax, self.amax = vmax[idx], amax[idx]
        self.jmax = self.amax * jerk_factor
        self.dt = dt
        self.start_tolerance = start_tolerance
        self.start_velocity_tolerance = start_velocity_tolerance
        self.traj = KnotTrajectory(m, max_knots + 1)
        self.mask = np.zeros(m, dtype=bool)
        self.sample = np.zeros((3, m))  # the trajectory at its current time: q, v, a
        self.q, self.v, self.a = self.sample
        self.tracking = TRACK_FEEDFORWARD
        self.kp = np.zeros(m)  # TRACK_VELOCITY's position gain, 1/s
        self._cmd_q, self._cmd_v = np.zeros(m), np.zeros(m)  # TRACK_VELOCITY's setpoint
        self._zero = np.zeros(m)
        self._err = np.zeros(m)
        self._tmp = np.zeros(m)
        self.traj_id = 0.0
        self.late = 0.0  # s the running trajectory came behind its sender's schedule
        self.state = TRAJ_IDLE
        self.time = 0.0
        self.segment = -1
        self.error = 0.0  # max |setpoint − measured| over the trajectory's joints, rad
        self.scaling = 1.0  # the sender's factor
        self.applied_scaling = 1.0
        self.speed = 1.0  # the loop's speed factor this cycle (backend × operator override), 0..speed_max
        # 1, or more for an arm that times its motion itself (a Cobot's PLC): its reference catches up with it
        self.speed_max = 1.0
        self.time_cap = np.inf  # the time it may not pass (a paced arm's own time: its catch-up never overshoots)
        self.time_capped = False  # ... which the loop sets every cycle (a paced arm)
        self.max_rate = 1.0 / scaling_ramp  # largest |ṡ| a sender's change of scaling gets, 1/s
        self.rate = 0.0  # ṡ of the applied scaling, 1/s
        self._fresh = True  # the next update starts at the requested scaling
        self.results: list = []  # (traj_id, status, reason, joint) for the loop to forward
        self.last_status = 0  # how the last trajectory ended

    # ---- requests -----------------------------------------------------------------------
    def prepare(self, traj_id: float, order: int, mask, t, q, v, a, sp: Setpoint, enabled: bool,
                scaling: float = 1.0, tracking: int = TRACK_FEEDFORWARD, kp=None, late: float = 0.0) -> bool:
        """Stage a trajectory (full-length ``mask`` and ``kp``; ``q``/``v``/``a`` shaped (k, n) in config
        order), starting at the sender's time ``scaling`` (anything outside (0, 1] means 1), tracked
        as ``tracking`` says (TRACK_VELOCITY with the position gains ``kp``, 1/s); ``late``: s behind its sender's
        schedule as it came (``late``: the loop's lag catch-up starts from it)."""
        i = self.idx
        mask = np.asarray(mask[i], bool)
        q, v, a = q[:, i], v[:, i], a[:, i]
        kp = np.zeros(self.m) if kp is None else np.asarray(kp, float)[i]
        if not enabled:
            return self._reject(traj_id, R_NOT_ENABLED)
        if len(t) + 1 > self.traj.max_knots:
            return self._reject(traj_id, R_TOO_LONG)
        if not (np.isfinite(t).all() and np.isfinite(q).all() and np.isfinite(v).all() and np.isfinite(a).all()
                and t[0] >= 0.0 and (len(t) < 2 or np.all(np.diff(t) > 0.0))
                and tracking in (TRACK_FEEDFORWARD, TRACK_POSITION, TRACK_VELOCITY)
                and np.isfinite(kp).all() and (kp >= 0.0).all() and (kp <= MAX_KP).all()):
            return self._reject(traj_id, R_INVALID)
        end_moving = np.abs(v[-1]) * mask > END_SPEED if order >= 3 else np.zeros(self.m, bool)
        if order >= 5:
            end_moving |= np.abs(a[-1]) * mask > END_ACCEL
        if end_moving.any():
            return self._reject(traj_id, R_INVALID, int(np.argmax(end_moving)))
        cur_q = sp.q[i].copy()
        cur_v = np.where(sp.torque_only[i], 0.0, sp.v[i])
        # replacing a moving trajectory: the new one starts at scaling 1 (path velocity = the arm's) and
        # ramps from there to the sender's factor, so neither the velocity nor the scaling jumps
        moving = self.state in (TRAJ_RUNNING, TRAJ_STOPPING) and bool(np.any(cur_v))
        if t[0] <= 0.0:
            dev = np.maximum(np.abs(q[0] - cur_q) / self.start_tolerance,
                             np.abs(v[0] - cur_v) / self.start_velocity_tolerance if order >= 3 else 0.0) * mask
            j = int(np.argmax(dev))
            if dev[j] > 1.0:
                return self._reject(traj_id, R_START_DEVIATION, j)
            kt, kq, kv, ka = t, q.copy(), v.copy(), a.copy()
        else:  # reach the first point from where the arm is
            kt = np.r_[0.0, t]
            kq, kv, ka = np.vstack([cur_q, q]), np.vstack([cur_v, v]), np.vstack([np.zeros(self.m), a])
        kq[:, ~mask] = cur_q[~mask]  # joints not named hold
        kv[:, ~mask] = 0.0
        ka[:, ~mask] = 0.0
        bad = limit_violation(kt, kq, kv, ka, order, self.vmax, self.amax)
        if bad is not None:
            return self._reject(traj_id, R_LIMITS, bad[2])
        if self.state in (TRAJ_RUNNING, TRAJ_STOPPING):
            self._finish(PREEMPTED, R_NEWER_TRAJECTORY)
        self.traj.load(kt, kq, kv, ka, order)
        self.mask[:] = mask
        self.tracking = tracking
        self.kp[:] = kp
        self._cmd_q[:] = cur_q
        self._cmd_v[:] = cur_v
        if moving:
            self.applied_scaling, self.rate = 1.0, 0.0
        else:
            self._fresh = True  # from rest: start right at the requested scaling
        self.scaling = scaling if 0.0 < scaling <= 1.0 else 1.0  # False for NaN too
        self.traj_id = traj_id
        self.late = late if late > 0.0 else 0.0  # (NaN: on time)
        self.state = TRAJ_RUNNING
        self.time = 0.0
        if self.time_capped:  # a paced arm: its time restarts with the trajectory it is handed (the loop sets it)
            self.time_cap = 0.0
        self.segment = -1
        return True

    def skip_hold(self, seconds: float) -> float:
        """Up to ``seconds`` of a first segment that holds still (its two knots equal and at rest) skipped: the time
        base moves on within it (nothing moves: no jump). Returns the seconds skipped."""
        tr = self.traj
        if seconds <= 0.0 or tr.k < 2 or self.time >= tr.t[1] or not np.array_equal(tr.q[0], tr.q[1]) \
                or tr.v[:2].any() or tr.a[:2].any():
            return 0.0
        skip = min(seconds, float(tr.t[1]) - self.time)
        self.time += skip
        return skip

    def cancel(self, traj_id: float) -> None:
        """Decelerate along the path to rest, then report CANCELLED (0 cancels whatever runs)."""
        if self.state == TRAJ_RUNNING and traj_id in (0.0, self.traj_id):
            self.state = TRAJ_STOPPING

    def set_scaling(self, traj_id: float, s: float) -> None:
        """The sender's factor for ``traj_id`` (0: whatever runs; another id — a late message about a
        trajectory that has ended — is ignored)."""
        if s == s and traj_id in (0.0, self.traj_id):  # a NaN is ignored
            self.scaling = min(max(s, 0.0), 1.0)

    def deactivate(self, reason: int) -> None:
        """Another source takes the arm (or the robot stops): the running trajectory ends."""
        if self.state in (TRAJ_RUNNING, TRAJ_STOPPING):
            self._finish(PREEMPTED if reason in (R_JOINT_COMMAND, R_NEWER_TRAJECTORY) else ABORTED, reason)

    def refuse(self, traj_id: float, reason: int) -> None:
        """A trajectory the loop will not start (an override holds the arm: ``reason``) ends REJECTED at once."""
        self._reject(traj_id, reason)

    def _reject(self, traj_id: float, reason: int, joint: int = -1) -> bool:
        self.results.append((traj_id, REJECTED, reason, joint))
        return False

    def _finish(self, status: int, reason: int = R_NONE) -> None:
        self.results.append((self.traj_id, status, reason, -1))
        self.state = TRAJ_DONE
        self.last_status = status

    # ---- cycle --------------------------------------------------------------------------
    def _next_scaling(self, s0: float, want: float, cap: float) -> float:
        """The applied scaling one cycle on, toward ``want`` (see the module docstring); updates ``rate`` to the
        rate it applied (a step that settles on the target included: a target that moves every cycle — a paced arm's,
        the UR's slider — is followed within jerk·dt of it, not of 0). ``cap`` bounds |ṡ| (the sender's ramp; inf for
        a stop). Uses the path's v, a in self.v, self.a."""
        v, a, dt = self.v, self.a, self.dt
        lo, hi = -cap, cap  # the rate interval every joint's acceleration limit allows
        jerk = np.inf  # largest |s̈| the jerk limits allow
        for j in range(self.m):
            vj = v[j]
            if vj == 0.0:
                continue
            as2 = a[j] * s0 * s0
            b1, b2 = (-self.amax[j] - as2) / vj, (self.amax[j] - as2) / vj
            if b1 > b2:
                b1, b2 = b2, b1
            lo, hi = max(lo, b1), min(hi, b2)
            jerk = min(jerk, self.jmax[j] / abs(vj))
        lo, hi = min(lo, 0.0), max(hi, 0.0)  # a path over a limit by itself: at least keep going as it is
        gap = want - s0
        # the last step: straight onto the target when its rate is within the limits and the jump from the rate
        # before and to rest after are within jerk·dt (else the braking below shrinks the gap by a fixed fraction
        # each cycle at a coarse dt — 20 ms: a third — and a stop never reached 0)
        last = gap / dt
        if gap != 0.0 and lo <= last <= hi and abs(last) <= jerk * dt and abs(last - self.rate) <= jerk * dt:
            self.rate = last
            return want
        # the fastest rate from which braking by jerk·dt per cycle ends at the target (discrete: after this
        # cycle's step |r|·dt, braking covers |r|²/(2·jerk) + |r|·dt/2)
        if gap == 0.0:
            brake = 0.0
        elif jerk == np.inf:
            brake = np.inf
        else:
            brake = jerk * (-1.5 * dt + (2.25 * dt * dt + 2.0 * abs(gap) / jerk) ** 0.5)
        target = min(hi, brake) if gap > 0.0 else max(lo, -brake)
        r = self.rate
        r = min(max(target, r - jerk * dt), r + jerk * dt)
        # the acceleration limits are hard, the jerk bound is not: where the path's own acceleration jumps
        # (a knot), the rate follows the allowed interval at once instead of overshooting it for a few cycles
        r = min(max(r, lo), hi)
        s = s0 + r * dt
        if (s - want) * gap >= 0.0:  # reached (or passed) it: settle there
            s = want
        elif s <= 0.0 or s >= self.speed_max:  # a rate carried over from a stop into a replacement: never past
            s = min(max(s, 0.0), self.speed_max)  # 0 or the top speed
        self.rate = (s - s0) / dt
        return s

    def update(self, now: float, hw: HardwareState, sp: Setpoint) -> int:
        i = self.idx
        if self.state == TRAJ_RUNNING or self.state == TRAJ_STOPPING:
            stopping = self.state == TRAJ_STOPPING
            want = 0.0 if stopping else self.scaling * self.speed
            s0 = self.applied_scaling
            self.segment = self.traj.sample(self.time, self.q, self.v, self.a, self.segment)
            if not 0.0 <= want <= self.speed_max:  # the backend's factor: NaN pauses, out of range is clamped
                want = min(max(want, 0.0), self.speed_max) if want == want else 0.0
            if want > 1.0:  # (a catch-up: never past a joint's velocity limit, nor — the path's accelerations grow
                np.abs(self.v, out=self._tmp)  # with the factor's square — its acceleration limit)
                self._tmp /= self.vmax
                top = float(self._tmp.max())
                if top * want > 1.0:
                    want = max(1.0 / top, 1.0)
                np.abs(self.a, out=self._tmp)
                self._tmp /= self.amax
                top = float(self._tmp.max())
                if top * want * want > 1.0:
                    want = max(top ** -0.5, 1.0)
            if self._fresh:
                s, self.rate = want, 0.0
            elif want != s0 or self.rate != 0.0:
                s = self._next_scaling(s0, want, np.inf if stopping else self.max_rate)
            else:
                s = s0
            self._fresh = False
            self.applied_scaling = s
            capped = self.time + self.dt * s > self.time_cap
            if capped:  # (a paced arm's own time: the reference never passes it, and moves as fast as it really does)
                s = s0 = max((self.time_cap - self.time) / self.dt, 0.0)
            self.a *= s * s
            if s != s0:
                np.multiply(self.v, (s - s0) / self.dt, out=self._tmp)  # v_path·ṡ
                self.a += self._tmp
            self.v *= s
            self.time = self.time_cap if capped else self.time + self.dt * s
            if self.time >= self.traj.duration and self.segment >= self.traj.k - 1:
                self.time = self.traj.duration
                self._finish(CANCELLED if stopping else SUCCEEDED)
            elif stopping and self.applied_scaling == 0.0:
                self._finish(CANCELLED)
        elif self.state == TRAJ_DONE:
            self.v[:] = 0.0
            self.a[:] = 0.0
        if self.tracking == TRACK_FEEDFORWARD:
            sp.track(i, self.q, self.v, self.a)
        elif self.tracking == TRACK_POSITION:
            sp.track(i, self.q, self.v, self._zero)
        else:  # velocity v + kp·(q − measured), within the velocity limits, integrated into the setpoint
            cv = self._cmd_v
            np.subtract(self.q, hw.position[i], out=cv)
            cv *= self.kp
            cv += self.v
            np.clip(cv, -self.vmax, self.vmax, out=cv)
            np.multiply(cv, self.dt, out=self._tmp)
            self._cmd_q += self._tmp
            sp.track(i, self._cmd_q, cv, self._zero)
        np.subtract(self.q, hw.position[i], out=self._err)
        np.abs(self._err, out=self._err)
        self._err *= self.mask
        self.error = float(self._err.max())
        return 0

    def rebase(self, sp: Setpoint) -> None:
        """Velocity tracking integrates its own setpoint: pull it back to where the chain held it (no wind-up
        against an obstacle or a limit, so no snap on release). The other laws sample the trajectory itself."""
        if self.tracking == TRACK_VELOCITY:
            self._cmd_q[:] = sp.q[self.idx]

    def activate(self, sp: Setpoint, hw: HardwareState, now: float) -> None:
        """Handed the arm with nothing staged: hold the current setpoint."""
        if self.state != TRAJ_RUNNING:
            self.q[:] = sp.q[self.idx]
            self.v[:] = 0.0
            self.a[:] = 0.0
            self._cmd_q[:] = self.q

