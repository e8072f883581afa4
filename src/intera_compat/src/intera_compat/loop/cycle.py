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

import numpy as np

from ..config import RobotConfig
from ..control.interaction_stage import RELEASED
from ..data.codes import R_FAULT
from ..data.state import Capability
from ..hardware.base import Backend
from ..model.robot_model import RobotModel
from .channel import Channel
from .intake import Intake
from .layouts import MSG_FAULT, SUPPRESS_GRAVITY
from .parts import CycleParts
from .records import Records
from .safety_events import SafetyEvents

TIMEOUT_RANGE = (0.0, 1.0)


class LoopCycle(CycleParts):
    """Runs the parts (parts.py) as the pipeline above, one ``step`` a cycle."""

    def __init__(self, cfg: RobotConfig, rm: RobotModel, backend: Backend, channel: Channel,
                 start_enabled: bool = True):
        super().__init__(cfg, rm, backend, channel, start_enabled)
        self.intake, self.events, self.records = Intake(self), SafetyEvents(self), Records(self)
        self._backend_scales = backend.has(Capability.SPEED_SCALING)
        self._backend_active = None  # the first cycle tells the backend the robot's state
        self.arm_ready = True  # Backend.ready(): the arm executes commands (an arm being powered up does not)
        self.default_timeout = float(cfg.control.get("command_timeout", 0.2))  # if the control record holds a NaN
        self.now = 0.0
        self.initialised = False
        self.fault_code, self.fault_joint = 0, -1

    @property
    def robot_wanted(self) -> bool:
        """Enabled and not stopped: what the backend is told (``enable`` / ``disable`` / ``stop``)."""
        return self.robot.enabled and not self.robot.stopped

    @property
    def robot_active(self) -> bool:
        """Enabled, not stopped, and the arm ready for commands (an arm the backend is still powering up or
        starting its program on is not: the robot reports itself enabled once it is)."""
        return self.robot.enabled and not self.robot.stopped and self.arm_ready

    @property
    def bypass(self) -> bool:
        return self.range.bypass(self.now)

    @property
    def interaction_engaged(self) -> bool:
        return self.interaction is not None and self.interaction.engaged

    @property
    def safety_changed(self) -> bool:
        return self.events.changed

    def publish_safety(self) -> None:
        self.records.publish_safety()

    def hold_here(self, now: float) -> None:
        """The arm's reference becomes its measured position (a jerk-limited stop from its measured velocity)."""
        if not self.robot_active:
            return
        sp, hw, arb = self.sp, self.hw, self.arbiter
        sp.torque_only[self.hold.idx] = True  # (sources take over from the measured state of torque-driven joints)
        if arb.active is self.hold:
            self.hold.activate(sp, hw, now)
        else:
            arb.select(self.hold, sp, hw, now)

    # ---- the cycle ----------------------------------------------------------------------
    def step(self) -> None:
        """One cycle at loop time ``self.now``; the time then advances by ``dt``."""
        now, hw, sp, chain, arb = self.now, self.hw, self.sp, self.chain, self.arbiter
        self.ctx.now = now
        self._read(now)
        before = arb.active
        self.intake.run(now)
        self.events.update(now)
        active = self.robot_active
        code = self._arbitrate(now, active, before)
        stage = self.interaction
        if stage is not None:
            src = arb.active
            edge = stage.step(active and src not in self.no_interaction, hw, sp, self.adapter.command, src,
                              src is self.hold, self.detection)
            if edge:
                self.law.reset()
                if edge == RELEASED:
                    chain.reset(hw, sp)  # the shaping restarts from this setpoint, not the one before
        self.ctx.trajectory = arb.active is self.stream or arb.active is self.trajectory
        joint = -1
        if code:
            self._hold_measured()
        else:
            code = chain.on_setpoint(hw, sp)
            joint = chain.fault_joint
            if code:
                self._hold_measured()
            elif np.count_nonzero(np.not_equal(sp.source_q, sp.q, out=self._changed)):
                self._held_back()  # the chain held the reference back
        # (the brakes' stop: the arm runs on ahead of or behind it by its dynamics, which the integral must not learn
        # as a model error — a fuzz run's find: wound up over 0.15 s braking a wrist at 2.8 rad/s into its limit, it
        # pulled the stopped arm 1.0 mrad back)
        a, cmd = arb.active, self.adapter.command
        self.law.freeze = a in self.brakes and a.braking
        self.law.compute(hw, sp, cmd)
        out_code = chain.on_output(hw, sp, cmd)
        if stage is not None:
            stage.commanded(cmd)
        if out_code and not code:
            code, joint = out_code, chain.fault_joint
        if code:
            self._fault(code, joint)
        if self.robot_wanted != self._backend_active:
            self._robot_edge()
        code = self.adapter.write(arb.active, self.robot_active, self.ch.control.local.speed_override[0])
        if code:
            self._fault(code, -1)
        self.records.results()
        self.records.publish(now)
        self.now = now + self.dt

    def _read(self, now: float) -> None:
        """The backend's measurement, the time base's factor, the arm's readiness, the faults and the E-stop
        button the measurement shows; on the first cycle, the brakes where the arm is."""
        hw, sp, chain = self.hw, self.sp, self.chain
        self.backend.read(hw)
        # the time base's factor: the backend's (UR slider, Cobot progress) × the operator's override (0..1,
        # validated by the listener) × a paced arm's pace, a lagging arm's catch-up
        speed = (hw.speed_scaling if self._backend_scales else 1.0) * self.ch.control.local.speed_override[0]
        pace = 1.0 if self.forwarder is None else self.forwarder.pace
        self.trajectory.speed = speed * pace * self.lag.pace(self.arbiter.active, speed)
        ready = self.backend.ready()
        if ready != self.arm_ready:
            self.law.reset()  # (the integral restarts with the arm)
            self.arm_ready = ready
        code = chain.on_state(hw)  # repairs a broken measurement before anything reads it
        if code:
            self._fault(code, chain.fault_joint)  # stopped now: this cycle already brakes
        elif hw.fault:  # the arm's own: link lost, protective stop, hardware E-stop, controller error
            self._fault(hw.fault, hw.fault_joint)
        robot = self.robot
        if hw.estop != robot.hardware_button:  # (the arm's own E-stop button is the robot's)
            robot.buttons(hardware=hw.estop, user=robot.user_button)
        if not self.initialised:
            self.range.admit_measured(hw.position)
            sp.q[:] = hw.position
            self.brake.activate(sp, hw, now)
            chain.reset(hw, sp)
            self.initialised = True

    def _arbitrate(self, now: float, active: bool, before) -> int:
        """The command timeout, the holds that follow the arm, the arbiter's choice and its setpoint; the safety
        chain restarts where a source hands over the measured state. Returns the source's fault code."""
        hw, sp, arb, chain = self.hw, self.sp, self.arbiter, self.chain
        timeout = self.ch.control.local.command_timeout[0]
        timeout = min(max(timeout, TIMEOUT_RANGE[0]), TIMEOUT_RANGE[1]) if timeout == timeout else self.default_timeout
        if active and arb.active.streaming and now - self.intake.last_command > timeout:
            arb.select(self.hold, sp, hw, now)
            self.counts["timeouts"] += 1
        if self.own_brakes and arb.active is self.brake:
            self.brake.activate(sp, hw, now)
        elif self.forwarder is not None and arb.active is self.hold:  # (a trajectory-only arm's controller holds it
            self.hold.activate(sp, hw, now)  # wherever it stopped — a cancel, an abort, a reconnect: so does the loop)
        code = arb.update(now, hw, sp, active)
        held = arb.active
        if held in self.brakes and held.bitten:
            held.bitten = False  # the brakes bit where the arm is: the shaping restarts there (it stepped the hold on
            chain.reset(hw, sp)  # from the stop's end). The law's integral stays: it holds the arm's model error
        handover = self.measured_handover
        if held is not before and (before in handover or held in handover or before is self.torque):
            chain.reset(hw, sp)  # brakes and torque-driven joints hand over the measured state, not a reference
        # (never under the overrides that hold the arm as it is — zero-G, E-stop and collision holds, brakes: a
        # torque client's suppression stream would leave the arm limp there)
        sp.gravity = not self.suppression.on(SUPPRESS_GRAVITY, now) or held in handover
        return code

    def _held_back(self) -> None:
        """The safety chain held this cycle's setpoint back: the source (through interaction control, when it is
        engaged) continues from what got through, and the law's integral does not wind up against an obstacle."""
        sp, arb, stage = self.sp, self.arbiter, self.interaction
        if stage is not None and stage.engaged:
            stage.rebase(sp, arb.active, self.adapter.command)
        else:
            arb.active.rebase(sp)
        if sp.any_windowed:
            self.law.reset()
        if arb.head is not None and arb.active is not self.brake:
            arb.head.rebase(sp)

    def _fault(self, code: int, joint: int) -> None:
        if self.robot.error and self.fault_code:
            return  # already faulted: the brakes hold
        self.robot.fault()
        self.law.reset()
        self.trajectory.deactivate(R_FAULT)
        self.fault_code, self.fault_joint = code, joint
        self.counts["faults"] += 1
        self.records.push(MSG_FAULT, code, joint, self.now)

    def _robot_edge(self) -> None:
        """The robot became enabled, or disabled / stopped: tell the backend (its drives, its brakes)."""
        self._backend_active = active = self.robot_wanted
        if active:
            self.backend.enable()
        elif self.robot.stopped:
            self.backend.stop()
        else:
            self.backend.disable()

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
