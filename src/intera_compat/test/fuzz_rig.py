"""The invariant fuzz suite's rig: ``OfflineLoop`` (the realtime process's ``LoopCycle.step`` on the MuJoCo Sawyer)
driven by operations a client, an operator and the world can do, with the loop's safety properties checked after
EVERY cycle (``FuzzRig.step``). Used by ``test_invariants_fuzz`` (random operation sequences, Hypothesis),
``test_fuzz_regressions`` (the shrunk counterexamples, as plain tests) and ``bench/fuzz_long.py``.

Invariants (``Violation`` names the first one broken, the cycle and the joint):

* ``finite``: measured and commanded positions, velocities, accelerations and efforts, and the command the adapter
  hands the backend, are finite;
* ``effort``: |effort sent| ≤ the joint's effort limit;
* ``window``: every reference of a joint the law tracks (not torque-driven) is within ``following_error.window`` of
  the measured angle, unless the robot faulted in that cycle;
* ``interaction``: under interaction control (the arm torque-driven around the active source's reference) a
  reference that a source moves (a stream, a POSITION target, a whole trajectory: anything but the hold) is within
  ``interaction.reference_window`` of each measured joint (no wind-up against an obstacle or a push);
* ``limits``: the range in force widens only when a bypass begins (to ``bypass_joint_limit_tolerance``) or to
  cover the measured arm; a joint is beyond the range in force only where something outside the position loop put
  it (a push, zero-G, its own torque — until ``SETTLE`` after), and from there it only comes back (it never gets
  farther out by more than ``LIMIT_SLACK``);
* ``rest``: after a stop, a disable, a fault, the E-stop latch (on or off), a collision hold (begin or end), a reset,
  an enable, or a cuff release, the arm (and the head, but for a cuff release: the cuff's zero-G is the arm's)
  come to rest within ``SETTLE`` and stay there (speed ≤
  ``REST_SPEED``, reference steps ≤ ``REST_SPEED``·dt, drift ≤ ``REST_DRIFT``) until a new command is executed
  (a JointCommand the loop counts while the robot is active and no latch or zero-G holds it, a whole trajectory that
  starts, an interaction command, for the head a head command) — except that interaction control on at a cuff
  release resumes by itself (docs/interaction.md), and may move the arm (a force axis). While the E-stop latch, a
  collision hold or the brakes hold, the arm is at rest whatever was commanded. Pushes, zero-G and the avoidance's
  repulsion move the arm from outside: the clock restarts when they end;
* ``reversal``: after the last command of a VELOCITY or TRAJECTORY stream, no joint's reference runs back against
  its direction of motion (beyond ``REVERSE_SLACK``: a stop never runs back, however hard the reference was
  braking — a jerk-limited stop from braking at the acceleration limit ran back 13 mrad on the Sawyer's base before
  ``trajectory.stop.StopRamp`` let such a joint rest where its velocity reaches zero), nor the measured joint by more
  than that plus ``TRACK_SLACK`` (joints the law tracks: under interaction control the force moves the arm
  and the reference is kept with it). A joint's direction is the sign of the last velocity the stream commanded it
  that was not zero (``V_ZERO``: a profile's end point at rest, its braking acceleration still set, keeps the
  direction the profile had); a joint the stream never moved takes the reference's motion over the last command
  period, and one at rest then its first motion. A reference still moving against the stream's direction at its
  last command (its momentum) may first come to rest; a joint whose last TRAJECTORY point was at rest may come back
  to that point's position (a client that sends a position behind a moving joint asks for it);
* ``springback``: when the brakes or the E-stop latch take a moving arm (a disable, a stop, a fault, the latch on),
  no joint that moved faster than ``SPRING_SPEED`` runs back from the furthest point it reached along that motion by
  more than ``SPRING_SLACK`` (brakes bite and slip, they do not spring back) — until the next operation but a
  ``run``, a push, a squeeze or a touch of the table (moved from outside: an arm braking into a table bounces off
  it, on any robot), or a collision hold (which stops dead by design);
* ``goal``: a whole trajectory runs with a moving reference only if its execute was sent after the last override
  or stop event (stop, disable, fault, E-stop latch on/off, collision hold begin/end, cuff squeeze/release, reset).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from intera_compat.config import load_config
from intera_compat.control.interaction import InteractionLimits, pack
from intera_compat.data.codes import (POSITION_MODE, TORQUE_MODE, TRAJECTORY_MODE, TRAJ_RUNNING, TRAJ_STOPPING,
                                      VELOCITY_MODE)
from intera_compat.hardware.sim import SimBackend, fault_words, push_words, pushable_links
from intera_compat.loop.client import TrajectoryError
from intera_compat.loop.layouts import (MSG_BYPASS, MSG_CUFF, MSG_ENABLE, MSG_HEAD, MSG_INTERACTION, MSG_RESET,
                                        MSG_SAFETY_ESTOP, MSG_SIM_FAULT, MSG_SIM_WRENCH, MSG_STOP)
from intera_compat.loop.offline import OfflineLoop
from intera_compat.model.robot_model import RobotModel

CFG = load_config()
ARM = list(CFG.joint_names)
NA = CFG.n_arm
N = len(CFG.all_joints)
LIM = CFG.limits
LO, HI = np.asarray(LIM.lower, float), np.asarray(LIM.upper, float)
VMAX, AMAX, EMAX = np.asarray(LIM.velocity, float), np.asarray(LIM.accel, float), np.asarray(LIM.effort, float)
FE = CFG.control["following_error"]
WINDOW = float(FE["window"])
FAULT_LIMIT = float(FE["fault_window"]) + VMAX ** 2 / (2.0 * AMAX)  # (safety.following_error's fault limit)
BYPASS_TOL = float(CFG.control["bypass_joint_limit_tolerance"]) * (HI - LO)
ILIM = InteractionLimits.from_config(CFG.control.get("interaction"))
# under impedance, a reference the active source moves (not the hold) is kept this close to each measured joint
# (``interaction.reference_window``; the following error's fault limit where the loop has none)
REF_WINDOW = getattr(ILIM, "reference_window", None) or FAULT_LIMIT[:CFG.n_arm]
DT = 0.001
COMMAND_PERIOD = 0.01  # s: a streaming client's rate (100 Hz)
JERK = 10.0 * AMAX  # trajectory.stop.StopRamp's jerk limit (it never runs back: a joint rests where it stops)
REVERSE_SLACK = 1e-4  # rad: what the reference of a joint at rest may move back (rounding, shaping)
RETURN_OVERSHOOT = 0.01  # of the way back to a commanded resting point: what the shaping may pass it by
# rad/s: a commanded velocity this small is a point at rest (the rounding a client's profile leaves at its end
# instant, 0.4 - 4 * (0.4 - 0.3) = -1.1e-16, is no direction of motion; nor is -6e-8 rad/s, a profile's float32
# rest: 30-min run on a295966, a point "at rest" with a = +6 rad/s² judged moving backward when it moved 0.1 mrad on)
V_ZERO = 1e-6
REST_SPEED = 0.01  # rad/s: at rest (the loop's own tests: "stopped there, not crawling")
SPRING_SPEED = 0.05  # rad/s: a joint moving at least this fast when the brakes take it has a direction
SPRING_SLACK = 1e-3  # rad: how far it may come back from the furthest point of its stop (the law's tracking)


def _law_decay() -> float:
    """1/s: the slowest decay of the tracking law's error (a = kp e + kd ė + ki ∫e: s³ + kd s² + kp s + ki)."""
    c = CFG.control
    return min(-max(np.roots([1.0, kd, kp, ki]).real) for kp, kd, ki in zip(c["kp"], c["kd"], c["ki"]))


# a jerk-limited stop from full speed lasts v_max/a_max + a_max/j_max; a dead stop (brakes, holds) leaves the law
# to take out up to v_max, which decays below REST_SPEED in ln(v_max / REST_SPEED) / its slowest rate
SETTLE = float(np.max(VMAX / AMAX + AMAX / JERK) + math.log(np.max(VMAX) / REST_SPEED) / _law_decay())
REST_DRIFT = 5e-3  # rad: a held arm stays this close to where it came to rest
# rad: how far a position-controlled joint may overrun its reference: the error that braking at the acceleration
# limit leaves against the law's stiffness (a_max / kp), were the feed-forward not there
TRACK_SLACK = float(np.max(AMAX[:CFG.n_arm] / np.asarray(CFG.control["kp"], float)[:CFG.n_arm]))
LIMIT_SLACK = TRACK_SLACK  # rad: a tracked joint beyond the range in force (the same overrun)
TABLE = CFG.scene_obstacles("table")
LINKS, FIXED = pushable_links(RobotModel(CFG))


def _stopping(v: np.ndarray, a: np.ndarray) -> np.ndarray:
    """How far a jerk-limited stop (``JERK``, ``AMAX``) from velocity ``v`` and acceleration ``a`` runs on (rad, per
    joint): the acceleration ramps to braking at AMAX, then it brakes to rest (the reversal rule allows 25 % more:
    the hold's stop ramp starts a cycle late and brakes more gently at its end)."""
    speed = np.abs(v)
    along = np.clip(np.where(speed > 0.0, a * np.sign(v), 0.0), -AMAX[:NA], AMAX[:NA])  # (speeding up: > 0)
    t1 = (along + AMAX[:NA]) / JERK[:NA]
    ramp = speed * t1 + along * t1 ** 2 / 2.0 - JERK[:NA] * t1 ** 3 / 6.0
    v1 = np.maximum(speed + along * t1 - JERK[:NA] * t1 ** 2 / 2.0, 0.0)
    return np.maximum(ramp, 0.0) + v1 ** 2 / (2.0 * AMAX[:NA])


class Violation(AssertionError):
    """An invariant broken: ``name``, the loop time, what."""

    def __init__(self, name: str, t: float, what: str):
        super().__init__(f"[{name}] at t={t:.3f} s: {what}")
        self.name = name


@dataclass
class Stream:
    """A streaming client: one command every ``COMMAND_PERIOD`` while it runs. TRAJECTORY: p0 + v t + a t²/2,
    v + a t, a (a consistent stream); VELOCITY: v; TORQUE: effort; POSITION: a fixed target."""
    mode: int
    values: np.ndarray  # POSITION target / VELOCITY v / TORQUE effort / TRAJECTORY v
    accel: np.ndarray | None = None  # TRAJECTORY a
    p0: np.ndarray | None = None
    t0: float = 0.0
    names: list = field(default_factory=lambda: list(ARM))
    profile: "Profile | None" = None  # TRAJECTORY: a piecewise profile that ends at rest (then the stream ends)
    dir: np.ndarray = field(default_factory=lambda: np.zeros(NA))  # per arm joint: sign of the last v ≠ 0 sent
    rest_at: np.ndarray = field(default_factory=lambda: np.full(NA, np.nan))  # TRAJECTORY: where the last point,
    # at rest, told a joint to be (NaN: its last point was moving, or none)
    refs: list = field(default_factory=list)  # the reference (q, v) as the last two commands were sent
    sent: int = 0  # commands sent


@dataclass
class Profile:
    """A client's trapezoid profile, sampled at 100 Hz as the client computes it: per joint from velocity ``v0``
    accelerate to ``vpeak`` over ``n_acc`` periods (0: a jump to it), cruise ``n_cruise``, brake to rest over
    ``n_brake`` (≥ 1); then ``hold`` points at rest — the first is the profile's end instant — with the
    acceleration ``a_end``, and nothing more. The velocity at rest is exactly 0 (``exact``), or what the client's
    floating point gives at its end instant (0.4 - 4 * (0.4 - 0.3) = -1.1e-16: a rounding, not a direction)."""
    v0: np.ndarray
    vpeak: np.ndarray
    n_acc: int
    n_cruise: int
    n_brake: int
    a_end: np.ndarray
    exact: bool = True
    hold: int = 1

    def __post_init__(self):
        assert self.n_brake >= 1 and self.hold >= 1
        T, phases, t, dp, v = COMMAND_PERIOD, [], 0.0, np.zeros_like(self.v0, dtype=float), np.asarray(self.v0, float)
        for n, target in ((self.n_acc, self.vpeak), (self.n_cruise, self.vpeak), (self.n_brake, 0.0 * self.vpeak)):
            target = np.asarray(target, float)
            if n:
                a = (target - v) / (n * T)
                phases.append((t, v, a, dp))
                dp = dp + (v + 0.5 * a * (n * T)) * (n * T)
                t = t + n * T
            v = target  # (n = 0: a jump)
        self._phases, self._dp_end = phases, dp
        self.n_end = self.n_acc + self.n_cruise + self.n_brake
        self.n_points = self.n_end + self.hold

    def sample(self, k: int):
        """The client's point k (t = k × 0.01 s): position offset, velocity, acceleration."""
        t = min(k, self.n_end) * COMMAND_PERIOD
        t0, v, a, dp = next(ph for ph in reversed(self._phases) if ph[0] <= t + 1e-9)
        tau = t - t0  # (the phase's own time, as a client computes it)
        p, v = dp + (v + 0.5 * a * tau) * tau, v + a * tau
        if k < self.n_end:
            return p, v, a.copy()
        if self.exact:
            p, v = self._dp_end.copy(), np.zeros_like(v)
        return p, v, np.asarray(self.a_end, float).copy()


class FuzzRig:
    def __init__(self, table: bool = False, on_record=None, ignore=()):
        backend = SimBackend(RobotModel(CFG), CFG.full_pose("neutral"), obstacles=TABLE if table else None)
        self.L = L = OfflineLoop(CFG, backend=backend)
        self.c = L.cycle
        self.s = L.state.local
        self.log = []  # the operations, as code (a counterexample reads as a test)
        self.on_record = on_record  # called with each operation's line as it is made
        self.ignore = frozenset(ignore)  # invariants not checked (only to look past a known bug: bench/fuzz_long.py)
        self.stream: Stream | None = None
        self.next_send = 0.0
        self.seq = 0  # operations so far
        self.traj_sent: dict[int, int] = {}  # trajectory id → the operation that sent its execute
        # monitors
        self.last_override = 0  # the operation of the last override / stop event (0: none yet)
        self.quiet_since = 0.0  # rest: the clock since the last event that stops the arm (or the last push)
        self.permitted = False  # the arm may move: a command was executed since the last such event (or the start)
        self.head_permitted = False
        self.push_until = -np.inf  # loop time the last push ends (none yet)
        self.squeezed = False
        self.latched = False
        self.rest_q: np.ndarray | None = None  # where the arm came to rest (rest's drift)
        self.rev: dict | None = None  # reversal monitor after a stream's last command
        self.spring: dict | None = None  # springback monitor after the brakes or the latch took a moving arm
        self.braked_was = False
        self.prev = None  # last cycle's record (copies)
        self.range_excess = np.zeros((2, N))  # the range in force beyond the configured one (upper, lower)
        self.hold_was = False
        self.free_at = np.full(N, -np.inf)  # per joint: when it was last moved from outside the position loop
        self.beyond_ok = np.zeros(N)  # per joint: how far beyond the range in force it was put (and may stay)
        L.step()
        self._snapshot()

    # ---- time -------------------------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.c.now

    def _record(self, line: str, keeps_reversal: bool = False) -> None:
        """Every operation: its line of code, its sequence number; any but a few ends the reversal watch (a new
        command may legitimately turn the arm round)."""
        self.log.append(line)
        if self.on_record is not None:
            self.on_record(line)
        self.seq += 1
        if not keeps_reversal:
            self.rev = None
            self.spring = None

    # ---- operations -------------------------------------------------------------------------------------
    def run(self, seconds: float) -> None:
        self._record(f"rig.run({seconds!r})", keeps_reversal=True)
        self.step(int(round(seconds / DT)))

    def command(self, mode: int, names, **arrays):
        """A JointCommand through the validator (as the listener does); its verdict."""
        names = list(names)
        self._record(f"rig.command({mode}, {names!r}, " + ", ".join(f"{k}={_lst(v)}" for k, v in arrays.items())
                     + ")")
        return self._send(mode, names, arrays)

    def _send(self, mode, names, arrays):
        v = self.L.send(mode, names, **arrays)
        bad = [k for k, a in arrays.items() if not np.all(np.isfinite(np.asarray(a, float)))]
        wrong = [k for k, a in arrays.items() if len(a) not in (len(names),)
                 and not (mode == TRAJECTORY_MODE and len(a) == 0 and k in ("velocity", "acceleration"))]
        if v.ok and (bad or wrong):
            self._fail("validator", self.now, f"accepted a command with non-finite {bad} or wrong-length "
                                                   f"{wrong} arrays")
        return v

    def start_stream(self, mode: int, values, accel=None, names=None) -> None:
        names = list(names or ARM)
        self._record(f"rig.start_stream({mode}, {_lst(values)}, {None if accel is None else _lst(accel)}, "
                     f"{names!r})")
        idx = [ARM.index(x) for x in names]
        p0 = self.s.cmd_position[idx].copy() if mode == TRAJECTORY_MODE else None
        self.stream = Stream(mode, np.asarray(values, float), None if accel is None else np.asarray(accel, float),
                             p0, self.now, names)
        self.next_send = self.now
        self.rev = None

    def profile(self, vpeak, n_acc: int, n_cruise: int, n_brake: int, a_end, exact: bool = True, hold: int = 1,
                names=None) -> None:
        """A TRAJECTORY_MODE client streams a trapezoid (``Profile``) from the reference's position and velocity to
        rest, its last ``hold`` points at rest with the acceleration ``a_end``, then stops sending (as
        ``stop_stream``) — the end of a ruckig or trapezoid profile."""
        names = list(names or ARM)
        self._record(f"rig.profile({_lst(vpeak)}, {n_acc!r}, {n_cruise!r}, {n_brake!r}, {_lst(a_end)}, {exact!r}, "
                     f"{hold!r}, {names!r})")
        idx = [ARM.index(x) for x in names]
        prof = Profile(self.s.cmd_velocity[idx].copy(), np.asarray(vpeak, float), int(n_acc), int(n_cruise),
                       int(n_brake), np.asarray(a_end, float), bool(exact), int(hold))
        self.stream = Stream(TRAJECTORY_MODE, prof.vpeak, None, self.s.cmd_position[idx].copy(), self.now, names,
                             profile=prof)
        self.next_send = self.now
        self.rev = None

    def stop_stream(self) -> None:
        """The client stops sending: the reversal monitor starts from the last command's reference."""
        self._record("rig.stop_stream()", keeps_reversal=True)
        self._end_stream()

    def _end_stream(self) -> None:
        st = self.stream
        self.stream = None
        if st is None or st.mode not in (VELOCITY_MODE, TRAJECTORY_MODE) or not st.sent:
            return
        (q_last, v_last) = st.refs[-1]
        # the reference's motion over the last command period (its velocity when a single command was sent)
        moved = q_last - st.refs[0][0] if len(st.refs) == 2 else v_last * COMMAND_PERIOD
        self.rev = {"armed": True, "mode": st.mode, "dir": st.dir.copy(), "moved": moved, "v_last": v_last,
                    "rest_at": st.rest_at.copy()}

    def _stream_send(self) -> None:
        st = self.stream
        t = self.now - st.t0
        idx = [ARM.index(x) for x in st.names]
        v = None
        if st.profile is not None:
            dp, v, a = st.profile.sample(st.sent)
            p = st.p0 + dp
            ok = self._send(TRAJECTORY_MODE, st.names, {"position": p, "velocity": v, "acceleration": a})
        elif st.mode == TRAJECTORY_MODE:
            a = st.accel
            v = st.values + a * t
            p = st.p0 + (st.values + 0.5 * a * t) * t
            ok = self._send(TRAJECTORY_MODE, st.names, {"position": p, "velocity": v, "acceleration": a})
        else:
            key = {POSITION_MODE: "position", VELOCITY_MODE: "velocity", TORQUE_MODE: "effort"}[st.mode]
            ok = self._send(st.mode, st.names, {key: st.values})
            if st.mode == VELOCITY_MODE:
                v = st.values
        st.sent += 1
        if v is not None and ok.ok:  # (the direction the loop was told: a refused command tells it nothing)
            moving = np.abs(v) > V_ZERO
            st.dir[np.asarray(idx)[moving]] = np.sign(v[moving])
            if st.mode == TRAJECTORY_MODE:
                st.rest_at[idx] = np.where(moving, np.nan, p)
        st.refs = (st.refs + [(self.s.cmd_position[:NA].copy(), self.s.cmd_velocity[:NA].copy())])[-2:]
        if st.profile is not None and st.sent >= st.profile.n_points:
            self._end_stream()  # (the profile's last point: the client sends nothing more)

    def execute(self, times, positions, velocities=None, accelerations=None, joint_names=None, scaling=1.0,
                tracking=0, kp=None):
        """A whole trajectory through TrajectoryClient; its id (None: the client refused it)."""
        self._record(f"rig.execute({_lst(times)}, {_lst(positions)}, {_lst(velocities)}, {_lst(accelerations)}, "
                     f"{joint_names!r}, {scaling!r}, {tracking!r}, {_lst(kp)})")
        try:
            tid = self.L.trajectories.execute(times, positions, velocities, accelerations, joint_names, scaling,
                                              tracking, kp)
        except TrajectoryError:
            return None
        self.traj_sent[tid] = self.seq
        return tid

    def cancel(self, traj_id: int = 0) -> None:
        self._record(f"rig.cancel({traj_id})")
        self.L.trajectories.cancel(traj_id)

    def scale(self, factor: float) -> None:
        self._record(f"rig.scale({factor!r})")
        self.L.trajectories.set_scaling(factor)

    def speed_ratio(self, ratio: float) -> None:
        self._record(f"rig.speed_ratio({ratio!r})")
        self.L.set(speed_ratio=ratio)

    def estop(self, on: bool) -> None:
        self._record(f"rig.estop({on})")
        self.L.event(MSG_SAFETY_ESTOP, 1.0 if on else 0.0)
        if on != self.latched:
            self.latched = on
            self._override()

    def cuff(self, on: bool) -> None:
        self._record(f"rig.cuff({on})")
        self.L.event(MSG_CUFF, 1.0 if on else 0.0)
        if on != self.squeezed:
            self.squeezed = on
            head = self.head_permitted
            self._override()
            self.head_permitted = head  # (the cuff's zero-G is the arm's: a head move under way goes on)
            if not on and self.s.interaction_on[0] == 1.0 and self._active():
                self.permitted = True  # (docs/interaction.md: after a squeeze interaction control resumes by itself)

    def push(self, link: str, wrench, duration: float) -> None:
        self._record(f"rig.push({link!r}, {_lst(wrench)}, {duration!r})")
        self.L.channel.post(MSG_SIM_WRENCH, push_words(LINKS, link, wrench, duration, FIXED))
        self.push_until = max(self.push_until, self.now + duration) if duration > 0 else self.push_until

    def bypass(self, seconds: float) -> None:
        self._record(f"rig.bypass({seconds!r})", keeps_reversal=True)
        self.L.event(MSG_BYPASS, seconds)

    def interaction(self, active: bool, modes=(1,) * 6, K=(1300.0, 1300.0, 1300.0, 30.0, 30.0, 30.0),
                    force=(0.0,) * 6, D=(), K_ns=(5.0, 10.0, 5.0, 10.0, 5.0, 10.0, 5.0), no_reset=False) -> None:
        self._record(f"rig.interaction({active}, {tuple(modes)!r}, {_lst(K)}, {_lst(force)}, {_lst(D)}, "
                     f"{_lst(K_ns)}, {no_reset})")
        w, _ = pack(active, list(modes), list(K), [False] * 6, list(D), list(K_ns), list(force), (0, 0, 0),
                    (0, 0, 0, 1), "right_hand", False, False, no_reset, False, NA, "right_hand", ILIM)
        self.L.event(MSG_INTERACTION, *w)
        if self._active():
            self.permitted = True  # (an interaction command moves the arm: a force mode pushes it)

    def head(self, target: float, ratio: float, mode: int = 1) -> None:
        self._record(f"rig.head({target!r}, {ratio!r}, {mode})", keeps_reversal=True)
        self.L.event(MSG_HEAD, target, ratio, mode)
        if self._active() and not self.latched:
            self.head_permitted = True

    def stop(self) -> None:
        self._record("rig.stop()")
        self.L.event(MSG_STOP)

    def reset(self) -> None:
        self._record("rig.reset()")
        self.L.event(MSG_RESET)

    def enable(self, on: bool) -> None:
        self._record(f"rig.enable({on})")
        self.L.event(MSG_ENABLE, 1.0 if on else 0.0)

    def fault(self, kind: str, duration: float) -> None:
        self._record(f"rig.fault({kind!r}, {duration!r})")
        self.L.event(MSG_SIM_FAULT, *fault_words(kind, duration))

    def raw(self, mode: int, position=None, velocity=None, acceleration=None, effort=None) -> None:
        """A command posted straight into the ring, past the validator (defence in depth)."""
        self._record(f"rig.raw({mode}, {_lst(position)}, {_lst(velocity)}, {_lst(acceleration)}, {_lst(effort)})")
        mask = np.zeros(N, bool)
        mask[:NA] = True

        def full(x):
            out = np.zeros(N)
            if x is not None:
                out[:NA] = x
            return out

        self.L.channel.post_command(mode, mask, {"position": full(position), "velocity": full(velocity),
                                                 "acceleration": full(acceleration), "effort": full(effort)})

    # ---- the monitors -----------------------------------------------------------------------------------
    def _active(self) -> bool:
        s = self.s
        return s.enabled[0] == 1.0 and s.stopped[0] == 0.0

    def _fail(self, name: str, t: float, what: str) -> None:
        """Raise the violation, unless ``name`` is one ``ignore`` leaves out (exploring beyond a known bug)."""
        if name not in self.ignore:
            raise Violation(name, t, what)

    def _override(self, by_loop: bool = False) -> None:
        """An event that stops the arm (or ends an override): nothing moves until a new command. ``by_loop``: the
        loop's own (a change of the robot's state, a collision hold), after the latest operation."""
        self.last_override = self.seq + (0.5 if by_loop else 0.0)
        self.quiet_since = self.now
        self.permitted = self.head_permitted = False
        self.rest_q = None
        self.rev = None

    def _snapshot(self) -> None:
        s = self.s
        self.prev = {"cmd_q": s.cmd_position.copy(), "cmd_v": s.cmd_velocity[:NA].copy(),
                     "cmd_a": s.cmd_acceleration[:NA].copy(), "commands": s.commands[0],
                     "robot": (s.enabled[0], s.stopped[0], s.error[0])}
        c = self.c
        self.range_excess[0] = np.maximum(c.upper - HI, 0.0)
        self.range_excess[1] = np.maximum(LO - c.lower, 0.0)
        self.hold_was = bool(c.collision_hold.on)

    def step(self, cycles: int) -> None:
        for _ in range(cycles):
            if self.stream is not None and self.now >= self.next_send - 1e-9:
                self._stream_send()
                self.next_send += COMMAND_PERIOD
            was = self.prev
            self.L.step()
            self._check(was)
            self._snapshot()

    def _check(self, was: dict) -> None:
        s, c, t = self.s, self.c, self.now - DT  # (the record is of the cycle that just ran)
        q, v, cq = s.position, s.velocity, s.cmd_position
        cmd = c.adapter.command
        for name, x in (("position", q), ("velocity", v), ("effort", s.effort), ("cmd_position", cq),
                        ("cmd_velocity", s.cmd_velocity), ("cmd_acceleration", s.cmd_acceleration),
                        ("cmd_effort", s.cmd_effort), ("backend command", cmd.block)):
            if not np.all(np.isfinite(x)):
                self._fail("finite", t, f"{name} = {x}")
        over = np.abs(cmd.effort) > EMAX + 1e-9
        if over.any():
            j = int(np.argmax(over))
            self._fail("effort", t, f"joint {j}: effort {cmd.effort[j]:.4g} Nm beyond its limit {EMAX[j]:g} Nm")
        faulted = s.error[0] == 1.0
        tracked = ~c.sp.torque_only
        err = np.abs(cq - q)
        if not faulted:
            bad = tracked & (err > WINDOW + 1e-9)
            if bad.any():
                j = int(np.argmax(bad))
                self._fail("window", t, f"joint {j}: reference {cq[j]:.4f} is {err[j]:.4f} rad from the arm "
                                             f"(window {WINDOW})")
        if s.interaction_engaged[0] == 1.0 and c.arbiter.active is not c.hold:
            bad = err[:NA] > REF_WINDOW + 1e-9
            if bad.any():
                j = int(np.argmax(bad))
                self._fail("interaction", t, f"joint {j}: the reference {cq[j]:.4f} under interaction control is "
                                             f"{err[j]:.4f} rad from the arm "
                                             f"(bound {np.broadcast_to(REF_WINDOW, NA)[j]:.3f})")
        self._check_limits(t, q, tracked)
        # events the loop raises by itself
        hold = bool(c.collision_hold.on)
        if hold != self.hold_was or (s.enabled[0], s.stopped[0], s.error[0]) != was["robot"]:
            self._override(by_loop=True)  # (enabled, disabled, stopped, faulted, reset; a collision hold)
        braked = self.latched or not self._active()
        if braked and not self.braked_was and not hold:
            moving = np.abs(v[:NA]) > SPRING_SPEED
            self.spring = {"dir": np.where(moving, np.sign(v[:NA]), 0.0), "far": q[:NA].copy()} if moving.any() \
                else None
        self.braked_was = braked
        if c.avoidance is not None and c.avoidance.repelling > 0:
            # the avoidance's repulsion pushes the arm out of a self-collision zone (after a bypass ends, say): a
            # push from outside the position loop (30-min run on 9cda3ea: 'rest', 0.09 rad/s as the bypass ended)
            self.push_until = max(self.push_until, self.now)
        if self.now < self.push_until + SETTLE or self.squeezed:
            self.quiet_since = self.now  # moved from outside: the rest clock restarts after
            self.rest_q = None
            self.rev = None
            self.spring = None
        if hold or not braked or self.L.backend.d.ncon:
            self.spring = None  # (touching something — the table — the arm is moved from outside: it may bounce)
        # permission: a command the loop executed while the robot was active, no latch, no zero-G
        if s.commands[0] > was["commands"] and self._active() and not self.latched and not self.squeezed:
            self.permitted = True
        if s.traj_state[0] in (TRAJ_RUNNING, TRAJ_STOPPING):
            tid = int(s.traj_id[0])
            sent = self.traj_sent.get(tid, -1)
            moving = np.abs(s.cmd_velocity[:NA]).max() > REST_SPEED
            if sent < self.last_override and moving and s.traj_state[0] == TRAJ_RUNNING:
                self._fail("goal", t, f"trajectory {tid}, sent by operation {sent}, runs after the override or "
                                           f"stop of operation {self.last_override} without a new execute")
            if sent >= self.last_override:
                self.permitted = True
        self._check_rest(t, was, hold)
        self._check_reversal(t)
        self._check_springback(t)

    def _check_limits(self, t: float, q: np.ndarray, tracked: np.ndarray) -> None:
        c = self.c
        up = np.maximum(c.upper - HI, 0.0)
        down = np.maximum(LO - c.lower, 0.0)
        meas_up, meas_down = np.maximum(q - HI, 0.0), np.maximum(LO - q, 0.0)
        bypass_on = c.bypass
        for side, (r, m) in enumerate(((up, meas_up), (down, meas_down))):
            allowed = np.maximum(self.range_excess[side], m + 1e-9)  # (out to the measured arm)
            if bypass_on:
                allowed = np.maximum(allowed, BYPASS_TOL + 1e-9)
            bad = r > allowed
            if bad.any():
                j = int(np.argmax(bad))
                self._fail("limits", t, f"joint {j}: the range in force widened {r[j]:.4f} rad beyond the "
                                             f"configured limit by itself")
        # the arm beyond the range in force: only where something outside the position loop put it (a push, zero-G,
        # its own torque; until SETTLE after), and from there it may only come back
        if self.now < self.push_until + SETTLE or self.squeezed:
            self.free_at[:] = self.now
        self.free_at[~tracked] = self.now
        beyond = np.maximum(np.maximum(q - c.upper, c.lower - q), 0.0)
        free = self.now - self.free_at < SETTLE
        np.maximum(self.beyond_ok, beyond, out=self.beyond_ok, where=free)
        bad = beyond > self.beyond_ok + LIMIT_SLACK
        if bad.any():
            j = int(np.argmax(bad))
            self._fail("limits", t, f"joint {j} at {q[j]:.4f} rad is {beyond[j]:.4f} rad beyond the range in "
                                    f"force [{c.lower[j]:.4f}, {c.upper[j]:.4f}] (it was put {self.beyond_ok[j]:.4f}"
                                    f" rad beyond)")
        np.minimum(self.beyond_ok, beyond, out=self.beyond_ok)

    def _check_rest(self, t: float, was: dict, hold: bool) -> None:
        s, c = self.s, self.c
        holding = self.latched or hold or not self._active()
        arm_quiet = not self.permitted or holding
        # (the head sits on the arm's first link: it is at rest only while the arm is, whatever it was told)
        head_quiet = arm_quiet and (not self.head_permitted or self.latched or not self._active())
        if self.now - self.quiet_since < SETTLE or not (arm_quiet or head_quiet):
            if not (arm_quiet or head_quiet):
                self.rest_q = None
            return
        joints = np.zeros(N, bool)
        joints[:NA] = arm_quiet
        if N > NA:
            joints[NA:] = head_quiet
        v = np.abs(s.velocity)
        step = np.abs(s.cmd_position - was["cmd_q"]) / DT
        for what, x in (("measured speed", v), ("reference speed", step)):
            bad = joints & (x > REST_SPEED)
            if bad.any():
                j = int(np.argmax(bad))
                self._fail("rest", t, f"joint {j} moves ({what} {x[j]:.4f} rad/s) {self.now - self.quiet_since:.3f}"
                                           f" s after the last stop/override event, without a new command")
        if self.rest_q is None:
            self.rest_q = s.position.copy()
        drift = np.abs(s.position - self.rest_q)
        bad = joints & (drift > REST_DRIFT)
        if bad.any():
            j = int(np.argmax(bad))
            self._fail("rest", t, f"joint {j} drifted {drift[j]:.4f} rad from where it came to rest")

    def _check_reversal(self, t: float) -> None:
        rv = self.rev
        if rv is None:
            return
        s = self.s
        if s.error[0] == 1.0 or not self._active() or self.c.collision_hold.on:
            self.rev = None
            return
        cq, q = s.cmd_position[:NA], s.position[:NA]
        first = rv["armed"]
        if first:  # the first cycle after the last command
            rv["armed"] = False
            d = rv["dir"]  # the stream's own direction of motion (its last velocity that was not zero)
            moved = rv["moved"]  # else the reference's over the last command period
            none = d == 0.0
            d[none] = np.where(np.abs(moved[none]) > 1e-6, np.sign(moved[none]), 0.0)
            # a reference still moving against the stream's direction as its last command came (its momentum) may
            # first come to rest
            rv["coast"] = (d != 0.0) & (rv["v_last"] * d < -1e-4)
            rv["ref"] = cq.copy()
            rv["meas"] = q.copy()
            rv["ref0"] = cq.copy()
            rv["last"] = cq.copy()
        d = rv["dir"]
        free = d == 0.0  # never moved by the stream, at rest at its last command: its first motion sets it
        if free.any():
            moved = cq - rv["ref0"]
            d[free] = np.where(np.abs(moved[free]) > 1e-4, np.sign(moved[free]), 0.0)
        coast = rv["coast"]
        timeouts = self.c.counts["timeouts"]
        if first:
            rv["timeouts"] = timeouts
        else:
            coast &= (cq - rv["last"]) * d < 0.0  # (until it no longer moves against d)
            if timeouts != rv["timeouts"]:
                # the command timeout: the hold stops the reference from its motion then — a joint on its way back
                # to the point its last command asked it to rest at may pass it by the hold's stopping distance from
                # its speed then (30-min run on 18b2d83: 5.6 mrad past, the timeout striking at 0.8 rad/s on the way
                # back; a review's find: excused as coasting instead, a hold running on back went unseen)
                rv["timeouts"] = timeouts
                back_to = ((cq - rv["last"]) * d < 0.0) & np.isfinite(rv["rest_at"])
                v0, a0 = self.prev["cmd_v"], self.prev["cmd_a"]  # (the reference as the stream left it)
                remaining = np.maximum(np.nan_to_num((rv["last"] - rv["rest_at"]) * d, nan=0.0), 0.0)
                rv["stop_extra"] = np.where(back_to, np.maximum(1.25 * _stopping(v0, a0) - remaining, 0.0), 0.0)
        rv["last"] = cq.copy()
        # (a joint interaction control drives is moved by its force, and its reference follows the arm: not checked)
        tracked = ~self.c.sp.torque_only[:NA]
        # (30-min run on 1e4464b: a stream braking j4 into the avoidance zone, its repulsion pushed it back 0.0137)
        # (the reference is still checked; from the first push on, the measured arm is the avoidance's to move)
        ca = self.c.avoidance
        repelled = rv["repelled"] = rv.get("repelled", False) or (ca is not None and ca.repelling > 0)
        # (30-min run on ad5f607: a stream's hold took the arm in the zone, the repulsion pushed j4 52 mrad back, and the
        # following-error window pulled the reference 0.2 mrad after it: the arm's motion, not the source's)
        # (only where the window set it, this cycle, with the arm on the far side of it against the stream's way:
        # a review's find — any chain stage touching the reference of any joint hid a reversal of its own)
        pulled = (repelled & (self.c.sp.source_q[:NA] != cq) & (np.abs(cq - q) >= WINDOW - 1e-9)
                  & ((q - cq) * d < 0.0))
        for name, x, key, slack in (("reference", cq, "ref", 0.0), ("measured", q, "meas", TRACK_SLACK)):
            ext = rv[key]
            _furthest(ext, x, d)
            np.copyto(ext, x, where=coast)
            if name == "measured" and repelled:
                ext[:] = x  # the avoidance's repulsion pushes the arm out of a self-collision: its own motion
            elif pulled.any():
                np.copyto(ext, x, where=pulled)  # ... and the window pulls the reference after the arm it pushed
            back = (ext - x) * d
            # a joint whose last point told it to rest at a position behind where it went (a client that sent the
            # reference's position of a moment ago) may come back to that point: the client asked for it — and the
            # jerk-limited shaping that brings it there from speed may pass it by RETURN_OVERSHOOT of the way back
            # (30-min run on 915b2e1: 0.6 mrad past, after 0.19 rad back)
            to_rest = np.nan_to_num((ext - rv["rest_at"]) * d, nan=0.0)
            tl = np.maximum(to_rest * (1.0 + RETURN_OVERSHOOT), 0.0) + REVERSE_SLACK + slack + rv.get("stop_extra", 0.0)
            bad = tracked & (back > tl)
            if bad.any():
                j = int(np.argmax(bad))
                self._fail("reversal", t, f"joint {j}: the {name} ran back {back[j]:.4f} rad against its "
                                               f"last direction of motion ({d[j]:+.0f}) after the stream's last "
                                               f"command (allowed {tl[j]:.4f})")


    def _check_springback(self, t: float) -> None:
        sp = self.spring
        if sp is None:
            return
        d, far, q = sp["dir"], sp["far"], self.s.position[:NA]
        _furthest(far, q, d)
        back = (far - q) * d
        bad = back > SPRING_SLACK
        if bad.any():
            j = int(np.argmax(bad))
            self._fail("springback", t, f"joint {j}: braked while moving ({d[j]:+.0f}), it came back {back[j]:.4f} "
                                        f"rad from the furthest point of its stop")


def _furthest(ext: np.ndarray, x: np.ndarray, d: np.ndarray) -> None:
    """``ext`` (in place): the furthest each joint got along its direction ``d`` (+1 / -1), now ``x``; where ``d`` is
    0, ``x`` itself."""
    np.copyto(ext, np.where(d > 0, np.maximum(ext, x), np.where(d < 0, np.minimum(ext, x), x)))


def _lst(x):
    if x is None:
        return "None"
    a = np.asarray(x, float)
    return repr(np.round(a, 6).tolist()).replace("nan", "float('nan')").replace("inf", "float('inf')")
