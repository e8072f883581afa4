"""The dead-man of a ros_control *effort* arm: a hold from the arm's own joint states once the loop's commands stop.

A ``JointGroupEffortController`` keeps its last torques for ever, and an effort arm (Gazebo's above all) has no
brakes: zero effort, the velocity arm's stop, would let it fall under gravity. So when the loop's commands stop
(the loop process died: the bridge; the realtime_loop node died: ``command_watchdog``) the one who noticed holds the
arm where it was when they stopped, one torque per joint-state message::

    tau = g(q) + Kp (q_hold - q) - Kd qdot,   Kp = w^2 M(q_hold),   Kd = 2 zeta w M(q_hold)

gravity compensation from the arm's model (the same URDF and config as the loop's) plus a damped spring whose gains
are the arm's own mass matrix at the hold pose scaled by one natural frequency ``w`` and damping ratio ``zeta``
(config ``ros_control.hold_frequency`` / ``hold_damping``): every joint, heavy shoulder or light wrist, settles alike
(critically damped at ``zeta`` 1) without per-joint tuning. The gains are conservative: 2 Hz by default, and never
more than the joint-state rate allows (``2 zeta w <= 0.6 rate``: the torque is held between samples). The result is
clipped to the joints' effort limits; a non-finite result is never sent.

When the joint states cannot be trusted the hold falls back to zero effort (the arm sags as an unpowered arm does)
and the status says so for the caller's log: no sample yet, a sample older than ``stale_after`` (the message's
stamp against the caller's clock, or no message for that long: ``check``), or a non-finite position or velocity.
When fresh samples come back the hold starts again *from where the arm is then* (pulling a fallen arm back up is
a motion nobody asked for).

Whoever holds the arm goes away in the end (the node shuts down): ``exit_verdict`` tells when to leave — the arm is
at rest under the hold (``REST_VELOCITY`` for ``REST_SPAN`` of its stamps) or ``on_exit`` s of its stamps passed —
and the last word (``gravity_word``) is gravity compensation at the arm's pose, which the controller then keeps: the
arm stays where it rests as well as the model matches it (no spring, no damping any more: a push or a payload the
model lacks moves it).

Plain numpy + pinocchio, no ROS. Times are seconds of whatever clock the caller reads (ROS time in the nodes, the
arm's joint-state stamps); arrays are in config order (``RobotModel``'s).
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

REST_VELOCITY = 0.01  # rad/s: every joint slower than this ...
REST_SPAN = 0.2  # ... for this long (s of joint-state stamps): the arm is at rest

# status (``EffortHold.status``): what the last torque was
IDLE, HOLD, NO_STATE, STALE, NOT_FINITE = 0, 1, 2, 3, 4
# exit_verdict: stay (the hold goes on), leave with the last word, leave without one
WAIT, LAST_WORD, QUIET = 0, 1, 2


MAX_DAMPING_STEP = 0.6  # 2 zeta w / rate at most: the share of the velocity the damping takes away in one sample


def hold_omega(frequency: float, damping: float, rate: float) -> float:
    """The natural frequency [rad/s] used: ``2 pi frequency``, but no more than the joint-state ``rate`` [Hz] allows
    (``2 damping w / rate <= MAX_DAMPING_STEP``: each torque is held for a sample period, and a damping step near 1
    per sample would chatter)."""
    return min(2.0 * math.pi * frequency, MAX_DAMPING_STEP * rate / (2.0 * damping))


class EffortHold:
    """Gravity + damped PD hold for ``rm``'s joints (config order).

    ``effort_limit``: Nm per joint; ``frequency`` [Hz], ``damping`` (ratio): the hold's gains; ``rate``: the arm's
    joint-state rate [Hz]; ``stale_after``: s after which a sample is too old to act on; ``on_exit``: s of the
    arm's stamps a leaving holder waits for the arm to come to rest."""

    def __init__(self, rm, effort_limit, frequency: float, damping: float, rate: float, stale_after: float,
                 on_exit: float = 2.0):
        for name, x in (("frequency", frequency), ("damping", damping), ("rate", rate),
                        ("stale_after", stale_after)):
            if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0.0):
                raise ValueError(f"effort hold {name} {x!r}: give a positive number")
        if not (isinstance(on_exit, (int, float)) and math.isfinite(on_exit) and on_exit >= 0.0):
            raise ValueError(f"effort hold on_exit {on_exit!r}: give 0 or a positive number of seconds")
        self.rm = rm  # (used from one thread at a time: the caller's lock)
        n = self.n = len(rm.joint_names)
        self.limit = np.asarray(effort_limit, float).copy()
        if self.limit.shape != (n,):
            raise ValueError(f"effort hold: {len(self.limit)} effort limits for {n} joints")
        self.omega = hold_omega(float(frequency), float(damping), float(rate))
        self.capped = self.omega < 2.0 * math.pi * frequency - 1e-12
        self.zeta = float(damping)
        self.stale_after, self.on_exit = float(stale_after), float(on_exit)
        # the latest sample
        self.q, self.v = np.zeros(n), np.zeros(n)
        self.stamp = -math.inf  # its stamp (s; the receipt time when the message had none)
        self.received = -math.inf  # when it was observed (caller's clock)
        self.finite = False  # it held finite numbers
        self._q_prev = np.zeros(n)
        self._stamp_prev = -math.inf
        self._rest_since = None  # stamp from which every joint was slower than REST_VELOCITY
        # where the arm was at the last command (``mark``), and the hold
        self.q_mark = np.zeros(n)
        self.marked = False
        self.q_hold = np.zeros(n)
        self.Kp, self.Kd = np.zeros((n, n)), np.zeros((n, n))
        self.active = False
        self.anchored = False  # the hold has its pose and gains (from a fresh sample)
        self.started_at = -math.inf  # stamp of the sample the hold was anchored on
        self.status = IDLE
        self.changed = False  # ``status`` changed with the last ``command`` / ``check`` (log it)
        self.tau = np.zeros(n)  # the torque to send (zeros on a fallback)
        self._e = np.zeros(n)
        self._tmp = np.zeros(n)
        self._qp = np.zeros(rm.model.nq)
        self._ix = np.ix_(rm.perm, rm.perm)

    # ---- samples ------------------------------------------------------------------------------------------
    def observe(self, now: float, stamp: float, q, v=None) -> None:
        """A joint-state sample: ``stamp`` its header's (0: none, the receipt time ``now`` stands in), ``q``, ``v``
        in config order (``v`` None: the message had no velocities — differenced from the last sample)."""
        if not stamp:
            stamp = now
        np.copyto(self._q_prev, self.q)
        self.q[:] = q
        if v is not None:
            self.v[:] = v
        elif stamp > self._stamp_prev and math.isfinite(self._stamp_prev):
            np.subtract(self.q, self._q_prev, out=self.v)
            self.v /= stamp - self._stamp_prev
        else:
            self.v[:] = 0.0
        self._stamp_prev = stamp
        self.stamp, self.received = stamp, now
        self.finite = bool(np.isfinite(self.q).all() and np.isfinite(self.v).all())
        if self.finite and np.abs(self.v).max() < REST_VELOCITY:
            if self._rest_since is None:
                self._rest_since = stamp
        else:
            self._rest_since = None

    def fresh(self, now: float) -> bool:
        """The latest sample is finite and no older than ``stale_after`` (by its stamp and by its receipt)."""
        return self.finite and now - self.stamp <= self.stale_after and now - self.received <= self.stale_after

    def mark(self) -> None:
        """A command went to the arm: remember where the arm is (the hold's pose if the commands stop here)."""
        if self.finite:
            np.copyto(self.q_mark, self.q)
            self.marked = True

    # ---- the hold ------------------------------------------------------------------------------------------
    def start(self, now: float) -> None:
        """The commands stopped: hold the arm at the pose ``mark`` saw last (else where it is now)."""
        self.active = True
        self.anchored = False
        if self.marked:
            self._anchor(self.q_mark)
        self.marked = False

    def stop(self) -> None:
        """The commands came back (or the holder leaves): no more hold torques."""
        self.active = False
        self.anchored = False
        self.status = IDLE
        self.changed = False

    def _anchor(self, q_hold) -> None:
        rm = self.rm
        np.copyto(self.q_hold, q_hold)
        rm.to_pin(self.q_hold, self._qp)
        M = pin.crba(rm.model, rm.data, self._qp)  # (the upper triangle)
        M = np.triu(M) + np.triu(M, 1).T
        M = M[self._ix]
        w, z = self.omega, self.zeta
        np.multiply(M, w * w, out=self.Kp)
        np.multiply(M, 2.0 * z * w, out=self.Kd)
        self.anchored = True
        self.started_at = self.stamp

    def command(self, now: float) -> int:
        """This sample's torque into ``tau`` (zeros on a fallback); the status (``changed`` says if it is new)."""
        if not self.fresh(now):
            return self._fall_back(NOT_FINITE if self.received > -math.inf and not self.finite else
                                   NO_STATE if self.received == -math.inf else STALE)
        if not self.anchored or self.status in (NO_STATE, STALE, NOT_FINITE):
            self._anchor(self.q)  # (no pose marked, or after a fallback: from where the arm is now)
        tau = self.tau
        self.rm.gravity(self.q, out=tau)
        np.subtract(self.q_hold, self.q, out=self._e)
        tau += np.dot(self.Kp, self._e, out=self._tmp)
        tau -= np.dot(self.Kd, self.v, out=self._tmp)
        np.clip(tau, -self.limit, self.limit, out=tau)
        if not np.isfinite(tau).all():
            return self._fall_back(NOT_FINITE)
        self._set(HOLD)
        return HOLD

    def check(self, now: float) -> bool:
        """Between samples (a timer): True when the hold must fall back to zero effort now (no sample for
        ``stale_after``); ``tau`` is then zeros."""
        if not self.active or self.status in (NO_STATE, STALE, NOT_FINITE) or now - self.received <= self.stale_after:
            return False
        self._fall_back(STALE if self.received > -math.inf else NO_STATE)
        return True

    def _fall_back(self, status: int) -> int:
        self.tau[:] = 0.0
        self._set(status)
        return status

    def _set(self, status: int) -> None:
        self.changed = status != self.status
        self.status = status

    # ---- leaving ---------------------------------------------------------------------------------------------
    def at_rest(self) -> bool:
        """Every joint slower than ``REST_VELOCITY`` for ``REST_SPAN`` of the arm's stamps."""
        return self._rest_since is not None and self.stamp - self._rest_since >= REST_SPAN

    def held_for(self) -> float:
        """s of the arm's stamps since the hold was anchored (0 before)."""
        return max(self.stamp - self.started_at, 0.0) if self.anchored else 0.0

    def gravity_word(self, now: float) -> bool:
        """The last word into ``tau``: gravity compensation at the arm's pose (True), or zeros when the latest
        sample cannot be trusted (False)."""
        if self.fresh(now):
            self.rm.gravity(self.q, out=self.tau)
            np.clip(self.tau, -self.limit, self.limit, out=self.tau)
            if np.isfinite(self.tau).all():
                return True
        self.tau[:] = 0.0
        return False

    def describe(self, status: int | None = None) -> str:
        """What the hold does now, for a log line."""
        s = self.status if status is None else status
        if s == HOLD:
            return (f"holding the arm at {np.round(self.q_hold, 3).tolist()} rad (gravity + a damped spring, "
                    f"{self.omega / (2 * math.pi):.2g} Hz, damping {self.zeta:g})")
        if s == NO_STATE:
            return "no joint states to hold the arm from: zero effort sent (nothing holds it against gravity)"
        if s == STALE:
            return (f"joint states older than {self.stale_after:g} s: zero effort sent (nothing holds the arm against "
                    f"gravity until they come back; then the hold starts from where it is)")
        if s == NOT_FINITE:
            return "a joint state or the hold torque is not finite: zero effort sent (nothing holds the arm)"
        return "not holding"


def exit_verdict(hold: EffortHold, stream_moving: bool, waited: float, stream_timeout: float) -> int:
    """A holder shuts down: ``WAIT`` (keep holding), ``LAST_WORD`` (send ``gravity_word`` and go), ``QUIET`` (go:
    the controller's last command is zeros already, or another sender's stream goes on).

    ``stream_moving``: the last command heard from the loop was not zeros; ``waited``: s (caller's clock) since the
    shutdown began; ``stream_timeout``: the silence after which a stream counts as stopped."""
    if hold.active:
        if hold.status != HOLD:
            return QUIET if hold.status != IDLE or waited > hold.on_exit + stream_timeout else WAIT
        return LAST_WORD if hold.at_rest() or hold.held_for() >= hold.on_exit else WAIT
    if not stream_moving:
        return QUIET  # nothing was sent, or the stream's last word was zeros
    # the loop's stream was last heard moving the arm: wait for it to stop (the hold starts) or to go on
    return QUIET if waited > stream_timeout + hold.on_exit else WAIT
