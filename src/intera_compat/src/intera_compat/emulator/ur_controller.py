"""A UR e-Series controller's state, backed by a MuJoCo UR arm (the config's model: UR5e figures by default).

The control script ur_rtde uploads (port 30003, ``script_server.py``) is not interpreted: its behaviour is
emulated here (``_script_cycle``): the command in ``input_int_register_0`` with its arguments in the input
registers, the handshake in ``output_int_register_0`` (1 ready, 2 done; realtime commands — servoJ, speedJ —
are taken every cycle and keep it at 1), blocking commands (moveJ, servoStop, speedStop, stopJ, setWatchdog)
answered 2 when done and 1 again once the client clears the command, stopScript ending the program.

Force mode (``forceMode``, a realtime command; ``forceModeStop``) and freedrive (``freedriveMode`` /
``endFreedriveMode``) are emulated as the URScript manual describes them, on the MuJoCo arm's wrist wrench:

* force mode (type 2: the task frame as given): along / about the compliant axes of the task frame the TCP moves
  to make the wrench it exerts equal the one asked (a velocity ``FORCE_GAIN`` × error, within the limits: the
  largest TCP speed there); the other axes follow the program's motion commands (servoJ, speedJ), whose
  component along the compliant axes is dropped;
* direct torque (``directTorque``, PolyScope 5.26+: ``version``; ignored below, as the script's line is left out
  there): the joint torques on top of the controller's own gravity compensation, the servo off, while the command
  stays in the register (cleared, or any other command: the arm holds where it is). ur_rtde 1.6.5's script passes
  zero friction scales whatever the client asks (it reads them into unused names): none are applied here either;
* freedrive: the arm yields to the wrench pushed onto it along / about the free axes of the feature frame
  (a damper, ``FREEDRIVE_DAMPING``) and holds the others; motion commands are ignored meanwhile (``ignored``).

The RTDE watchdog (``setWatchdog``: ``rtde_set_watchdog("input_int_register_0", f, "stop")`` in ur_rtde's
script) counts in the controller's own time (``now``, ``clock``: ``emulated_arm.py``). A stall of the emulator's
thread is no silence of the client's, even one too long for its schedule to catch up (over 0.1 s), which it skips;
nor is its lag in reading what the client sent while that waits in the socket (``INPUT_GRACE``), nor a pause on
the pendant (the watchdog is the program's: a play counts from there — not verified on a real controller). No write of that
register for ``1 / f`` s stops the program, and the controller brings the arm to rest from the speed it had — a
straight stop in joint space, the leading joint at ``PROGRAM_STOP_DECELERATION`` (the emulator's figure: the real
controller's own for a program stop is not documented) — and holds it; ``deadman`` reports when (last input,
trip, rest, in controller time). Without the watchdog, a client that goes quiet leaves the script's servoJ at its
last target (the arm stops there) and its speedJ at its last speed (the arm runs on): what a real ur_rtde script
does.

The emulator's servers (``rtde_server.py``, ``dashboard_server.py``) read and change this state; the arm is
stepped in real time at the controller's 500 Hz (two 1 ms physics steps per cycle) on its own thread. Modes
follow the controller's: POWER_OFF → (power on) IDLE with the brakes on → (brake release) RUNNING; a program is
STOPPED or PLAYING; a protective stop or an emergency stop holds the arm where it is until unlocked / released.

Numbers are the controller's own (RTDE ``robot_mode``, ``safety_mode``, ``runtime_state``, status bits).
"""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import pinocchio as pin

from ..data.state import CommandMode
from ..hardware.sim import SimBackend, SimPositionBackend
from ..loop.scheduler import sleep_until_next
from .emulated_arm import EmulatedArm

# robot_mode
NO_CONTROLLER, DISCONNECTED, CONFIRM_SAFETY, BOOTING, POWER_OFF, POWER_ON, IDLE, BACKDRIVE, RUNNING = range(-1, 8)
ROBOT_MODE_NAMES = {POWER_OFF: "POWER_OFF", POWER_ON: "POWER_ON", IDLE: "IDLE", BACKDRIVE: "BACKDRIVE",
                    RUNNING: "RUNNING", BOOTING: "BOOTING"}
# safety_mode
NORMAL, REDUCED, PROTECTIVE_STOP, RECOVERY, SAFEGUARD_STOP, SYSTEM_EMERGENCY_STOP, ROBOT_EMERGENCY_STOP = range(1, 8)
SAFETY_MODE_NAMES = {NORMAL: "NORMAL", REDUCED: "REDUCED", PROTECTIVE_STOP: "PROTECTIVE_STOP", RECOVERY: "RECOVERY",
                     SAFEGUARD_STOP: "SAFEGUARD_STOP", SYSTEM_EMERGENCY_STOP: "SYSTEM_EMERGENCY_STOP",
                     ROBOT_EMERGENCY_STOP: "ROBOT_EMERGENCY_STOP"}
# runtime_state
STOPPING, STOPPED, PLAYING, PAUSING, PAUSED = range(5)
# joint_mode
JOINT_POWER_OFF, JOINT_RUNNING, JOINT_IDLE = 239, 253, 255
VERSION = (5, 11, 1, 108318)  # what the controller reports (RTDE 'v', dashboard PolyscopeVersion)
SERIAL = "20235500001"
# the control script's commands (input_int_register_0) and handshake (output_int_register_0)
NO_CMD, MOVEJ, SPEEDJ, SERVOJ, SPEED_STOP, SERVO_STOP, STOPJ, SET_WATCHDOG, STOP_SCRIPT = 0, 1, 9, 11, 15, 16, 34, 35, 255
ZERO_FT_SENSOR, SET_PAYLOAD, TOOL_CONTACT = 8, 17, 25
FORCE_MODE, FORCE_MODE_STOP, FREEDRIVE_MODE, END_FREEDRIVE_MODE, GET_FREEDRIVE_STATUS = 6, 7, 52, 53, 54
DIRECT_TORQUE = 66
REALTIME = {SERVOJ, SPEEDJ, TOOL_CONTACT, FORCE_MODE, DIRECT_TORQUE}
DIRECT_TORQUE_SINCE = (5, 26)  # the PolyScope version ur_rtde's script has direct_torque from
FORCE_GAIN = (0.004, 0.04)  # m/s per N, rad/s per Nm: force mode's TCP velocity per unit of wrench error
FREEDRIVE_DAMPING = (60.0, 3.0)  # N s/m, Nm s/rad: what a hand feels moving the arm in freedrive
FREEDRIVE_SPEED = (0.25, 1.0)  # m/s, rad/s: the most freedrive lets the TCP move
CONTACT_FORCE = 5.0  # N along the asked direction (any, if none) that tool_contact counts as a contact
READY, DONE = 1, 2
PERIOD = 0.002  # s: the e-Series controller's cycle
UNLOCK_DELAY = 5.0  # s after a protective stop before it may be unlocked
INPUT_GRACE = 0.05  # s (wall): how long a cycle that would trip the watchdog waits for inputs sent but not yet read
PROGRAM_STOP_DECELERATION = 10.0  # rad/s²: the leading joint's, when the watchdog stops the program (emulator's)
AT_REST = 0.005  # rad/s: every joint slower than this is at rest (``deadman``'s rest time)
ANALOG_SPAN = 10.0  # V: the analog outputs are in the voltage domain (reported in V, set as a ratio of this)


def default_config() -> str:
    return os.path.join(os.path.dirname(__file__), "..", "..", "..", "config", "ur5e.yaml")


class URController(EmulatedArm):
    """The emulated controller. ``start()`` runs the arm; every public method is thread-safe."""

    def __init__(self, config: str | None = None, initial_pose: str = "neutral", version: tuple = VERSION):
        self._init_arm(config or default_config(), initial_pose, "ur-controller")
        self.lock = threading.RLock()
        self.version = (tuple(int(x) for x in version) + (0, 0, 0, 0))[:4]  # (RTDE 'v', PolyscopeVersion)
        self._torque = np.zeros(self.n)  # direct torque: the joint torques asked (on top of gravity)
        self._g = np.zeros(len(self.cfg.all_joints))
        self.robot_mode = POWER_OFF
        self.safety_mode = NORMAL
        self.runtime_state = STOPPED
        self.speed_slider = 1.0  # target_speed_fraction
        self.program = "<unnamed>"
        self._fid = self.rm.frame_id(self.cfg.tips[0])
        self.out_int = [0] * 48  # output_int_register_N
        self.out_double = [0.0] * 48
        self.inputs: dict = {}  # input variables, the latest value each (the RTDE server writes them)
        self.script = False  # the control script runs
        self.unsupported: set = set()  # commands the emulated script does not know (answered done, remembered)
        self._executing = NO_CMD
        self._mode = "hold"  # hold | servo | speed | move
        self._servo_q = np.zeros(self.n)
        self._speed = np.zeros(self.n)
        self._accel = 1.0
        self._v = np.zeros(self.n)
        self._move = None  # (t, q0, dq, T, ramp time, blocking)
        self._q = np.zeros(self.rm.model.nq)
        # what RTDE reports is computed on the server's thread, outside the lock: a model data of its own (sharing the
        # arm's would hand the force step another configuration's placement now and then)
        self._q_out, self._data_out = np.zeros(self.rm.model.nq), self.rm.model.createData()
        self.watchdog_hz = 0.0  # setWatchdog: the program stops when input_int_register_0 is not written this often
        self._last_input = 0.0  # when (``clock``) the client last wrote input_int_register_0
        self.watchdog_trips = 0
        self.inputs_pending = lambda: False  # what a client sent waits to be read (the RTDE server sets it)
        # the last watchdog stop, in controller time: the last input before it, the trip, the leading joint's speed
        # then, and when the arm came to rest (before the trip if it had stopped by itself: a servoJ's last target;
        # -1: not yet)
        self.trip = None
        self._moved_at = 0.0  # the last time the arm moved (a joint at AT_REST or faster)
        self._stop_v = np.zeros(self.n)  # a program stop's ramp: the target's velocity, its decrement per cycle
        self._stop_dv = np.zeros(self.n)
        self._protective_since = 0.0
        self.ft_offset = np.zeros(6)  # zero_ftsensor: subtracted from the measured TCP wrench
        self.payload_mass, self.payload_cog = 0.0, np.zeros(3)
        self._contact_since = -1.0  # when the current tool contact began (tool_contact), -1: none
        # force mode: None, or (compliant axes, task frame rotation (6×6 block), wrench, limits); freedrive:
        # None, or (free axes, feature rotation (6×6 block))
        self.force_mode = None
        self.freedrive = None
        self.ignored = 0  # motion commands that came while the arm was in freedrive
        self.errors: list = []  # runtime errors that stopped the program (a script conflict)
        self._prog_q = np.zeros(self.n)  # the program's own target (force mode changes the arm's)
        # IO: digital bits (0-7 standard, 8-15 configurable, 16-17 tool), analog in/out (out: ratio of the span)
        self.digital_in = 0
        self.digital_out = 0
        self.analog_in = [0.0, 0.0]
        self.analog_out = [0.0, 0.0]

    # ---- the arm ------------------------------------------------------------------------------------
    def _loop(self) -> None:
        steps = max(1, int(round(PERIOD / self.plant.period)))
        nxt = time.monotonic() + PERIOD
        last = None
        while self._run:
            self._await_inputs(nxt - PERIOD - self.t0)
            with self.lock:  # (while motion is not allowed the target stays where the arm was held)
                self.now = nxt - PERIOD - self.t0  # (this cycle's slot)
                if last is not None and self.now - last > 2.0 * PERIOD:  # (the schedule restarted after a stall
                    # of the emulator's own, too long to catch up: what the client sent meanwhile waits, unread —
                    # the stall is no silence of the client's, the watchdog's count resumes where it was)
                    self._last_input = min(self._last_input + (self.now - last - PERIOD), self.now)
                last = self.now
                self.cmd.velocity[:] = 0.0
                self._script_cycle()
                write = SimBackend.write if self.cmd.mode == CommandMode.TORQUE else SimPositionBackend.write
                for _ in range(steps):  # (direct torque: the joint torques as they are, the servo off)
                    write(self.plant, self.cmd)
                self.plant.read(self.state)
                if float(np.abs(self.state.velocity[:self.n]).max()) >= AT_REST:
                    self._moved_at = self.now
                else:
                    trip = self.trip
                    if trip is not None and trip["rest"] < 0 and not (self._mode == "stopping" and
                                                                       self.moving_allowed()):
                        trip["rest"] = self.now
            nxt = sleep_until_next(nxt, PERIOD)

    def _await_inputs(self, now: float) -> None:
        """Before a cycle that would find the client silent for the watchdog: if what the client sent is waiting
        to be read (``inputs_pending``: bytes in the RTDE socket, a message half read), a moment (``INPUT_GRACE``,
        wall time, outside the lock) for it to be. A real controller reads its inputs as they come; the emulator's
        threads share one interpreter, and on a loaded machine the one that reads them can lag the arm's by tens
        of ms — that is no silence of the client's. Nothing waiting: the client is silent, no grace. (The cycle
        keeps its slot: a silent client's stop comes at the same controller time.)"""
        if not (self.script and self.watchdog_hz > 0):
            return
        self._read_pending(lambda: now - self._last_input > 1.0 / self.watchdog_hz)

    def _read_pending(self, needed=lambda: True) -> None:
        """While ``needed`` and what the client sent waits to be read: a moment (``INPUT_GRACE`` at most, wall
        time, outside the lock) for the RTDE server to read it."""
        end = time.monotonic() + INPUT_GRACE
        while needed() and self.inputs_pending() and time.monotonic() < end:
            time.sleep(0.001)

    @property
    def fed(self) -> float:
        """When (``clock``) the client last wrote the watchdog's register (input_int_register_0)."""
        return self._last_input

    # ---- the control script (emulated) ------------------------------------------------------------------
    def start_script(self) -> bool:
        """The control script arrived (port 30003): it runs if the arm may move. What the client sent on RTDE before
        it is read first (``INPUT_GRACE`` at most): the script comes on another socket, and a real controller has
        long read its inputs by the time a program starts — a command register the client cleared before the upload
        must not run as the stale servoJ still in it (the arm moved 3 mrad after a reset, beside a CPU hog)."""
        self._read_pending()
        with self.lock:
            if not self.moving_allowed():
                return False
            self.script, self.runtime_state = True, PLAYING
            self.out_int[0] = READY
            self._executing, self._mode = NO_CMD, "hold"
            self._hold()
            return True

    def take_inputs(self, values: dict) -> None:
        """One input data package (the RTDE server decoded it): the control script's registers, or
        RTDEIOInterface's (its speed slider)."""
        with self.lock:
            self.inputs.update(values)
            if "input_int_register_0" in values:
                self._last_input = self.clock()
            if int(values.get("speed_slider_mask", 0)) & 1:
                self.set_speed_slider(float(values.get("speed_slider_fraction", 1.0)))
            for prefix, shift, width in (("standard", 0, 8), ("configurable", 8, 8), ("tool", 16, 2)):
                mask = int(values.get(f"{prefix}_digital_output_mask", 0)) & ((1 << width) - 1)
                if mask:
                    bits = int(values.get(f"{prefix}_digital_output", 0))
                    self.digital_out = (self.digital_out & ~(mask << shift)) | ((bits & mask) << shift)
            amask = int(values.get("standard_analog_output_mask", 0))
            for i in range(2):
                if amask & (1 << i):
                    self.analog_out[i] = _fraction(float(values.get(f"standard_analog_output_{i}", 0.0)),
                                                   self.analog_out[i])

    def set_input(self, kind: str, index: int, value: float) -> None:
        """Fault injection / the outside world: digital input ``index`` (0-17) on or off, analog input 0-1."""
        with self.lock:
            if kind == "digital" and 0 <= index < 18:
                self.digital_in = self.digital_in | (1 << index) if value else self.digital_in & ~(1 << index)
            elif kind == "analog" and 0 <= index < 2 and np.isfinite(value):
                self.analog_in[index] = float(value)
            else:
                raise ValueError(f"no {kind} input {index}")

    def set_speed_slider(self, fraction: float) -> None:
        """The teach pendant's speed slider (0..1): the controller runs every motion at this fraction."""
        with self.lock:
            self.speed_slider = _fraction(fraction, self.speed_slider)

    def _end_script(self) -> None:
        self.force_mode = self.freedrive = None  # (both end with the program)
        self.script = False
        self.watchdog_hz = 0.0
        self.runtime_state = STOPPED
        self._mode = "hold"
        self._hold()

    def _watchdog_stop(self) -> None:
        """The RTDE watchdog's "stop" action: the program stops; the arm is brought to rest from the speed it has, in
        a straight line in joint space (every joint at rest at once, the leading one at
        ``PROGRAM_STOP_DECELERATION``), then held."""
        v = self.state.velocity[:self.n].copy()
        self.watchdog_trips += 1
        lead = float(np.abs(v).max())
        rest = self._moved_at if lead < AT_REST else -1.0
        self.trip = {"last_input": self._last_input, "tripped": self.now, "speed": lead, "rest": rest}
        self._end_script()
        if lead > 0.0 and self.moving_allowed():
            self._stop_v[:] = v
            self._stop_dv[:] = np.abs(v) * (PROGRAM_STOP_DECELERATION * PERIOD / lead)
            self._mode = "stopping"

    def _doubles(self, k: int) -> np.ndarray:
        return np.array([float(self.inputs.get(f"input_double_register_{i}", 0.0)) for i in range(k)])

    def _script_cycle(self) -> None:
        """One 2 ms cycle of the control script and of the motion it commands (under the lock)."""
        if self.script and (self.runtime_state in (STOPPED, STOPPING) or not self.moving_allowed()):
            self._end_script()  # a stop, a protective stop, an E-stop: the program ends
        if self.runtime_state in (PAUSED, PAUSING):  # paused on the pendant: it holds, and resumes on play
            self._mode = "hold"
            return
        if self.script and self.watchdog_hz > 0 and self.now - self._last_input > 1.0 / self.watchdog_hz:
            self._watchdog_stop()
        if self.script:
            cmd = int(self.inputs.get("input_int_register_0", NO_CMD))
            if cmd in REALTIME:
                d = self._doubles(8)
                if cmd == TOOL_CONTACT:
                    self.out_int[1] = self._tool_contact(d[:6])
                    if self._mode == "torque":  # (the register no longer asks for a torque: the arm holds)
                        self._mode = "hold"
                        self._hold()
                elif cmd == FORCE_MODE:
                    self._force_mode()
                elif self.freedrive is not None:
                    self.ignored += 1  # (URScript: no motion while the arm is in freedrive)
                elif cmd == DIRECT_TORQUE:
                    if self.version[:2] < DIRECT_TORQUE_SINCE:
                        self.unsupported.add(cmd)
                    else:
                        self._torque[:] = d[:6]
                        self._mode = "torque"
                elif cmd == SERVOJ:
                    self._servo_q[:] = d[:6]
                    self._mode = "servo"
                else:
                    self._speed[:], self._accel = d[:6], max(d[6], 1e-3)
                    if self._mode != "speed":
                        self._v[:] = 0.0
                    self._mode = "speed"
                self.out_int[0] = READY
            elif cmd == NO_CMD:
                if self.out_int[0] == DONE:
                    self.out_int[0] = READY
                self._executing = NO_CMD
                if self._mode == "torque":  # (no torque asked any more: the arm holds)
                    self._mode = "hold"
                    self._hold()
            elif cmd == STOP_SCRIPT:
                self._end_script()
            elif cmd != self._executing:
                self._executing = cmd
                self._execute(cmd)
        self._motion()

    def _execute(self, cmd: int) -> None:
        """A non-realtime command, once: done at once, or (a blocking moveJ) when its motion ends."""
        if cmd == MOVEJ:
            d = self._doubles(8)
            q0 = self.cmd.position[:self.n].copy()
            dq = d[:6] - q0
            speed, accel = max(d[6], 1e-3), max(d[7], 1e-3)
            dist = float(np.abs(dq).max())
            ramp = min(speed / accel, np.sqrt(dist / accel))  # trapezoid (or triangle) on the largest move
            T = 2.0 * ramp + max(dist - accel * ramp * ramp, 0.0) / speed if dist > 0 else 0.0
            blocking = int(self.inputs.get("input_int_register_1", 0)) == 0
            self._move = (0.0, q0, dq, T, ramp, blocking)
            self._mode = "move"
            if not blocking:
                self.out_int[0] = DONE
            return
        if cmd in (SERVO_STOP, SPEED_STOP, STOPJ):
            self._mode = "hold"
            self._hold()
        elif cmd == FORCE_MODE_STOP:  # (the script ends force mode and stops the arm: stopl)
            if self._mode in ("servo", "speed"):  # its stopl would meet the servoj / speedj thread's motion
                self.errors.append("forceModeStop while servoJ / speedJ ran: another thread controls the robot")
                self._end_script()
                return
            self.force_mode = None
            self._mode = "hold"
            self._hold()
        elif cmd == FREEDRIVE_MODE:
            free = np.array([int(self.inputs.get(f"input_int_register_{i}", 0)) != 0 for i in range(1, 7)])
            self.freedrive = (free, _block_rotation(self._doubles(6)[3:]))
            self._mode = "hold"
            self._hold()
        elif cmd == END_FREEDRIVE_MODE:
            self.freedrive = None
            self._hold()
        elif cmd == GET_FREEDRIVE_STATUS:
            self.out_int[1] = 0 if self.freedrive is None else 1
        elif cmd == ZERO_FT_SENSOR:
            self.ft_offset[:] = self.state.wrench
        elif cmd == SET_PAYLOAD:
            d = self._doubles(4)
            self.payload_mass, self.payload_cog[:] = max(float(d[0]), 0.0), d[1:4]
        elif cmd == SET_WATCHDOG:
            self.watchdog_hz = max(float(self.inputs.get("input_double_register_0", 0.0)), 0.0)
            self._last_input = self.now
        else:
            self.unsupported.add(cmd)
        self.out_int[0] = DONE

    def _force_mode(self) -> None:
        """forceMode's registers (ur_rtde's layout): type in int 1, selection in ints 2-7; task frame in doubles
        0-5, wrench in 6-11, limits in 12-17. Types other than 2 take the task frame as given too."""
        d = self._doubles(18)
        sel = np.array([int(self.inputs.get(f"input_int_register_{i}", 0)) != 0 for i in range(2, 8)])
        if self.force_mode is None:
            self._prog_q[:] = self.cmd.position[:self.n]
        self.force_mode = (sel, _block_rotation(d[3:6]), d[6:12].copy(), np.abs(d[12:18]))

    def _motion(self) -> None:
        n, target = self.n, self.cmd.position
        self.cmd.mode = CommandMode.POSITION
        if not self.moving_allowed():
            return
        if self._mode == "torque":
            self.rm.gravity(self.state.position, out=self._g)
            self.cmd.mode = CommandMode.TORQUE
            np.add(self._torque, self._g[:n], out=self.cmd.effort[:n])
            target[:n] = self.state.position[:n]  # (where it holds when the torque ends)
            return
        if self.freedrive is not None:
            free, R6 = self.freedrive
            v = R6.T @ self._sensed()  # the push, in the feature frame
            v[:3] /= FREEDRIVE_DAMPING[0]
            v[3:] /= FREEDRIVE_DAMPING[1]
            v *= free
            _cap(v, FREEDRIVE_SPEED)
            self._cartesian_step(R6 @ v * PERIOD)
            np.clip(target[:n], self.cfg.limits.lower[:n], self.cfg.limits.upper[:n], out=target[:n])
            return
        if self.force_mode is not None:  # the program moves its own target; the arm's is made from it below
            arm_q = target[:n].copy()
            target[:n] = self._prog_q
        if self._mode == "servo":
            target[:n] = self._servo_q
        elif self._mode == "speed":
            step = self._accel * PERIOD
            self._v += np.clip(self._speed * self.speed_slider - self._v, -step, step)
            target[:n] += self._v * PERIOD
            self.cmd.velocity[:n] = self._v
        elif self._mode == "stopping":  # (a watchdog stop: the program has ended)
            v = self._stop_v
            v -= np.clip(v, -self._stop_dv, self._stop_dv)
            target[:n] += v * PERIOD
            self.cmd.velocity[:n] = v
            if not v.any():
                self._mode = "hold"
        elif self._mode == "move":
            t, q0, dq, T, ramp, blocking = self._move
            t = min(t + PERIOD * self.speed_slider, T)
            self._move = (t, q0, dq, T, ramp, blocking)
            s = 1.0 if T <= 0 else _trapezoid(t, T, ramp)
            target[:n] = q0 + s * dq
            if t >= T:
                self._mode = "hold"
                if blocking and self._executing == MOVEJ:
                    self.out_int[0] = DONE
        if self.force_mode is not None:
            self._prog_q[:] = target[:n]
            target[:n] = arm_q
            self._force_step()
        np.clip(target[:n], self.cfg.limits.lower[:n], self.cfg.limits.upper[:n], out=target[:n])

    def _force_step(self) -> None:
        """One cycle of force mode: the program's motion on the non-compliant axes, the force regulation on the
        compliant ones (both in the task frame), as one Cartesian step of the arm's target."""
        sel, R6, wrench, limits = self.force_mode
        q = self.cmd.position[:self.n]
        x_arm = self._pose(q).copy()  # (a copy: the model's data holds one placement, the next call overwrites it)
        x_prog = self._pose(self._prog_q)
        step = np.r_[x_prog.translation - x_arm.translation, pin.log3(x_prog.rotation @ x_arm.rotation.T)]
        step = R6.T @ step
        v = R6.T @ self._sensed()  # (what the world pushes on the tool; the tool pushes back with its negative)
        v += wrench
        v[:3] *= FORCE_GAIN[0]
        v[3:] *= FORCE_GAIN[1]
        np.clip(v, -limits, limits, out=v)
        step[sel] = v[sel] * PERIOD
        self._cartesian_step(R6 @ step)

    def _sensed(self) -> np.ndarray:
        return self.state.wrench - self.ft_offset

    def _pose(self, q_arm: np.ndarray) -> pin.SE3:
        """The TCP's placement at ``q_arm`` — the model data's own, valid until the next call."""
        self.rm.to_pin(np.r_[q_arm, np.zeros(len(self.cfg.all_joints) - self.n)], self._q)
        pin.framesForwardKinematics(self.rm.model, self.rm.data, self._q)
        return self.rm.data.oMf[self._fid]

    def _cartesian_step(self, dx: np.ndarray) -> None:
        """Move the arm's target by the TCP displacement ``dx`` (base axes; damped least squares)."""
        q = self.cmd.position[:self.n]
        self._pose(q)
        J = pin.computeFrameJacobian(self.rm.model, self.rm.data, self._q, self._fid,
                                     pin.LOCAL_WORLD_ALIGNED)[:, self.rm.perm[:self.n]]
        q += J.T @ np.linalg.solve(J @ J.T + 1e-4 * np.eye(6), dx)

    def _tool_contact(self, direction: np.ndarray) -> int:
        """tool_contact: controller cycles since a contact force (along ``direction``'s first three values, or
        any) began, 0 without one."""
        f = self.state.wrench[:3] - self.ft_offset[:3]
        d = direction[:3]
        n = float(np.linalg.norm(d))
        push = -float(f @ d) / n if n > 0 else float(np.linalg.norm(f))  # (the reaction opposes the motion)
        now = time.monotonic()
        if push < CONTACT_FORCE:
            self._contact_since = -1.0
            return 0
        if self._contact_since < 0:
            self._contact_since = now
        return 1 + int((now - self._contact_since) / PERIOD)

    @property
    def motion(self) -> str:
        """What the arm follows: hold, servo (servoJ), speed (speedJ), move (moveJ), torque (directTorque) or stopping
        (a watchdog stop)."""
        return self._mode

    def moving_allowed(self) -> bool:
        return self.robot_mode == RUNNING and self.safety_mode in (NORMAL, REDUCED)

    # ---- the operator and the safety system (dashboard, fault injection) ------------------------------
    def power_on(self) -> None:
        with self.lock:
            if self.robot_mode == POWER_OFF:
                self.robot_mode = IDLE

    def power_off(self) -> None:
        with self.lock:
            self.robot_mode, self.runtime_state = POWER_OFF, STOPPED
            self._hold()

    def brake_release(self) -> bool:
        with self.lock:
            if self.robot_mode not in (IDLE, RUNNING) or self.safety_mode not in (NORMAL, REDUCED):
                return False
            self.robot_mode = RUNNING
            return True

    def play(self) -> bool:
        """Starts the loaded program, or resumes a paused one (the control script carries on)."""
        with self.lock:
            if self.robot_mode != RUNNING or self.safety_mode not in (NORMAL, REDUCED):
                return False
            if self.runtime_state == PAUSED:
                self._hold()
                self._last_input = self.clock()  # (the watchdog is the program's: a pause is no client silence)
            self.runtime_state = PLAYING
            return True

    def stop_program(self) -> None:
        with self.lock:
            self.runtime_state = STOPPED

    def pause_program(self) -> bool:
        with self.lock:
            if self.runtime_state != PLAYING:
                return False
            self.runtime_state = PAUSED
            return True

    def protective_stop(self) -> None:
        """Fault injection: a protective stop (the arm holds, the program stops)."""
        with self.lock:
            self.safety_mode, self.runtime_state = PROTECTIVE_STOP, STOPPED
            self._protective_since = time.monotonic()
            self._hold()

    def unlock_protective_stop(self) -> bool:
        """Refused, as by the controller, until ``UNLOCK_DELAY`` after the stop."""
        with self.lock:
            if self.safety_mode != PROTECTIVE_STOP or time.monotonic() - self._protective_since < UNLOCK_DELAY:
                return False
            self.safety_mode = NORMAL
            return True

    def emergency_stop(self, pressed: bool) -> None:
        """Fault injection: the robot's E-stop button (released: the robot stays powered off until powered on)."""
        with self.lock:
            if pressed:
                self.safety_mode, self.runtime_state, self.robot_mode = ROBOT_EMERGENCY_STOP, STOPPED, POWER_OFF
                self._hold()
            elif self.safety_mode == ROBOT_EMERGENCY_STOP:
                self.safety_mode = NORMAL

    def _hold(self) -> None:
        self.cmd.position[:] = self.state.position
        self._prog_q[:] = self.state.position[:self.n]

    def push(self, wrench, seconds: float) -> None:
        """Fault injection / the outside world: a wrench (N, Nm, base axes) pushed onto the tool for ``seconds``
        (what a hand guiding the arm does)."""
        w = np.asarray(wrench, float)
        if w.shape != (6,) or not np.isfinite(w).all() or not 0.0 < seconds < 600.0:
            raise ValueError("push: 6 finite numbers and 0 < seconds < 600")
        with self.lock:
            self.plant.apply_wrench(self.cfg.tips[0], w, seconds)

    # ---- what RTDE reports --------------------------------------------------------------------------
    def outputs(self) -> dict:
        """The RTDE output variables this controller has values for (a snapshot)."""
        with self.lock:
            q = self.state.position[:self.n].copy()
            wrench = self.state.wrench - self.ft_offset
            payload, cog = self.payload_mass, self.payload_cog.copy()
            qd = self.state.velocity[:self.n].copy()
            tq = self.cmd.position[:self.n].copy()
            mode, smode, rstate, slider = self.robot_mode, self.safety_mode, self.runtime_state, self.speed_slider
            ints, doubles = list(self.out_int), list(self.out_double)
            din, dout, ain, aout = self.digital_in, self.digital_out, list(self.analog_in), list(self.analog_out)
        self.rm.to_pin(np.r_[q, np.zeros(len(self.cfg.all_joints) - self.n)], self._q_out)
        J = pin.computeFrameJacobian(self.rm.model, self._data_out, self._q_out, self._fid, pin.LOCAL_WORLD_ALIGNED)
        x = self._data_out.oMf[self._fid]
        pose = np.r_[x.translation, pin.log3(x.rotation)]  # (UR poses: position, rotation vector)
        speed = J[:, self.rm.perm[:self.n]] @ qd
        powered = mode not in (POWER_OFF, NO_CONTROLLER, DISCONNECTED, BOOTING)
        running = mode == RUNNING
        safety_bits = 1 << 0 if smode == NORMAL else 1 << (smode - 1)
        if smode in (SYSTEM_EMERGENCY_STOP, ROBOT_EMERGENCY_STOP):
            safety_bits |= 1 << 7
        scaling = 1.0 if rstate == PLAYING else 0.0  # (the trajectory limiter's own; the slider is apart)
        zero6 = np.zeros(6)
        return {
            "timestamp": time.monotonic() - self.t0,
            "target_q": tq, "target_qd": zero6, "target_qdd": zero6, "target_current": zero6,
            "target_moment": zero6, "actual_q": q, "actual_qd": qd, "actual_current": zero6,
            "actual_current_as_torque": zero6, "joint_control_output": zero6,
            "actual_TCP_pose": pose, "actual_TCP_speed": speed, "actual_TCP_force": wrench,
            "target_TCP_pose": pose, "target_TCP_speed": speed, "actual_digital_input_bits": din,
            "actual_digital_output_bits": dout, "joint_temperatures": np.full(6, 30.0),
            "actual_execution_time": 0.2, "robot_mode": mode,
            "joint_mode": [JOINT_RUNNING if running else JOINT_IDLE if powered else JOINT_POWER_OFF] * 6,
            "safety_mode": smode, "safety_status": smode, "actual_tool_accelerometer": np.array([0.0, 0.0, 9.81]),
            "speed_scaling": scaling, "target_speed_fraction": slider, "actual_momentum": 0.0,
            "actual_main_voltage": 48.0 if powered else 0.0, "actual_robot_voltage": 48.0 if powered else 0.0,
            "actual_robot_current": 0.0, "actual_joint_voltage": np.full(6, 48.0 if powered else 0.0),
            "runtime_state": rstate, "standard_analog_input0": ain[0], "standard_analog_input1": ain[1],
            "standard_analog_output0": ANALOG_SPAN * aout[0], "standard_analog_output1": ANALOG_SPAN * aout[1],
            "robot_status_bits": (1 if powered else 0) | (2 if rstate == PLAYING else 0),
            "safety_status_bits": safety_bits, "ft_raw_wrench": zero6, "payload": payload,
            "payload_cog": cog, "payload_inertia": zero6,
            **{f"output_int_register_{i}": x for i, x in enumerate(ints)},
            **{f"output_double_register_{i}": x for i, x in enumerate(doubles)},
        }


def _block_rotation(rotvec: np.ndarray) -> np.ndarray:
    """The 6×6 block-diagonal rotation of a frame given as a rotation vector (its axes in base axes)."""
    R = pin.exp3(np.asarray(rotvec, float))
    R6 = np.zeros((6, 6))
    R6[:3, :3] = R6[3:, 3:] = R
    return R6


def _cap(v: np.ndarray, top) -> None:
    """Scale the linear and the angular halves of ``v`` down to norms ``top`` (in place)."""
    for half, t in ((v[:3], top[0]), (v[3:], top[1])):
        s = float(np.linalg.norm(half))
        if s > t:
            half *= t / s


def _fraction(value: float, keep: float) -> float:
    """``value`` clamped to 0..1 (a non-finite one changes nothing: ``keep``)."""
    return min(max(value, 0.0), 1.0) if np.isfinite(value) else keep


def _trapezoid(t: float, T: float, ramp: float) -> float:
    """Fraction of a move done at ``t`` of ``T`` with accelerating and braking phases of ``ramp`` s each."""
    cruise = T - 2.0 * ramp
    peak = 1.0 / (ramp + cruise) if ramp + cruise > 0 else 0.0  # (the area under the speed profile is 1)
    if t < ramp:
        return 0.5 * peak / ramp * t * t
    if t < ramp + cruise:
        return 0.5 * peak * ramp + peak * (t - ramp)
    r = T - t
    return 1.0 - 0.5 * peak / ramp * r * r if ramp > 0 else 1.0
