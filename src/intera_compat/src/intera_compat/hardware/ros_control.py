"""ros_control arms (Gazebo's gazebo_ros_control, the UR ROS 1 driver, any ros_control hardware): the loop's half.

The realtime process has no rospy, so the arm's topics are read and written by a bridge in the realtime_loop
node (``ros/ros_control_bridge.py``); the two halves share two seqlock records and two pipes:

* ``hw_in`` (bridge → loop): the latest ``/joint_states`` in config order, the speed-scaling factor, and the
  faults the bridge sees (a message that lacks some of the arm's joints); each sample pokes the ``wake`` pipe;
* ``hw_out`` (loop → bridge): this cycle's command and whether the arm is to be streamed to; each command
  pokes the ``command`` pipe, and the bridge publishes it as the controller's ``std_msgs/Float64MultiArray``.

* ``traj`` (loop → bridge, ``interface: trajectory``): a whole trajectory (``submit``) or a cancel; the bridge
  sends it to the arm's ``FollowJointTrajectory`` controller and reports its state back in ``hw_in``
  (``traj_state``: active, done, failed — a failure is a controller error: the robot stops). Such an arm is
  trajectory-only: JointCommands are refused, holds are the controller's own, and the loop still plays the
  same trajectory on the same (speed-scaled) time base for its monitors.

The arm is the clock: the loop runs one cycle per joint-state sample (``wait``), at the period the config
states. No sample for ``link_timeout`` s (at least 3 periods) is a lost link (fault). While the robot is disabled or
stopped the loop sends nothing (``brake``): a position controller holds its last command, a velocity
controller gets one zero command first; an effort controller is streamed throughout (the loop's brakes are
torques). The controller (and so the capability) is chosen in config: ``ros_control.interface``.

A ``JointGroup{Velocity,Effort}Controller`` keeps its last command for ever, so the stream has dead-men (a position
controller holds its last position by itself). On a velocity arm each sends zeros. On an effort arm zero would let
the arm fall under gravity (a Gazebo arm has no brakes): each holds it instead (``hardware/effort_hold.py``: gravity
compensation plus a damped spring at the pose where the commands stopped, computed from the arm's joint states at
their rate; zero effort only when those are stale, missing or not finite, said in a log), and leaves gravity
compensation at the arm's rest pose as its last word when it goes:

* the loop's last word (``close``: any end of the loop process but SIGKILL) is a stop: zero velocity, gravity
  compensation at the last joint states' pose (effort), or the last position again;
* the bridge (``ros/ros_control_bridge.py``) stops the arm when the loop's end of the pipe closes (the process died,
  even by SIGKILL), when the loop falls silent for ``silence`` after a moving command (hung), and when the node
  shuts down (an effort arm: held until at rest, ``hold_on_exit`` at most, then gravity compensation);
* ``command_watchdog`` (``hardware/command_watchdog.py``), a node of its own, does the same when the controller's
  command topic falls silent for ``silence`` after a moving command (the realtime_loop node itself died).
"""
from __future__ import annotations

import math
import os
import select
import time
from dataclasses import dataclass, field

import numpy as np

from ..data.faults import FAULT_CONTROLLER_ERROR, FAULT_LINK_LOST
from ..data.shm import Layout, SeqlockRecord
from ..data.state import PROGRESS_FAILED, PROGRESS_NONE, Capability, HardwareCommand, HardwareState
from .base import Backend
from .effort_hold import EffortHold, hold_omega

INTERFACES = {"position": Capability.POSITION, "velocity": Capability.VELOCITY, "effort": Capability.TORQUE,
              "trajectory": Capability.TRAJECTORY_ONLY}
# traj_state (hw_in): what the arm's trajectory controller did with submission ``traj_seq`` (PROGRESS_*)


@dataclass
class RosControlSettings:
    """``ros_control`` in the robot config (every topic name a user of another arm may need to change)."""

    interface: str = "position"  # position | velocity | effort: the JointGroup*Controller to stream to;
    # trajectory: no streaming, whole trajectories go to the FollowJointTrajectory controller below
    trajectory_action: str = "/pos_joint_traj_controller/follow_joint_trajectory"
    max_knots: int = 10000  # the most knots one forwarded trajectory carries (control.max_trajectory_knots)
    rate: float = 200.0  # Hz the arm publishes joint states at: the loop's rate
    # s without joint states: the link is lost (at least 3 periods). Joint states come over ROS topics: the jitter of a
    # rospy hop on a loaded machine is tens of ms, and 3 periods of a 500 Hz arm (6 ms) would trip on it
    link_timeout: float = 0.1
    joint_states: str = "/joint_states"
    command_topics: dict = field(default_factory=lambda: {
        "position": "/joint_group_position_controller/command",
        "velocity": "/joint_group_velocity_controller/command",
        "effort": "/joint_group_effort_controller/command"})
    speed_scaling: str = ""  # e.g. /speed_scaling_factor (the UR driver's std_msgs/Float64); "" none
    measured_effort: bool = False  # joint_states' effort is a measured link-side torque (collision detection)
    joints: list = field(default_factory=list)  # the arm's joint names on its side, in config order ([]: ours)
    startup_timeout: float = 30.0  # s the loop waits for the first joint states
    # s without a command after a moving one (velocity, effort), beyond 3 periods: the loop is gone, zeros are sent
    stop_timeout: float = 0.1
    # an effort arm's dead-man hold (effort_hold.py): natural frequency [Hz] and damping ratio of its spring, and how
    # long [s of the arm's stamps] a holder that shuts down keeps holding for the arm to come to rest
    hold_frequency: float = 2.0
    hold_damping: float = 1.0
    hold_on_exit: float = 2.0

    @classmethod
    def from_config(cls, cfg, interface: str = "", rate: float = 0.0,
                    link_timeout: float = 0.0) -> "RosControlSettings":
        """``interface``, ``rate``, ``link_timeout`` (> 0): override the config's (launch arguments)."""
        raw = dict(cfg.raw.get("ros_control") or {})
        if interface:
            raw["interface"] = interface
        if rate > 0.0:
            raw["rate"] = float(rate)
        if link_timeout > 0.0:
            raw["link_timeout"] = float(link_timeout)
        topics = {**cls().command_topics, **(raw.pop("command_topics", None) or {})}
        unknown = sorted(set(raw) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"{cfg.path}: ros_control has unknown keys {unknown}")
        raw.setdefault("max_knots", int((cfg.raw.get("control") or {}).get("max_trajectory_knots", 10000)) + 1)
        s = cls(command_topics=topics, **raw)
        if s.interface not in INTERFACES:
            raise ValueError(f"{cfg.path}: ros_control.interface {s.interface!r}: use one of {', '.join(INTERFACES)}")
        if not (np.isfinite(s.rate) and 1.0 <= s.rate <= 1000.0):
            raise ValueError(f"{cfg.path}: ros_control.rate {s.rate} Hz: give 1..1000")
        if not (isinstance(s.link_timeout, (int, float)) and np.isfinite(s.link_timeout) and s.link_timeout > 0.0):
            raise ValueError(f"{cfg.path}: ros_control.link_timeout {s.link_timeout!r} s: give a positive number")
        if not (np.isfinite(s.stop_timeout) and s.stop_timeout > 0.0):
            raise ValueError(f"{cfg.path}: ros_control.stop_timeout {s.stop_timeout} s: give a positive number")
        for key, unit in (("hold_frequency", "Hz"), ("hold_damping", "")):
            x = getattr(s, key)
            if not (isinstance(x, (int, float)) and np.isfinite(x) and x > 0.0):
                raise ValueError(f"{cfg.path}: ros_control.{key} {x!r} {unit}: give a positive number")
        if not (isinstance(s.hold_on_exit, (int, float)) and np.isfinite(s.hold_on_exit) and s.hold_on_exit >= 0.0):
            raise ValueError(f"{cfg.path}: ros_control.hold_on_exit {s.hold_on_exit!r} s: give 0 or more seconds")
        s.joints = list(s.joints) or list(cfg.all_joints)
        if len(s.joints) != len(cfg.all_joints):
            raise ValueError(f"{cfg.path}: ros_control.joints has {len(s.joints)} names for the config's "
                             f"{len(cfg.all_joints)} joints")
        return s

    @property
    def command_topic(self) -> str | None:
        return self.command_topics.get(self.interface)  # (None: a trajectory-only arm streams nothing)

    @property
    def zeroed(self) -> bool:
        """The controller keeps a moving command for ever unless zeros are sent (velocity, effort)."""
        return self.interface in ("velocity", "effort")

    @property
    def silence(self) -> float:
        """s without a command, after a moving one, that means the loop is gone: ``stop_timeout``, but never less
        than the longest a running loop goes without writing and 2 periods more (it writes once a sample, and
        without samples once at the link timeout and half a period, ``RosControlBackend.sample_timeout``, when it
        reports the link lost and brakes; while it catches up after a gap it pokes the bridge): a gap in the arm's
        joint states just short of the link timeout is not a dead loop — on a velocity arm, which runs on meanwhile.
        An effort arm's dead-men hold it from its joint states (``stale_after``): their hold for the rest of such a
        gap is no harm, and 3 periods keep it close to where the loop left it (an effort arm ran 24 mrad past its
        tolerance before the hold with the longer silence)."""
        if self.interface == "velocity":
            return max(self.stop_timeout, self.lost_after + 2.5 / self.rate)
        return max(self.stop_timeout, 3.0 / self.rate)

    @property
    def watchdog_silence(self) -> float:
        """``command_watchdog``'s (it watches the command topic only): the bridge's silence, and on a velocity arm a
        link timeout more — after a gap in the joint states the loop catches up before it writes, poking only the
        bridge meanwhile (up to ~50 cycles at 500 Hz), and a live loop must not be zeroed mid-motion."""
        return self.silence + (self.lost_after if self.interface == "velocity" else 0.0)

    @property
    def lost_after(self) -> float:
        """s without joint states that mean a lost link: ``link_timeout``, but never less than 3 periods."""
        return max(self.link_timeout, 3.0 / self.rate)

    @property
    def stale_after(self) -> float:
        """s after which a joint-state sample is too old to hold an effort arm from (its hold then falls back to zero
        effort): the link timeout and 2.5 periods, no less than ``silence`` (a gap in the arm's joint states short
        of the link timeout must not drop the arm)."""
        return max(self.lost_after + 2.5 / self.rate, self.silence)

    def effort_hold(self, rm) -> EffortHold:
        """The effort arm's dead-man hold on ``rm`` (a RobotModel of its own: the hold runs in its caller's thread)."""
        return EffortHold(rm, rm.cfg.limits.effort, self.hold_frequency, self.hold_damping, self.rate,
                          self.stale_after, self.hold_on_exit)

    @property
    def hold_capped(self) -> bool:
        """``hold_frequency`` is more than the joint-state rate allows (the hold uses less: ``hold_omega``)."""
        return hold_omega(self.hold_frequency, self.hold_damping, self.rate) < 2 * np.pi * self.hold_frequency - 1e-12

    def capabilities(self) -> frozenset:
        caps = {INTERFACES[self.interface]}
        if self.measured_effort:
            caps.add(Capability.EFFORT)
        if self.speed_scaling:
            caps.add(Capability.SPEED_SCALING)
        return frozenset(caps)


class JointStateMap:
    """The arm's ``/joint_states`` names → our joints (config order), one map per distinct name list."""

    def __init__(self, joints):
        self.joints = list(joints)
        self._maps: dict = {}

    def __call__(self, names) -> tuple:
        """(indices into the message per joint of ours (-1: missing), which of ours are missing)."""
        key = tuple(names)
        m = self._maps.get(key)
        if m is None:
            where = {name: k for k, name in enumerate(names)}
            idx = np.array([where.get(j, -1) for j in self.joints])
            m = self._maps[key] = (idx, np.flatnonzero(idx < 0))
        return m


def in_layout(n: int) -> Layout:
    """bridge → loop: ``sample`` counts joint-state messages, ``stamp`` is the last one's time (s: the arm's stamp,
    or the bridge's monotonic clock when the arm stamps nothing); ``fault`` a code the bridge saw (0: none)."""
    return Layout((("sample", 1), ("stamp", 1), ("position", n), ("velocity", n), ("effort", n), ("speed_scaling", 1),
                   ("fault", 1), ("fault_joint", 1), ("traj_seq", 1), ("traj_state", 1), ("traj_time", 1)))


SEND_COMMAND, SEND_LAST = 1.0, 2.0  # out_layout's ``send``: a command; the loop's last word (a stop: nothing follows)


def out_layout(n: int) -> Layout:
    """loop → bridge: the command and what it is (``send``: ``SEND_COMMAND`` or ``SEND_LAST``)."""
    return Layout((("command", 1), ("send", 1), ("position", n), ("velocity", n), ("effort", n)))


def traj_layout(m: int, knots: int) -> Layout:
    """loop → bridge: submission ``seq`` (``count`` knots of the ``m`` arm joints), and ``cancel`` (the seq to
    stop)."""
    return Layout((("seq", 1), ("cancel", 1), ("count", 1), ("order", 1), ("t", knots), ("q", knots * m),
                   ("v", knots * m), ("a", knots * m)))


class RosControlBackend(Backend):
    """The loop's side; ``link``: the bridge's record names and pipe ends (``bridge_names``)."""

    def __init__(self, rm, link: dict):
        super().__init__(rm.cfg.all_joints)
        self.rm = rm
        self.settings = s = RosControlSettings.from_config(rm.cfg, link.get("interface", ""), link.get("rate", 0.0),
                                                           link.get("link_timeout", 0.0))
        self.capabilities = s.capabilities()
        self.period = 1.0 / s.rate
        n = len(self.joint_names)
        self.hw_in = SeqlockRecord(in_layout(n), link["in"])
        self.hw_out = SeqlockRecord(out_layout(n), link["out"])
        self.forwarding = s.interface == "trajectory"
        self.m = rm.cfg.n_arm
        self.traj = SeqlockRecord(traj_layout(self.m, s.max_knots), link["traj"]) if self.forwarding else None
        self._seq = 0.0
        self._failure_told = 0.0  # the submission whose failure the loop was told of (once: a reset clears it)
        self.wake_fd, self.command_fd = int(link["wake_fd"]), int(link["command_fd"])
        os.set_blocking(self.wake_fd, False)
        os.set_blocking(self.command_fd, False)
        self._drain = bytearray(256)
        self._poke = b"\x01"
        self.link_timeout = s.lost_after
        self.catch_up = s.interface == "velocity"  # (it runs on between samples; see _due_for)
        self.lags = s.interface in ("position", "effort")  # (one cycle per sample: what the arm ran beyond, ``lag``;
        # a trajectory-only arm runs its trajectories on its own clock)
        self._cycled = -1.0  # the last sample the loop took
        self._t_arm = math.nan  # the arm's time (its stamps) the loop's cycles have reached
        self._taken = 0.0  # monotonic() when the loop took its last sample
        self._overrun = False  # the loop fell behind a running arm by more than it can catch up: a fault, once
        self._due, self._k = 1, 0  # cycles due for the sample taken, and those run (``read``)
        self.deferred = False  # this cycle catches up: its command is not sent (the last one's is)
        self._prev = np.zeros((3, n))  # the state the last sent cycle ran on ...
        self._new = np.zeros((3, n))  # ... the sample a catch-up runs up to ...
        self._blend = np.zeros((3, n))  # ... and a catch-up cycle's state between them
        self._last_sample = -1.0
        self.monotonic = time.monotonic  # (tests put the arm's clock here)
        self._last_seen = 0.0  # monotonic() of the last new sample
        self.sending = True
        self._zero_once = False
        self._commands = 0

    @classmethod
    def declared(cls, cfg, options: dict) -> frozenset:
        s = RosControlSettings.from_config(cfg, options.get("interface", ""), options.get("rate", 0.0),
                                           options.get("link_timeout", 0.0))
        return s.capabilities()

    # ---- pacing: the arm's joint states are the clock -------------------------------------------------
    clock = True

    def sample_timeout(self, dt: float) -> float:
        """No sample, no cycle: the loop waits for the arm's next joint states until the link timeout has passed
        (the cycle then reports the link lost). Cycles on a stale sample would steer on it: the following window
        holds the reference near the old reading and a velocity arm's P-term pushes on (measured at 200 Hz with
        a 0.1 s gap: -0.8 rad/s commanded, -1.30 reached, then +0.28, reversed); meanwhile the arm's controller
        keeps the last command (a velocity arm its speed until the bridge's ``stop_timeout``)."""
        return self.link_timeout + 0.5 * self.period

    def wait(self, timeout: float) -> int:
        """Block until a joint-state sample the loop has not taken, or ``timeout`` s (0). The cycles it is due
        (``_due_for``): one, or on an arm that ran on meanwhile the periods it is ahead of the loop."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0.0:
                break
            try:
                r, _, _ = select.select((self.wake_fd,), (), (), left)
            except InterruptedError:
                continue
            if not r:
                break
            try:
                if os.readv(self.wake_fd, (self._drain,)) == 0:  # the bridge's end is gone (the node ends)
                    time.sleep(left)
                    break
            except BlockingIOError:
                pass
            rec = self.hw_in
            rec.read()
            o = rec.local
            if o.sample[0] == self._cycled:
                continue  # (a poke for a sample already taken)
            self._cycled = o.sample[0]
            self._due, self._k = self._due_for(o.stamp[0]), 0
            if self._due > 1:
                self._new[0], self._new[1], self._new[2] = o.position, o.velocity, o.effort
                self._poke_bridge()  # (the bridge's silence is not the catch-up's computing: it is alive)
            return self._due
        self._due, self._k = 1, 0
        return 0

    def _due_for(self, stamp: float) -> int:
        """The cycles due for a sample stamped ``stamp``. A position arm's controller held its last target
        meanwhile, an effort arm's PD law holds the reference it was left at: one (caught up, an effort arm was
        found off its rest pose by the dead-man tests); the periods the arm ran beyond it count in ``lag`` (the
        loop's trajectories make them up, within the joints' limits). A velocity arm ran on with its last command: the periods
        its time is ahead of the loop's (``_t_arm``, which the cycles run advance: stamp jitter does not add up), at
        most as many as the loop's own clock saw pass (a step of the arm's clock is no time to catch up: resync),
        so that its time keeps the arm's (a reference left behind an arm running on would be pulled back:
        reversed) — rospy hands the bridge only the newest of messages that came together, so pokes do not count
        them. One for the first sample (the loop's time starts there), after a gap longer than the link timeout,
        or for stamps that jumped back; the gap is then a fault (``read``: link lost, as the timeout cycles of a
        silent link report it; also when the loop process stalled while samples came)."""
        now = self.monotonic()
        elapsed, self._taken = now - self._taken, now
        t, p = self._t_arm, self.period
        ahead = stamp - t
        window = self.sample_timeout(p)
        if not self.catch_up or not (abs(ahead) <= window):
            self._overrun = self.catch_up and ahead > window and elapsed > window
            self._t_arm = stamp
            if self.lags and abs(ahead) <= window:
                self.add_lag(ahead, elapsed, self.link_timeout)
            return 1
        due, most = int(round(ahead / p)), int(round(elapsed / p)) + 1
        if due > most:  # the arm's clock stepped (or its last stamps came late): as much as passed, and resync
            self._t_arm = stamp
            return most
        due = max(1, due)
        self._t_arm = t + due * p
        return due

    def connect(self) -> None:
        """Wait for the arm's first joint states (nothing is known of it before)."""
        end = time.monotonic() + self.settings.startup_timeout
        while True:
            self.hw_in.read()
            if self.hw_in.local.sample[0] > 0:
                break
            if time.monotonic() > end:
                raise RuntimeError(f"no joint states from the arm on {self.settings.joint_states} within "
                                   f"{self.settings.startup_timeout:g} s (is its ros_control up?)")
            self.wait(0.1)
        o = self.hw_in.local
        # the first sample the loop takes resyncs (its time starts there: the arm ran on while the loop was built)
        self._cycled, self._t_arm, self._taken = o.sample[0], math.nan, self.monotonic()
        self._due, self._k = 1, 0  # (pokes left for samples up to this one make no cycle due: ``wait``)
        self._prev[0], self._prev[1], self._prev[2] = o.position, o.velocity, o.effort
        self._last_seen = self.monotonic()

    def read(self, state: HardwareState) -> None:
        rec = self.hw_in
        rec.read()
        o = rec.local
        now = self.monotonic()
        if o.sample[0] != self._last_sample:
            self._last_sample = o.sample[0]
            self._last_seen = now
        k, n = self._k, self._due
        self._k = k + 1
        self.deferred = k < n - 1
        if self.deferred:  # a catch-up cycle: the arm as it was between the last sample sent on and the new one
            b = self._blend
            np.subtract(self._new, self._prev, out=b)
            b *= (k + 1) / n
            b += self._prev
            state.block[:] = b
        else:
            state.block[0] = o.position
            state.block[1] = o.velocity
            state.block[2] = o.effort
            self._prev[:] = state.block
        state.speed_scaling = o.speed_scaling[0]
        if o.fault[0]:
            state.fault, state.fault_joint = int(o.fault[0]), int(o.fault_joint[0])
        elif self._seq and o.traj_seq[0] == self._seq and o.traj_state[0] == PROGRESS_FAILED \
                and self._failure_told != self._seq:  # the arm's trajectory controller failed: one fault per goal
            self._failure_told = self._seq
            state.fault, state.fault_joint = FAULT_CONTROLLER_ERROR, -1
        elif now - self._last_seen > self.link_timeout or self._overrun:
            self._overrun = False
            state.fault, state.fault_joint = FAULT_LINK_LOST, -1
        else:
            state.fault = 0

    def write(self, command: HardwareCommand) -> None:
        if self.forwarding or (self.deferred and not self._zero_once) or not (self.sending or self._zero_once):
            return  # (a brake during a catch-up goes at once)
        o = self.hw_out.local
        self._commands += 1
        o.command[0] = self._commands
        o.send[0] = SEND_COMMAND
        o.position[:] = command.position
        if self._zero_once:  # a velocity arm's brakes: stand still, then nothing more
            o.velocity[:] = 0.0
            self._zero_once = False
        else:
            o.velocity[:] = command.velocity
        o.effort[:] = command.effort
        self.hw_out.publish_local()
        self._poke_bridge()

    def enable(self) -> None:
        self.sending = True

    def brake(self) -> None:
        """Send nothing more (an effort arm's brakes are the loop's torques: it keeps streaming; a velocity arm
        gets zeros with the next ``write``); a trajectory the arm is running is stopped."""
        if Capability.TORQUE in self.capabilities:
            return
        self.sending = False
        self._zero_once = Capability.VELOCITY in self.capabilities
        if self.forwarding:
            self.cancel()

    # ---- trajectory-only: whole trajectories to the arm's FollowJointTrajectory controller ----------------
    def submit(self, t, q, v, a, order: int = 5) -> bool:
        """Hand the arm a trajectory (times from now; arm joints in config order), to be interpolated as
        ``order`` says (1 linear, 3 cubic, 5 quintic: the fields sent are those that make a
        joint_trajectory_controller pick that polynomial). False: too many knots, or not enabled."""
        k = len(t)
        if not self.forwarding or not self.sending or k > self.settings.max_knots:
            return False
        o = self.traj.local
        m = self.m
        self._seq += 1.0
        o.seq[0], o.count[0], o.order[0] = self._seq, k, order
        o.t[:k] = t
        o.q[:k * m] = np.ravel(q)
        o.v[:k * m] = np.ravel(v)
        o.a[:k * m] = np.ravel(a)
        self.traj.publish_local()
        self._poke_bridge()
        return True

    def cancel(self) -> None:
        """Stop the submitted trajectory (the arm's controller stops it and holds)."""
        if not self.forwarding or not self._seq or self.traj.local.cancel[0] == self._seq:
            return
        self.traj.local.cancel[0] = self._seq
        self.traj.publish_local()
        self._poke_bridge()

    def progress(self) -> tuple[int, float]:
        """(TRAJ_* state of the last submission as the bridge last saw it, seconds along it by the arm's
        controller's feedback)."""
        o = self.hw_in.local
        if not self._seq or o.traj_seq[0] != self._seq:
            return PROGRESS_NONE, 0.0
        return int(o.traj_state[0]), float(o.traj_time[0])

    def _poke_bridge(self) -> None:
        try:
            os.write(self.command_fd, self._poke)
        except (BlockingIOError, BrokenPipeError):
            pass

    def close(self) -> None:
        """The loop ends: its last word to the arm is a stop (``last_word``), a trajectory the arm runs is
        cancelled; then the records are released."""
        self.brake()
        self.last_word()
        for rec in (self.hw_in, self.hw_out, self.traj):
            if rec is not None:
                rec.close()

    def last_word(self) -> None:
        """Send a stop now, with no ``write`` to follow: zero velocity; on an effort arm gravity compensation at the
        last joint states' pose (zero effort would let the arm fall: the bridge then holds it, see the module's
        doc; zeros if that pose gives no finite torque); or the last position again (its controller holds it; a
        position arm never sent one is left alone: there is no position to repeat)."""
        if self.forwarding or (not self._commands and not self.settings.zeroed):
            return
        o = self.hw_out.local
        self._commands += 1
        o.command[0] = self._commands
        o.send[0] = SEND_LAST
        o.velocity[:] = 0.0
        o.effort[:] = 0.0
        if self.settings.interface == "effort":
            self.hw_in.read()
            q = self.hw_in.local.position
            if self.hw_in.local.sample[0] > 0 and np.isfinite(q).all():
                tau = np.clip(self.rm.gravity(q), -self.rm.cfg.limits.effort, self.rm.cfg.limits.effort)
                if np.isfinite(tau).all():
                    o.effort[:] = tau
        self.hw_out.publish_local()
        self._poke_bridge()
