"""One cycle of the robot: arbitrate → control law → limits, on plain records (no ROS, no I/O).

``LoopCore.step(now)`` reads the measured ``HardwareState`` the caller filled, consumes the
latest command and control records, and leaves the torque to send in ``self.hw_cmd``. The same
object runs inside the realtime process (records in shared memory) and in unit tests (records
in private buffers), so every rule below is testable without a master.

Rules (contract §2.1–2.2):
* only the active mode's arrays are read; joints a command does not name keep their targets;
* POSITION targets are tracked until changed, at ``speed_ratio × v_max``, joints arriving together;
* VELOCITY/TORQUE/TRAJECTORY revert to a position hold at the current angles when no command
  arrives within ``command_timeout``;
* TORQUE adds the command to gravity compensation unless ``suppress_gravity_compensation`` is
  arriving (> 5 Hz);
* disabled / stopped / E-stopped: no command executes, the arm holds where it was (brakes);
* position, velocity and effort limits are always enforced (clamped, counted).
"""
from __future__ import annotations

import numpy as np

from ..config import RobotConfig
from ..control.joint_law import JointTrackingLaw
from ..control.position import PositionInterpolator
from ..hardware.base import HardwareCommand, HardwareState
from ..model.robot_model import RobotModel
from ..safety.robot_state import RobotStateMachine
from .layouts import POSITION_MODE, TORQUE_MODE, TRAJECTORY_MODE, VELOCITY_MODE
from .shm import Record

TIMEOUT_RANGE = (0.0, 1.0)


class LoopCore:
    def __init__(self, cfg: RobotConfig, rm: RobotModel, command: Record, control: Record, state: Record,
                 dt: float, start_enabled: bool = True):
        self.cfg, self.rm, self.dt = cfg, rm, dt
        self.cmd, self.ctl, self.out = command, control, state
        n = self.n = len(cfg.all_joints)
        lim = cfg.limits
        self.lower, self.upper, self.vmax, self.emax = lim.lower, lim.upper, lim.velocity, lim.effort
        c = cfg.control
        self.law = JointTrackingLaw(rm, c["kp"], c["kd"], c["ki"], c["integral_limit"], dt)
        self.interp = PositionInterpolator(lim.velocity, lim.accel, dt)
        self.suppress_timeout = float(c.get("suppress_timeout", 0.2))
        self.robot = RobotStateMachine(enabled=start_enabled)
        self.hw_state = HardwareState.zeros(n)
        self.hw_cmd = HardwareCommand.zeros(n)
        # active command
        self.mode = POSITION_MODE
        self.vel_cmd = np.zeros(n)
        self.tau_cmd = np.zeros(n)
        self.traj_p = np.zeros(n)
        self.traj_v = np.zeros(n)
        self.traj_a = np.zeros(n)
        self.cmd_time = 0.0  # loop time the active streaming command arrived
        self.vel_ref = np.zeros(n)  # integrated velocity-mode position reference
        # setpoint of this cycle
        self.q_d = np.zeros(n)
        self.v_d = np.zeros(n)
        self.a_d = np.zeros(n)
        self.hold_q = np.zeros(n)
        self._tmp = np.zeros(n)
        # event counters already handled
        self._seen = {k: 0.0 for k in ("cmd_id", "enable_id", "stop_id", "reset_id", "estop_id")}
        self._suppress_seen = {k: 0.0 for k in ("suppress_gravity_id", "suppress_collision_avoidance_id",
                                                 "suppress_contact_safety_id", "suppress_cuff_id")}
        self._suppress_time = {k: -1e9 for k in self._suppress_seen}
        self.initialised = False
        self.now = 0.0

    # ------------------------------------------------------------------------------------------
    def _hold_current(self, smooth: bool = False) -> None:
        """Switch to POSITION_MODE holding the measured angles.

        ``smooth``: a moving arm decelerates (jerk-limited) and holds where it comes to rest,
        instead of being pulled back to the angle it had at the switch.
        """
        q, v = self.hw_state.position, self.hw_state.velocity
        np.clip(q, self.lower, self.upper, out=self.hold_q)
        self.mode = POSITION_MODE
        if smooth:
            self.interp.reset(self.hold_q, v)
            stop = self.hold_q + v * np.abs(v) / (2.0 * self.interp.amax * max(self.interp.ratio, self.interp.accel_floor))
            self.interp.set_target(np.clip(stop, self.lower, self.upper))
        else:
            self.interp.reset(self.hold_q)
        self.law.reset()

    def _events(self, now: float) -> None:
        ctl, seen, robot = self.ctl, self._seen, self.robot
        was_active = robot.enabled and not robot.stopped
        v = ctl.estop_id[0]
        if v != seen["estop_id"]:
            seen["estop_id"] = v
            robot.press_estop() if ctl.estop_pressed[0] > 0.5 else robot.release_estop()
        v = ctl.stop_id[0]
        if v != seen["stop_id"]:
            seen["stop_id"] = v
            robot.stop()
        v = ctl.reset_id[0]
        if v != seen["reset_id"]:
            seen["reset_id"] = v
            robot.reset()
        v = ctl.enable_id[0]
        if v != seen["enable_id"]:
            seen["enable_id"] = v
            robot.set_enable(ctl.enable_value[0] > 0.5)
        active = robot.enabled and not robot.stopped
        if active != was_active:
            self._hold_current()  # enabling starts from where the arm is; disabling brakes there
        for key in self._suppress_seen:
            v = getattr(ctl, key)[0]
            if v != self._suppress_seen[key]:
                self._suppress_seen[key] = v
                self._suppress_time[key] = now

    def suppressed(self, key: str) -> bool:
        return self.now - self._suppress_time[key] < self.suppress_timeout

    def _consume_command(self, now: float) -> None:
        cmd = self.cmd
        cid = cmd.cmd_id[0]
        if cid == self._seen["cmd_id"]:
            return
        self._seen["cmd_id"] = cid
        self.out.consumed_cmd_id[0] = cid
        if not (self.robot.enabled and not self.robot.stopped):
            return  # disabled: commands are not executed
        mode = int(cmd.mode[0])
        mask = cmd.mask > 0.5
        if mode != self.mode:
            if mode == POSITION_MODE:
                self.interp.reset(self.q_d, self.v_d)
            elif mode == VELOCITY_MODE:
                self.vel_cmd[:] = 0.0
                self.vel_ref[:] = self.q_d
            elif mode == TORQUE_MODE:
                self.tau_cmd[:] = 0.0
            elif mode == TRAJECTORY_MODE:
                self.traj_p[:] = self.q_d
                self.traj_v[:] = 0.0
                self.traj_a[:] = 0.0
            else:
                return
            self.mode = mode
            self.law.reset()
        if mode == POSITION_MODE:
            t = self._tmp
            t[:] = self.interp.target
            t[mask] = cmd.position[mask]
            np.clip(t, self.lower, self.upper, out=t)
            self.interp.set_target(t)
        elif mode == VELOCITY_MODE:
            self.vel_cmd[mask] = cmd.velocity[mask]
            np.clip(self.vel_cmd, -self.vmax, self.vmax, out=self.vel_cmd)
        elif mode == TORQUE_MODE:
            self.tau_cmd[mask] = cmd.effort[mask]
        elif mode == TRAJECTORY_MODE:
            # re-base the unnamed joints' extrapolation on where they are now
            tau = now - self.cmd_time
            self.traj_p += self.traj_v * tau + 0.5 * self.traj_a * tau * tau
            self.traj_v += self.traj_a * tau
            self.traj_p[mask] = cmd.position[mask]
            self.traj_v[mask] = cmd.velocity[mask]
            self.traj_a[mask] = cmd.acceleration[mask]
        self.cmd_time = now

    # ------------------------------------------------------------------------------------------
    def step(self, now: float) -> np.ndarray:
        """One cycle at loop time ``now`` (s); ``hw_state`` must hold the new measurement."""
        self.now = now
        hs = self.hw_state
        if not self.initialised:
            self.q_d[:] = hs.position
            self._hold_current()
            self.initialised = True
        self._events(now)
        ctl = self.ctl
        self.interp.set_ratio(ctl.speed_ratio[0])
        self._consume_command(now)
        active = self.robot.enabled and not self.robot.stopped
        timeout = min(max(ctl.command_timeout[0], TIMEOUT_RANGE[0]), TIMEOUT_RANGE[1])
        if active and self.mode != POSITION_MODE and now - self.cmd_time > timeout:
            self._hold_current(smooth=True)
            self.out.timeouts[0] += 1
        q, v = hs.position, hs.velocity
        grav_off = self.suppressed("suppress_gravity_id")
        if not active:  # brakes: hold where the arm was when it stopped
            self.q_d[:] = self.hold_q
            self.v_d[:] = 0.0
            self.a_d[:] = 0.0
        elif self.mode == POSITION_MODE:
            self.interp.update()
            self.q_d[:] = self.interp.q
            self.v_d[:] = self.interp.v
            self.a_d[:] = self.interp.a
        elif self.mode == VELOCITY_MODE:
            self.vel_ref += self.vel_cmd * self.dt
            np.clip(self.vel_ref, self.lower, self.upper, out=self.vel_ref)
            self.q_d[:] = self.vel_ref
            self.v_d[:] = self.vel_cmd
            at_limit = (self.vel_ref <= self.lower) | (self.vel_ref >= self.upper)
            self.v_d[at_limit] = 0.0
            self.a_d[:] = 0.0
        elif self.mode == TRAJECTORY_MODE:
            tau = now - self.cmd_time
            self.q_d[:] = self.traj_p + self.traj_v * tau + 0.5 * self.traj_a * tau * tau
            self.v_d[:] = self.traj_v + self.traj_a * tau
            self.a_d[:] = self.traj_a
            np.clip(self.v_d, -self.vmax, self.vmax, out=self.v_d)
        if self.mode == TORQUE_MODE and active:
            self.q_d[:] = q
            self.v_d[:] = v
            self.a_d[:] = 0.0
            tau_out = self.hw_cmd.effort
            if grav_off:
                tau_out[:] = self.tau_cmd
                self.law.gravity[:] = 0.0
            else:
                self.rm.gravity(q, out=self.law.gravity)
                np.add(self.law.gravity, self.tau_cmd, out=tau_out)
        else:
            clamped = (self.q_d < self.lower) | (self.q_d > self.upper)
            if clamped.any():
                np.clip(self.q_d, self.lower, self.upper, out=self.q_d)
                self.out.clamped_position[0] += 1
            tau_out = self.hw_cmd.effort
            tau_out[:] = self.law.compute(q, v, self.q_d, self.v_d, self.a_d)
            if grav_off:
                self.rm.gravity(q, out=self.law.gravity)
                tau_out -= self.law.gravity
        if np.any(np.abs(tau_out) > self.emax):
            np.clip(tau_out, -self.emax, self.emax, out=tau_out)
            self.out.clamped_effort[0] += 1
        self._publish_state(now, grav_off)
        return tau_out

    def _publish_state(self, now: float, grav_off: bool) -> None:
        o, hs, r = self.out, self.hw_state, self.robot
        o.time[0] = now
        o.cycle[0] += 1
        o.mode[0] = self.mode
        o.position[:] = hs.position
        o.velocity[:] = hs.velocity
        o.effort[:] = hs.effort
        o.cmd_position[:] = self.q_d
        o.cmd_velocity[:] = self.v_d
        o.cmd_acceleration[:] = self.a_d
        o.cmd_effort[:] = self.hw_cmd.effort
        o.enabled[0] = r.enabled
        o.stopped[0] = r.stopped
        o.error[0] = r.error
        o.estop_button[0] = r.estop_button
        o.estop_source[0] = r.estop_source
        o.ready[0] = r.ready
        o.homed[0] = r.homed
        o.gravity_suppressed[0] = grav_off
