"""One cycle of the robot, as a pipeline — the same function in the realtime process and in tests.

    read backend → safety chain on the state → intake (control record, ring: commands, events, trajectories)
    → robot state → arbiter (brakes | override slots | hold | POSITION | VELOCITY | TORQUE |
      TRAJECTORY stream | whole trajectory; head hold) → safety chain on the setpoint
    → control law (chosen by the backend adapter) → safety chain on the command
    → backend write → state record (+ results and faults on the return ring)

Rules (contract §2.1–2.2): only the active mode's arrays are read and joints a command does not
name keep their targets; streaming modes revert to a smooth hold when no command arrives within
``command_timeout`` (clamped to [0, 1] s); TORQUE adds gravity compensation unless
``suppress_gravity_compensation`` keeps arriving; disabled / stopped / E-stopped → brakes (no
command executes); any fault stops the robot (error + stopped) until reset, and the cycle that
faults already holds the measured position instead of the faulty setpoint.
"""
from __future__ import annotations

import math
import numpy as np

from ..config import RobotConfig
from ..control.interaction import CartesianAdmittance, CartesianImpedance, InteractionLimits, InteractionParams
from ..data.codes import (ARM_RESULT_ENABLED, ARM_WHILE_DISABLED, POSITION_MODE, R_COLLISION, R_FAULT, R_NONE,
                          R_SAFETY_STOP, R_ZERO_G, TORQUE_MODE, TRAJECTORY_MODE, TRAJ_RUNNING, TRAJ_STOPPING,
                          VELOCITY_MODE)
from ..data.setpoint import Setpoint
from ..data.state import Capability, HardwareState
from ..hardware.base import Backend
from ..model.robot_model import RobotModel
from ..safety.base import SafetyChain, SafetyContext
from ..safety.collision_avoidance import CollisionAvoidance
from ..safety.collision_detection import CollisionDetection
from ..safety.finite_guard import FiniteGuard
from ..safety.following_error import FollowingError
from ..safety.joint_limits import JointLimits, relaxed_range
from ..safety.robot_state import ESTOP_BUTTON_PRESSED, RobotStateMachine
from ..safety.torque_guard import TorqueGuard
from ..sources.head import HeadSource, head_cancellation
from ..sources.hold import HoldSource, SafetyHold
from ..sources.position import PositionSource
from ..sources.stream import StreamSource
from ..sources.torque import TorqueSource
from ..sources.trajectory import TrajectorySource
from ..sources.velocity import VelocitySource
from ..sources.zero_g import ZeroGSource
from .adapter import make_adapter
from .arbiter import Arbiter
from .channel import TO_LOOP_WORDS, Channel
from .commands import bypass_tolerance
from .forwarding import Forwarder
from .lag import LagCatchUp
from .layouts import (MSG_ARM_REQUEST, MSG_ARM_RESULT, MSG_BYPASS, MSG_COMMAND, MSG_CUFF, MSG_ENABLE, MSG_ESTOP,
                      MSG_FAULT, MSG_HEAD, MSG_INTERACTION, MSG_RESET, MSG_SAFETY_ESTOP, MSG_SIM_FAULT, MSG_SIM_WRENCH,
                      MSG_STOP, MSG_SUPPRESS, MSG_TRAJ_CANCEL, MSG_TRAJ_EXECUTE, MSG_TRAJ_RESULT, MSG_TRAJ_SCALING,
                      SUPPRESS_COLLISION_AVOIDANCE, SUPPRESS_CONTACT_SAFETY, SUPPRESS_CUFF, SUPPRESS_GRAVITY,
                      SUPPRESS_KEYS)

TIMEOUT_RANGE = (0.0, 1.0)
# rad: a safety-chain cut this large while an arm's force mode moves axes of its own stops that (``_rebase_admitted``;
# smaller ones are the chain's shaping of an arm in motion)
FORCE_MODE_CUT = 0.01
# scalar blocks of the state record (layouts.state_layout), in record order
_HEAD_FIELDS = ("time", "cycle", "mode", "source")
_FLAG_FIELDS = ("enabled", "stopped", "error", "estop_button", "estop_source", "ready", "homed", "gravity_suppressed",
                "speed_scaling", "fault_code", "fault_joint", "faults",
                "traj_id", "traj_state", "traj_time", "traj_duration", "traj_segment", "traj_error", "traj_scaling",
                "commands", "commands_superseded", "commands_ignored", "timeouts",
                "limit_interventions", "following_interventions", "torque_guard_interventions", "clamped_effort")


def build_safety_chain(cfg: RobotConfig, dt: float, rm: RobotModel, ctx: SafetyContext, torque: bool,
                       effort: bool) -> SafetyChain:
    """The plugins named in ``control.safety_chain`` (config), in that order; ``torque``: the
    backend takes joint torques (repulsive avoidance torques); ``effort``: it measures them
    (collision detection is left out of the chain without)."""
    lim, c, n = cfg.limits, cfg.control, len(cfg.all_joints)
    fe = c.get("following_error", {})
    ca = c.get("collision_avoidance", {})
    cd = c.get("collision_detection", {})
    factories = {
        "finite_guard": lambda: FiniteGuard(n, lim.effort),
        "following_error": lambda: FollowingError(n, fe.get("window", 0.1), fe.get("fault_window", 0.5),
                                                  lim.velocity, lim.accel),
        "joint_limits": lambda: JointLimits(lim.lower, lim.upper, lim.velocity, lim.accel, dt),
        "torque_guard": lambda: TorqueGuard(lim.lower, lim.upper, lim.velocity, lim.effort),
        "collision_avoidance": lambda: CollisionAvoidance(
            rm, ctx, dt, lim.velocity, float(ca.get("padding", 0.01)), float(ca.get("safety_zone", 0.05)),
            float(ca.get("block_velocity_scaling", 1.5)), bool(ca.get("directional", True)),
            float(ca.get("slack", 0.05)), float(ca.get("repulsion_stiffness", 300.0)),
            float(ca.get("repulsion_damping", 10.0)), torque, float(ca.get("tracking_margin", 0.006)),
            float(ca.get("closing_decel", 5.0)), float(ca.get("braking_band", 0.05))),
        "collision_detection": lambda: CollisionDetection(
            rm, ctx, dt, cfg.tips[0], cfg.n_arm, cd["impact"], cd["squish"], float(cd.get("force", 100.0)),
            float(cd.get("torque", 15.0)), float(cd.get("observer_gain", 100.0)), float(cd.get("impact_filter", 0.05)),
            float(cd.get("impact_hold", 0.5)), float(cd.get("squish_hold", 0.1)), float(cd.get("wrench_hold", 0.5))),
    }
    names = c.get("safety_chain", ["finite_guard", "joint_limits", "following_error", "torque_guard"])
    unknown = [x for x in names if x not in factories]
    if unknown:
        raise ValueError(f"control.safety_chain: unknown plugins {unknown} (known: {sorted(factories)})")
    if "finite_guard" not in names:
        raise ValueError("control.safety_chain must contain finite_guard")
    return SafetyChain([factories[x]() for x in names if effort or x != "collision_detection"])


def interaction_limits(cfg: RobotConfig) -> InteractionLimits:
    """``control.interaction``; its ``spring_wrench`` defaults to collision detection's over-wrench thresholds
    (the impedance's own push never reaches what would count as a collision)."""
    c = dict(cfg.control.get("interaction") or {})
    cd = cfg.control.get("collision_detection") or {}
    if "spring_wrench" not in c and cd:
        c["spring_wrench"] = (float(cd.get("force", 100.0)), float(cd.get("torque", 15.0)))
    return InteractionLimits.from_config(c)


class LoopCycle:
    def __init__(self, cfg: RobotConfig, rm: RobotModel, backend: Backend, channel: Channel,
                 start_enabled: bool = True):
        self.cfg, self.rm, self.backend, self.ch = cfg, rm, backend, channel
        self.dt = dt = backend.period
        n = self.n = len(cfg.all_joints)
        na = cfg.n_arm
        lim = cfg.limits
        vmax, amax = lim.velocity, lim.accel
        # the position range in force: the sources hold views of these and the safety bypass widens
        # them in place (_set_range)
        self.lower, self.upper = lo, hi = np.array(lim.lower, float), np.array(lim.upper, float)
        self.cfg_range = lo.copy(), hi.copy()
        self._relaxed = relaxed_range(lo, hi, bypass_tolerance(cfg))
        self._narrowing = False  # after a bypass or with the arm beyond a limit: the range closes in behind it
        self._t_lo, self._t_hi = np.zeros(n), np.zeros(n)
        self._beyond, self._beyond2 = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        arm, everything = slice(0, na), slice(0, n)
        self.hw = HardwareState.zeros(n)
        self.sp = Setpoint.zeros(n)
        self.adapter = make_adapter(backend, cfg, rm, dt)
        self._backend_scales = backend.has(Capability.SPEED_SCALING)
        self.law = self.adapter.law
        self.ctx = SafetyContext()
        self.chain = build_safety_chain(cfg, dt, rm, self.ctx, self.adapter.supports(Capability.TORQUE),
                                        self.adapter.supports(Capability.EFFORT))
        self.following = self.chain.get("following_error")
        self.robot = RobotStateMachine(enabled=start_enabled)
        sup = self.adapter.supports
        # an arm without joint torques brakes itself (Backend.brake): under the brakes the loop's setpoint follows
        # where it is, so whatever moved it meanwhile, nothing jumps when it is enabled again
        self._own_brakes = not sup(Capability.TORQUE) or backend.holds_itself
        # sources
        self.brake = HoldSource(everything, lo, hi, vmax, amax, dt, stop="dead" if self._own_brakes else "brakes")
        self.hold = HoldSource(arm, lo, hi, vmax, amax, dt)
        head = self.head = None
        if n > na:  # the head pan: its own source, HeadPanCommand targets
            head = self.head = HeadSource(slice(na, n), lo, hi, vmax, amax, dt, *head_cancellation(rm, cfg))
        self.position = PositionSource(arm, lo, hi, vmax, amax, dt)
        self.velocity = VelocitySource(arm, lo, hi, vmax, amax, dt)
        self.torque = TorqueSource(arm, lim.effort, HoldSource(arm, lo, hi, vmax, amax, dt))
        self.stream = StreamSource(arm, amax)
        c = cfg.control
        self.trajectory = TrajectorySource(arm, vmax, amax, dt, int(c.get("max_trajectory_knots", 10000)),
                                           float(c.get("trajectory_start_tolerance", 0.05)))
        self.by_mode = {POSITION_MODE: self.position, VELOCITY_MODE: self.velocity, TORQUE_MODE: self.torque,
                        TRAJECTORY_MODE: self.stream}
        self.arbiter = Arbiter(self.brake, self.hold, head)
        # overrides, highest priority first: the safety E-stop latch, a detected collision, the cuff's zero-G
        self.estop_hold = SafetyHold(arm, lo, hi, vmax, amax, dt, "brakes")
        self.collision_hold = SafetyHold(arm, lo, hi, vmax, amax, dt, "dead")
        self.zero_g = ZeroGSource(arm, self.adapter.supports(Capability.TORQUE))
        self.arbiter.overrides = [self.estop_hold, self.collision_hold, self.zero_g]
        self._measured_handover = (self.brake, self.estop_hold, self.collision_hold, self.zero_g)
        self._brakes = (self.brake, self.estop_hold)  # the holds that brake from the measured state
        # interaction control: latched parameters (None: off); it drives the arm joints around the reference of
        # whichever source is active, except under the brakes, the safety holds, zero-G and TORQUE_MODE
        self.interaction: InteractionParams | None = None
        # torque arms: impedance (joint torques); arms that take positions and measure the endpoint wrench:
        # admittance; others: none (the listener refuses the command)
        ilim = interaction_limits(cfg)
        self.impedance = self.admittance = None
        if sup(Capability.TORQUE):
            self.impedance = CartesianImpedance(rm, cfg.tips[0], arm, ilim, dt)
            self._ref_window = ilim.reference_window
            self._ref_dev, self._ref_out = np.zeros(na), np.zeros(na, dtype=bool)
        elif sup(Capability.WRENCH) and (sup(Capability.POSITION) or sup(Capability.VELOCITY)):
            self.admittance = CartesianAdmittance(rm, cfg.tips[0], arm, ilim, dt, self.lower[arm], self.upper[arm])
            n_arm = self.admittance.n
            self._source_q, self._source_v, self._cut, self._kept_q, self._kept_v = (np.zeros(n_arm) for _ in range(5))
        self.interaction_law = self.impedance or self.admittance
        self._force_mode, self._freedrive = sup(Capability.FORCE_MODE), sup(Capability.FREEDRIVE)
        self._cartesian_on = False  # the command's force-mode / freedrive rows are set
        self._no_interaction = (*self._measured_handover, self.torque)
        self._torque_loop = self.impedance is not None and sup(Capability.EFFORT)  # link-side torques measured
        self.lag = LagCatchUp(backend, self.trajectory, dt)  # (time a clock backend's cycles lost: loop/lag.py)
        # a trajectory-only arm is handed each whole trajectory the trajectory source starts (loop/forwarding.py)
        self.forwarder = Forwarder(backend, self.trajectory, self.position) if sup(Capability.TRAJECTORY_ONLY) \
            else None
        self._backend_active = None  # the first cycle tells the backend the robot's state
        self._arm_ready = True  # Backend.ready(): the arm executes commands (an arm being powered up does not)
        # the E-stop button is pressed while either is: the robot's own (/robot/sim/set_estop) or the arm's hardware
        # E-stop; released when both are
        self._user_estop = False
        self._hw_estop = False
        self.interaction_engaged = False
        self.interaction_failures = 0  # cycles whose interaction torque was not finite (the arm held instead)
        self._source_ids = {id(s): k for k, s in enumerate((self.brake, self.hold, self.position, self.velocity,
                                                             self.torque, self.stream, self.trajectory,
                                                             self.estop_hold, self.collision_hold, self.zero_g))}
        self._mode_of = {id(s): m for m, s in self.by_mode.items()}
        # intake buffers (preallocated views onto one message buffer)
        self._msg = np.zeros(TO_LOOP_WORDS)
        m = self._msg
        self._c_mask, self._c_pos = m[1:1 + n], m[1 + n:1 + 2 * n]
        self._c_vel, self._c_acc, self._c_eff = m[1 + 2 * n:1 + 3 * n], m[1 + 3 * n:1 + 4 * n], m[1 + 4 * n:1 + 5 * n]
        self._mask = np.zeros(n, dtype=bool)
        self._out = np.zeros(4)
        # the last two arrivals per suppression topic: one holds only while they come faster than 5 Hz
        self.suppress_time = [-1e9] * len(SUPPRESS_KEYS)
        self.suppress_prev = [-2e9] * len(SUPPRESS_KEYS)
        self.bypass_until = -1.0  # loop time at which the safety bypass ends
        self._bypass_was = False
        self._zero_g_was = False
        self.safety_changed = False  # a detection, E-stop or bypass began or ended: publish the safety record now
        self.detection = self.chain.get("collision_detection")
        self.avoidance = self.chain.get("collision_avoidance")
        self.suppress_timeout = float(c.get("suppress_timeout", 0.2))
        self.default_timeout = float(c.get("command_timeout", 0.2))  # if the control record holds a NaN
        self.last_command = 0.0
        self.now = 0.0
        self.initialised = False
        self.fault_code = 0
        self.fault_joint = -1
        self.counts = dict(commands=0, superseded=0, ignored=0, timeouts=0, faults=0)
        o = channel.state.local
        off = channel.state.layout.offsets()
        p0, c0 = off["position"][0], off["cmd_position"][0]
        assert off["effort"][0] == p0 + 2 * n and off["cmd_acceleration"][0] == c0 + 2 * n
        self._o_measured = o.buf[p0:p0 + 3 * n].reshape(3, n)  # position, velocity, effort
        self._o_setpoint = o.buf[c0:c0 + 3 * n].reshape(3, n)  # cmd_position, cmd_velocity, cmd_acceleration
        d0 = off["traj_position"][0]
        assert off["traj_acceleration"][0] == d0 + 2 * n
        self._o_traj = o.buf[d0:d0 + 3 * n].reshape(3, n)[:, arm]  # the trajectory's sample (arm joints)
        self._changed = np.zeros(n, dtype=bool)
        # the scalar fields, written with one tuple assignment per block instead of ~30 separate stores
        for block in (_HEAD_FIELDS, _FLAG_FIELDS):  # each block: consecutive scalars in exactly this order
            if any(off[f] != (off[block[0]][0] + k, 1) for k, f in enumerate(block)):
                raise RuntimeError("the state record's layout and LoopCycle._publish disagree")
        self._o_head = o.buf[off["time"][0]:off["time"][0] + len(_HEAD_FIELDS)]
        self._o_flags = o.buf[off["enabled"][0]:off["enabled"][0] + len(_FLAG_FIELDS)]
        absent = _Absent()
        self._limits = self.chain.get("joint_limits") or absent
        self._following = self.following or absent
        self._torque_guard = self.chain.get("torque_guard") or absent
        self._cycles = 0

    # ---- intake -------------------------------------------------------------------------
    def suppressed(self, key: int) -> bool:
        """True while the topic's messages keep arriving at more than 1/``suppress_timeout`` (5 Hz): the last
        two came less than the timeout apart and the last less than the timeout ago (a single message, or a
        slower stream, suppresses nothing)."""
        last = self.suppress_time[key]
        return self.now - last < self.suppress_timeout and last - self.suppress_prev[key] < self.suppress_timeout

    @property
    def robot_wanted(self) -> bool:
        """Enabled and not stopped: what the backend is told (``enable`` / ``disable`` / ``stop``)."""
        return self.robot.enabled and not self.robot.stopped

    @property
    def robot_active(self) -> bool:
        """Enabled, not stopped, and the arm ready for commands (an arm the backend is still powering up or
        starting its program on is not: the robot reports itself enabled once it is)."""
        return self.robot.enabled and not self.robot.stopped and self._arm_ready

    def _held_by(self) -> int:
        """The override holding the arm now, as a trajectory's reason (R_NONE: none): the safety E-stop latch,
        the collision hold, zero-G."""
        if self.estop_hold.on:
            return R_SAFETY_STOP
        if self.collision_hold.on:
            return R_COLLISION
        if self.zero_g.engaged():
            return R_ZERO_G
        return R_NONE

    def _command(self, now: float) -> None:
        if not self.robot_active or self._held_by():
            # disabled, safety E-stop, collision hold, zero-G: commands are not executed, and none is kept for
            # when the hold ends (a streaming client's next command after it resumes its mode)
            self.counts["ignored"] += 1
            return
        src = self.by_mode.get(int(self._msg[0]))
        if src is None or not self.adapter.supports(src.requires):
            self.counts["ignored"] += 1
            return
        mask = self._mask
        np.greater(self._c_mask, 0.5, out=mask)
        self.arbiter.select(src, self.sp, self.hw, now)
        if src is self.position:
            src.accept(mask, self._c_pos)
        elif src is self.velocity:
            src.accept(mask, self._c_vel)
        elif src is self.torque:
            src.accept(mask, self._c_eff)
        else:
            src.accept(mask, self._c_pos, self._c_vel, self._c_acc, now)
        self.last_command = now
        self.counts["commands"] += 1

    def _execute_trajectory(self, k_words: int, now: float) -> None:
        m, n = self._msg, self.n
        traj_id, order, k, scaling, tracking, late = m[0], int(m[1]), int(m[2]), m[3], int(m[4]), m[5]
        if 6 + 2 * n + k + 3 * k * n != k_words:
            self.trajectory.results.append((traj_id, 5, 2, -1))  # REJECTED, R_INVALID (malformed)
            return
        o = 6
        mask = m[o:o + n] > 0.5
        o += n
        kp = m[o:o + n]
        o += n
        t = m[o:o + k]
        o += k
        q = m[o:o + k * n].reshape(k, n)
        o += k * n
        v = m[o:o + k * n].reshape(k, n)
        o += k * n
        a = m[o:o + k * n].reshape(k, n)
        held = self._held_by()
        if held and self.robot_active:  # (a Sawyer refuses motion while an override holds the arm: nothing
            self.trajectory.refuse(traj_id, held)  # is kept to start by itself when the hold ends)
            return
        if self.trajectory.prepare(traj_id, order, mask, t, q, v, a, self.sp, self.robot_active, scaling, tracking,
                                   kp, late):
            self.arbiter.select(self.trajectory, self.sp, self.hw, now)

    def _intake(self, now: float) -> None:
        ch = self.ch
        ch.control.read()
        self.position.set_ratio(ch.control.local.speed_ratio[0])
        ring, msg, robot = ch.to_loop, self._msg, self.robot
        was_active = self.robot_active
        n_cmd = 0
        while True:
            k = ring.pop(msg)
            if k < 0:
                break
            kind = ring.kind
            if kind == MSG_COMMAND:
                self._command(now)
                n_cmd += 1
            elif kind == MSG_SUPPRESS:
                key = int(msg[0])
                self.suppress_prev[key], self.suppress_time[key] = self.suppress_time[key], now
            elif kind == MSG_ENABLE:
                robot.set_enable(msg[0] > 0.5)
            elif kind == MSG_STOP:
                robot.stop()
            elif kind == MSG_RESET:
                if robot.reset():
                    self.fault_code, self.fault_joint = 0, -1
                    self.backend.reset()
            elif kind == MSG_ESTOP:
                self._estop_button(hw=self._hw_estop, user=msg[0] > 0.5)
            elif kind == MSG_TRAJ_EXECUTE:
                self._execute_trajectory(k, now)
            elif kind == MSG_TRAJ_CANCEL:
                self.trajectory.cancel(msg[0])
            elif kind == MSG_TRAJ_SCALING:
                self.trajectory.set_scaling(msg[0], msg[1])
            elif kind == MSG_SAFETY_ESTOP:
                self._safety_estop(msg[0] > 0.5, now)
            elif kind == MSG_CUFF:
                self.zero_g.squeezed = msg[0] > 0.5
            elif kind == MSG_HEAD:  # (not while the brakes or the safety E-stop latch hold: the client re-sends
                if self.head is not None and self.robot_active and not self.estop_hold.on:  # until it is there)
                    self.head.command(msg[0], msg[1], int(msg[2]))
            elif kind == MSG_ARM_REQUEST:
                if int(msg[1]) in ARM_WHILE_DISABLED and self.robot_wanted:  # (the controller would stop
                    self.backend.answers.append((msg[0], float(ARM_RESULT_ENABLED), 0.0))  # taking our stream)
                else:
                    self.backend.request(msg[0], int(msg[1]), msg[2:k].copy())  # (rare: a copy is fine)
            elif kind == MSG_INTERACTION:
                self._interaction_command(k, now)
            elif kind == MSG_SIM_WRENCH:  # (rare: the viewer's mouse, a test's push)
                self.backend.push(int(msg[0]), msg[2:8], msg[1])
            elif kind == MSG_SIM_FAULT:
                self.backend.simulate_fault(int(msg[0]), msg[1])
            elif kind == MSG_BYPASS:
                self.bypass_until = now + msg[0] if msg[0] > 0.0 else -1.0
                self._bypass_edge()
        if n_cmd > 1:
            self.counts["superseded"] += n_cmd - 1
        if self.robot_active != was_active:
            self.law.reset()  # the integral restarts with the robot (switches between sources are bumpless)
        if not self.robot_active:
            self.interaction = None  # (stopped, disabled, faulted, E-stopped: it ends; a new command begins it again)

    def _interaction_command(self, k: int, now: float) -> None:
        """A new InteractionControlCommand (the SDK re-sends the same one at 10 Hz: only changes act). Turning
        it on, changing its parameters (unless ``disable_reference_resetting``) and turning it off put the
        reference where the arm is: a hold there (a running trajectory ends; a streaming client's next
        command starts from there)."""
        p = InteractionParams(self._msg[:k], self.cfg.n_arm)
        old = self.interaction
        if p.same_as(old) or (old is None and not p.active):
            return
        if self.interaction_law is None:
            self.counts["ignored"] += 1  # (the listener refuses it on arms that can do neither)
            return
        if p.active and (not self.robot_active or self.estop_hold.on or self.collision_hold.on):
            self.counts["ignored"] += 1  # (stopped, disabled, faulted, held: interaction ends and cannot begin)
            return
        self.interaction = p if p.active else None
        if p.active:
            self.interaction_law.set(p)
        reset = not p.active or not p.disable_reset or old is None
        if reset:
            self._hold_here(now)
        if p.active and self.interaction_engaged and self.admittance is not None:
            self.admittance.reference_moved(reset)  # the offset is recomputed against the (new) reference

    def _hold_here(self, now: float) -> None:
        """The arm's reference becomes its measured position (a jerk-limited stop from its measured velocity)."""
        if not self.robot_active:
            return
        sp, hw, arb = self.sp, self.hw, self.arbiter
        sp.torque_only[self.hold.idx] = True  # (sources take over from the measured state of torque-driven joints)
        if arb.active is self.hold:
            self.hold.activate(sp, hw, now)
        else:
            arb.select(self.hold, sp, hw, now)

    def _interact(self, active: bool) -> None:
        """Interaction control on the arm joints of this cycle's setpoint (its q, v are the reference)."""
        engaged = active and self.interaction is not None and self.arbiter.active not in self._no_interaction
        det = self.detection
        if engaged != self.interaction_engaged:
            self.interaction_engaged = engaged
            self.law.reset()
            if engaged:
                if self.impedance is not None:
                    self.impedance.start()
                else:
                    self.admittance.start(self.hw.position[self.admittance.arm])
            else:
                self.chain.reset(self.hw, self.sp)  # the shaping restarts from this setpoint, not the one before
                if det is not None:
                    det.allow[:] = 0.0
                    det.allow_force = det.allow_torque = 0.0
        if self._cartesian_on:  # (the arm's force mode / freedrive: asked anew each cycle they stay on)
            self.adapter.command.cartesian[:] = 0.0
            self._cartesian_on = False
        if not engaged:
            return
        sp, hw, imp = self.sp, self.hw, self.impedance
        if imp is None:
            self._admit()
            return
        i = imp.arm
        if self.arbiter.active is not self.hold:
            self._bound_reference(i)
        if self._torque_loop:
            imp.compensate(hw.effort[i])
        if not imp.compute(hw.position, hw.velocity, sp.q, sp.v):
            self.interaction_failures += 1  # (a singular configuration): position control holds this cycle
            return
        np.add(imp.tau, imp.comp, out=sp.tau[i])
        sp.torque_only[i] = True
        sp.fixed[i] = False
        if det is not None:  # what the controller pushes with, within its bound, is not a collision (the next
            w = imp.F_world  # cycle's detection)
            r = imp.bound(w)
            np.abs(imp.tau, out=det.allow[i])
            det.allow[i] *= r
            det.allow_force = r * math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
            det.allow_torque = r * math.sqrt(w[3] * w[3] + w[4] * w[4] + w[5] * w[5])

    def _bound_reference(self, i: slice) -> None:
        """A moving reference under impedance (a stream, a POSITION target, a trajectory) is kept within
        ``interaction.reference_window`` of each measured joint, and the source pulled back with it: the safety
        chain's own window does not see joints driven by torque, and a reference running on against an obstacle
        would wind up the spring (the force is bounded apart, by ``spring_wrench``)."""
        sp, q, out, w = self.sp, self.hw.position[i], self._ref_out, self._ref_window
        dev = self._ref_dev
        np.subtract(sp.q[i], q, out=dev)
        np.abs(dev, out=dev)
        np.greater(dev, w, out=out)
        if not np.count_nonzero(out):
            return
        np.subtract(sp.q[i], q, out=dev)
        np.clip(dev, -w, w, out=dev)
        dev += q
        np.copyto(sp.q[i], dev, where=out)
        np.copyto(sp.v[i], 0.0, where=out)
        np.copyto(sp.a[i], 0.0, where=out)
        self.arbiter.active.rebase(sp)

    def _admit(self) -> None:
        """Admittance (a position arm): the arm joints' setpoint becomes the admittance's joint command. An arm
        with freedrive carries a constrained zero-G itself (the setpoint follows it), one with force mode
        regulates the FORCE axes itself (``CartesianAdmittance.hand_force``)."""
        sp, hw, ad = self.sp, self.hw, self.admittance
        cmd = self.adapter.command
        if ad.free is not None and self._freedrive:
            ad.start(hw.position[ad.arm])  # (at rest where the arm is: nothing jumps when freedrive ends)
            ad.hand_freedrive(cmd.free_axes, cmd.free_frame)
            self._cartesian_on = True
            sp.track(ad.arm, ad.q_cmd, ad.v_cmd, 0.0)
            return
        if not ad.compute(hw.position, hw.wrench, sp.q):
            self.interaction_failures += 1  # (a bad wrench, a singular step): the last command holds
            ad.hold()
        if self._force_mode:  # (after a failed step too: as last cycle, not a stop and a start)
            ad.hand_force(cmd.force_axes, cmd.force_wrench, cmd.force_frame)
            self._cartesian_on = True
        self._source_q[:] = sp.q[ad.arm]  # the source's own reference, for a rebase by the safety chain's cut
        self._source_v[:] = sp.v[ad.arm]
        sp.track(ad.arm, ad.q_cmd, ad.v_cmd, 0.0)

    def _rebase_admitted(self, source) -> None:
        """The safety chain held back the admittance's command: the admittance continues from what got through,
        and the source's own reference moves by the chain's cut only (not by the admittance's offset, which
        would feed the offset back into the reference), so a velocity stream or trajectory does not wind up."""
        sp, ad = self.sp, self.admittance
        i = ad.arm
        cut = self._cut
        np.subtract(sp.q[i], sp.source_q[i], out=cut)
        ad.rebase(sp.q[i])
        if ad.delegated.any() and np.abs(cut).max() > FORCE_MODE_CUT:
            ad.hold_back()  # (the arm's force mode took it beyond what the chain allows: the loop takes over)
            self.adapter.command.cartesian[:2] = 0.0
        if not cut.any():
            return
        kept_q, kept_v = self._kept_q, self._kept_v
        kept_q[:], kept_v[:] = sp.q[i], sp.v[i]
        np.add(self._source_q, cut, out=sp.q[i])
        sp.v[i] = self._source_v
        source.rebase(sp)
        sp.q[i], sp.v[i] = kept_q, kept_v

    # ---- safety -------------------------------------------------------------------------
    @property
    def bypass(self) -> bool:
        return self.now < self.bypass_until

    def _bypass_edge(self) -> None:
        """The bypass began or ended (by request or timeout): widen the position range, or start
        closing it in behind the reference."""
        on = self.bypass
        if on == self._bypass_was:
            return
        self._bypass_was = on
        self.safety_changed = True
        if on:
            self._narrowing = False
            self._set_range(*self._relaxed)
        else:
            self._narrowing = True

    def _narrow(self) -> None:
        """After a bypass (or with the arm found beyond a limit) the range is the normal one
        widened only to where the last reference still is, and it never widens again by itself: a
        joint left beyond its limit may only come back (a clamp straight to the limit would jump
        the arm)."""
        q, (lo, hi), t_lo, t_hi = self.sp.q, self.cfg_range, self._t_lo, self._t_hi
        np.minimum(lo, q, out=t_lo)
        np.maximum(t_lo, self.lower, out=t_lo)
        np.maximum(hi, q, out=t_hi)
        np.minimum(t_hi, self.upper, out=t_hi)
        self._set_range(t_lo, t_hi)
        if np.array_equal(t_lo, lo) and np.array_equal(t_hi, hi):
            self._narrowing = False

    def _admit_measured(self) -> None:
        """The arm is beyond the range in force (pushed there, a limp or braked arm sagging past a
        limit, started there): the range reaches out to it, so no reference is clamped back
        toward the limit (that would pull the arm in at the following-error window's pace), and
        then closes in behind the reference as the arm comes back."""
        q, out = self.hw.position, self._beyond
        np.less(q, self.lower, out=out)
        np.logical_or(out, np.greater(q, self.upper, out=self._beyond2), out=out)
        if not np.count_nonzero(out):
            return
        np.minimum(self.lower, q, out=self._t_lo)
        np.maximum(self.upper, q, out=self._t_hi)
        self._set_range(self._t_lo, self._t_hi)
        self._narrowing = True

    def _set_range(self, lower: np.ndarray, upper: np.ndarray) -> None:
        self.lower[:] = lower
        self.upper[:] = upper
        self._limits.set_range(self.lower, self.upper)

    def _safety_stop(self, reason: int) -> None:
        """A safety hold takes the arm: a running trajectory ends with ``reason``; when the hold ends the arm
        holds where it is until a new command (a streaming client's next one resumes its mode)."""
        t = self.trajectory
        if t.state in (TRAJ_RUNNING, TRAJ_STOPPING):
            t.deactivate(reason)
        self.arbiter.selected = self.hold

    def _safety_estop(self, on: bool, now: float) -> None:
        """The safety E-stop latch (/realtime_loop/safety_estop) set or released: the arm brakes from where
        it is measured, the head stops dead, and neither takes a command while it holds; interaction control ends."""
        if on == self.estop_hold.on:
            return
        self.estop_hold.on = on
        self.safety_changed = True
        head = self.head
        if on:
            self._safety_stop(R_SAFETY_STOP)
            self._end_interaction()
            if head is not None:
                head.hold_here(self.hw)
        elif head is not None:
            head.release(self.sp, self.hw, now)

    def _end_interaction(self) -> None:
        """Interaction control ends (a stop, disable, fault, E-stop or collision): the arm holds where it is and
        nothing re-engages it but a new command (the listener forgets the one it forwarded when it sees it off)."""
        if self.interaction is not None:
            self.interaction = None
            self._hold_here(self.now)

    def _safety(self, now: float) -> None:
        """This cycle's safety context, and the overrides the detection asks for."""
        ctx = self.ctx
        ctx.active = self.robot_active
        # (the E-stop holds the measured position as it is, with no avoidance offsets: hector's latch)
        self._bypass_edge()  # (its timeout)
        if self._narrowing:
            self._narrow()
        if not self.robot_active or self.arbiter.active in self._measured_handover:
            self._admit_measured()  # (only where the arm is held as it is; never under a source driving it)
        on = not (self.suppressed(SUPPRESS_COLLISION_AVOIDANCE) or self.bypass or self.estop_hold.on)
        if on != ctx.avoidance:
            ctx.avoidance, self.safety_changed = on, True
        zg = self.zero_g
        zg.allowed = not self.suppressed(SUPPRESS_CUFF)
        if zg.engaged() != self._zero_g_was:
            self._zero_g_was = not self._zero_g_was
            self.safety_changed = True
            if self._zero_g_was:  # zero-G takes the arm: a trajectory ends; on release the arm holds where it was left
                self._safety_stop(R_ZERO_G)
        # a hand on the cuff is not a collision
        on = not (self.suppressed(SUPPRESS_CONTACT_SAFETY) or zg.engaged())
        if on != ctx.detection:
            ctx.detection, self.safety_changed = on, True
        det = self.detection
        if det is not None:
            if det.tripped:
                self._safety_stop(R_COLLISION)
                self._end_interaction()
            if det.holding != self.collision_hold.on:
                self.collision_hold.on = self.brake.contact = self.estop_hold.contact = det.holding
                self.safety_changed = True

    # ---- the cycle ----------------------------------------------------------------------
    def _fault(self, code: int, joint: int) -> None:
        if self.robot.error and self.fault_code:
            return  # already faulted: the brakes hold
        self.robot.fault()
        self.law.reset()
        self.trajectory.deactivate(R_FAULT)
        self.fault_code, self.fault_joint = code, joint
        self.counts["faults"] += 1
        o = self._out
        o[0], o[1], o[2] = code, joint, self.now
        self.ch.from_loop.push(MSG_FAULT, o[:3])

    def _hardware_estop(self, pressed: bool) -> None:
        """The arm's own E-stop button is the robot's (``estop_button`` pressed, then released: still stopped
        until a reset)."""
        if pressed != self._hw_estop:
            self._estop_button(hw=pressed, user=self._user_estop)

    def _estop_button(self, hw: bool, user: bool) -> None:
        was = self._hw_estop or self._user_estop
        self._hw_estop, self._user_estop = hw, user
        if hw or user:
            if not was or self.robot.estop_button != ESTOP_BUTTON_PRESSED:
                self.robot.press_estop()
        elif was:
            self.robot.release_estop()

    def _robot_edge(self) -> None:
        """The robot became enabled, or disabled / stopped: tell the backend (its drives, its brakes)."""
        self._backend_active = active = self.robot_wanted
        if active:
            self.backend.enable()
        elif self.robot.stopped:
            self.backend.stop()
        else:
            self.backend.disable()

    def _pace(self, speed: float) -> float:
        pace = 1.0 if self.forwarder is None else self.forwarder.pace
        return pace * self.lag.pace(self.arbiter.active, speed)

    def _hold_measured(self) -> None:
        """This cycle's setpoint after a fault: the brakes take the arm now, from its measured state (an arm the
        loop drives by torques comes to rest at its acceleration limits; one that brakes itself is held where it is
        measured). A setpoint at rest at the measurement for this one cycle was a damping impulse: a joint moving
        at +0.07 rad/s went back at -0.22 rad/s."""
        sp, hw = self.sp, self.hw
        self.trajectory.deactivate(R_FAULT)  # (before the brakes end it as "disabled": this is a fault)
        self.arbiter.update(self.now, hw, sp, False)
        sp.gravity = True  # (the brakes: never without gravity compensation, as in every cycle they hold)
        self.ctx.trajectory = False
        self.chain.restart(hw, sp)

    def step(self) -> None:
        """One cycle at loop time ``self.now``; the time then advances by ``dt``."""
        now, hw, sp, chain = self.now, self.hw, self.sp, self.chain
        self.ctx.now = now
        self.backend.read(hw)
        # the time base's factor: the backend's (UR slider, Cobot progress) × the operator's override (0..1,
        # validated by the listener)
        speed = (hw.speed_scaling if self._backend_scales else 1.0) * self.ch.control.local.speed_override[0]
        self.trajectory.speed = speed * self._pace(speed)  # (× a paced arm's pace, a lagging arm's catch-up)
        ready = self.backend.ready()
        if ready != self._arm_ready:
            self.law.reset()  # (the integral restarts with the arm)
            self._arm_ready = ready
        code = chain.on_state(hw)  # repairs a broken measurement before anything reads it
        if code:
            self._fault(code, chain.fault_joint)  # stopped now: this cycle already brakes
        elif hw.fault:  # the arm's own: link lost, protective stop, hardware E-stop, controller error
            self._fault(hw.fault, hw.fault_joint)
        self._hardware_estop(hw.estop)
        if not self.initialised:
            self._admit_measured()
            sp.q[:] = hw.position
            self.brake.activate(sp, hw, now)
            self.chain.reset(hw, sp)
            self.initialised = True
        before = self.arbiter.active
        self._intake(now)
        self._safety(now)
        active = self.robot_active
        arb = self.arbiter
        timeout = self.ch.control.local.command_timeout[0]
        timeout = min(max(timeout, TIMEOUT_RANGE[0]), TIMEOUT_RANGE[1]) if timeout == timeout else self.default_timeout
        if active and arb.active.streaming and now - self.last_command > timeout:
            arb.select(self.hold, sp, hw, now)
            self.counts["timeouts"] += 1
        if self._own_brakes and arb.active is self.brake:
            self.brake.activate(sp, hw, now)
        elif self.forwarder is not None and arb.active is self.hold:  # (a trajectory-only arm's controller holds it wherever
            self.hold.activate(sp, hw, now)  # it stopped — after a cancel, an abort, a reconnect: so does the loop)
        code = arb.update(now, hw, sp, active)
        held = arb.active
        if held in self._brakes and held.bitten:
            held.bitten = False  # the brakes bit where the arm is: the shaping restarts there (it stepped the hold on
            chain.reset(hw, sp)  # from the stop's end). The law's integral stays: it holds the arm's model error
        if arb.active is not before and (before in self._measured_handover or arb.active in self._measured_handover
                                         or before is self.torque):
            chain.reset(hw, sp)  # brakes and torque-driven joints hand over the measured state, not a reference
        # (never under the overrides that hold the arm as it is — zero-G, E-stop and collision holds, brakes: a
        # torque client's suppression stream would leave the arm limp there)
        sp.gravity = not self.suppressed(SUPPRESS_GRAVITY) or arb.active in self._measured_handover
        if self.interaction_law is not None:
            self._interact(active)
        self.ctx.trajectory = arb.active is self.stream or arb.active is self.trajectory
        joint = -1
        if code:
            self._hold_measured()
        else:
            code = chain.on_setpoint(hw, sp)
            joint = chain.fault_joint
            if code:
                self._hold_measured()
            elif np.count_nonzero(np.not_equal(sp.source_q, sp.q, out=self._changed)):  # the chain held the reference back
                if self.interaction_engaged and self.admittance is not None:
                    self._rebase_admitted(arb.active)
                else:
                    arb.active.rebase(sp)
                if sp.any_windowed:
                    self.law.reset()  # no integral wind-up against an obstacle either
                if arb.head is not None and arb.active is not self.brake:
                    arb.head.rebase(sp)
        # (the brakes' stop: the arm runs on ahead of or behind it by its dynamics, which the integral must not learn
        # as a model error — a fuzz run's find: wound up over 0.15 s braking a wrist at 2.8 rad/s into its limit, it
        # pulled the stopped arm 1.0 mrad back)
        a = self.arbiter.active
        self.law.freeze = a in self._brakes and a.braking
        self.law.compute(hw, sp, self.adapter.command)
        out_code = chain.on_output(hw, sp, self.adapter.command)
        if self.interaction_engaged and self._torque_loop:
            imp = self.impedance
            imp.commanded(self.adapter.command.effort[imp.arm])
        if out_code and not code:
            code, joint = out_code, chain.fault_joint
        if code:
            self._fault(code, joint)
        if self.robot_wanted != self._backend_active:
            self._robot_edge()
        if self.forwarder is not None:
            code = self.forwarder.step(self.arbiter.active, self.robot_active, self.ch.control.local.speed_override[0])
            if code:
                self._fault(code, -1)
        self.adapter.write()
        self._results()
        self._publish(now)
        self.now = now + self.dt

    def publish_safety(self) -> None:
        """The safety record (100 Hz and when ``safety_changed``; not every cycle: it is P + n + 30 words)."""
        rec = self.ch.safety
        o = rec.local
        o.time[0] = self.now
        ca, det = self.avoidance, self.detection
        if ca is not None:
            if not ca.engaged or self.ctx.trajectory:  # its distances were not kept up to date: refresh them
                ca.tight.update(self.sp.q)
            ca.tight.fill()
            d = ca.tight.d
            k = int(d.argmin())
            o.avoid_engaged[0] = ca.engaged and not self.ctx.trajectory
            o.min_distance[0], o.min_pair[0] = d[k], k
            o.distance_scale[0], o.effective_scale[0] = ca.distance_scale, ca.effective_scale
            o.worst_derivative[0], o.pairs_in_zone[0], o.repelling[0] = ca.worst_derivative, ca.in_zone, ca.repelling
            o.pair_active[:] = ca.active
        if det is not None:
            o.detect_engaged[0] = self.ctx.detection and self.ctx.active
            o.collision_state[0], o.collision_cause[0] = det.holding, det.state
            o.collision_joint[0], o.collision_value[0], o.collision_threshold[0] = det.joint, det.value, det.threshold
            o.collision_metric[0], o.collisions[0] = det.metric, det.count
            o.residual[:] = det.residual
            o.wrench[:] = det.wrench
        o.estop[0], o.bypass[0], o.zero_g[0], o.cuff[0] = self.estop_hold.on, self.bypass, self.zero_g.engaged(), \
            self.zero_g.squeezed
        o.bypass_remaining[0] = max(self.bypass_until - self.now, 0.0)
        rec.publish_local()
        self.safety_changed = False

    def _results(self) -> None:
        o, answers = self._out, self.backend.answers
        while answers:
            o[:3] = answers.popleft()
            self.ch.from_loop.push(MSG_ARM_RESULT, o[:3])
        res = self.trajectory.results
        if res:
            for r in res:
                o[:] = r
                self.ch.from_loop.push(MSG_TRAJ_RESULT, o)
            res.clear()

    def _publish(self, now: float) -> None:
        rec = self.ch.state
        hw, sp, r, cnt, t = self.hw, self.sp, self.robot, self.counts, self.trajectory
        active = self.arbiter.active
        self._cycles += 1
        self._o_head[:] = (now, self._cycles, self._mode_of.get(id(active), POSITION_MODE),
                           self._source_ids.get(id(active), -1))
        self._o_measured[:] = hw.block
        self._o_setpoint[:] = sp.block[:3]
        self._o_traj[:] = t.sample
        rec.local.cmd_effort[:] = self.adapter.command.effort
        self._o_flags[:] = (  # _FLAG_FIELDS, in that order
            r.enabled and self._arm_ready, r.stopped, r.error, r.estop_button, r.estop_source,
            r.ready and self._arm_ready, r.homed, not sp.gravity,
            t.speed, self.fault_code, self.fault_joint, cnt["faults"],
            t.traj_id, t.state, t.time, t.traj.duration, t.segment, t.error, t.applied_scaling,
            cnt["commands"], cnt["superseded"], cnt["ignored"], cnt["timeouts"],
            self._limits.interventions, self._following.interventions,
            self._torque_guard.interventions, self._torque_guard.clamped)
        o = rec.local
        o.interaction_on[0] = self.interaction is not None
        if self.interaction_engaged or o.interaction_engaged[0]:
            o.interaction_engaged[0] = self.interaction_engaged
            imp = self.interaction_law
            o.interaction_k[:] = imp.K
            o.interaction_d[:] = imp.D
            o.interaction_wrench[:] = imp.F
            o.interaction_error[:] = imp.e
        head = self.head
        if head is not None:  # (braked: heading nowhere)
            braked = active is self.brake
            o.head_target[0] = hw.position[self.n - 1] if braked else head.target  # (the head: the last joint)
            o.head_mode[0], o.head_blocked[0] = head.mode, head.blocked and not braked
        rec.publish_local()


class _Absent:
    """Stands in for a safety plugin the config leaves out: its counters read zero."""
    interventions = 0
    clamped = 0

    def set_range(self, lower, upper) -> None:
        pass
