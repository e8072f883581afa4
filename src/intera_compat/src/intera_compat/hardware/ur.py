"""Universal Robots arms (e-Series at 500 Hz, CB3 at 125 Hz) through PyPI ``ur_rtde``.

``RTDEReceiveInterface`` brings the arm's state at the robot's rate (the arm is the clock: one loop cycle per
RTDE sample); ``RTDEControlInterface`` uploads ur_rtde's control script (port 30003) and streams to it:
``servoJ`` every cycle (``interface: position``; lookahead and gain in config) or ``speedJ``
(``interface: velocity``), ``servoStop`` / ``speedStop`` when the robot is disabled or stopped, and the RTDE
watchdog (the controller stops the program if nothing comes for ``1 / watchdog_hz``: a dead loop stops the
arm); ``DashboardClient`` powers the arm on, releases its brakes and unlocks protective stops.

* Dead-man: the script's ``rtde_set_watchdog("input_int_register_0", watchdog_hz, "stop")`` is set whenever the
  script is (re)started and on every enable; every command the loop sends writes that register (servoJ / speedJ /
  a torque each cycle) and, while nothing is streamed, ``kickWatchdog`` does, 4× as often as the watchdog needs (by
  the clock, not a count of cycles: a loop whose cycles run late still kicks in time).
  A loop process that dies, hangs or loses the link stops the program within ``1 / watchdog_hz`` (at most
  ``1 / MIN_WATCHDOG_HZ`` = 0.5 s) and the controller stops the arm; without it, a speedJ would run on at its last
  speed (ur_rtde's script repeats it) and a servoJ would stay at its last target. ``close`` stops the motion and
  then the script itself, so an orderly exit leaves no program for the watchdog to stop.

* Speed scaling: ``speed_scaling`` × ``target_speed_fraction`` (the teach pendant's slider; 0 while the program
  is paused) is the trajectory time base's factor: the slider at 0 pauses a trajectory, it does not abort it.
* Faults (``read``): no new RTDE sample for ``link_timeout`` s → link lost; safety mode protective stop or
  safeguard stop → protective stop; an emergency stop → hardware E-stop (the robot's E-stop button); a safety
  fault or violation, or — while enabled — the arm leaving RUNNING or its program leaving PLAYING (stopped on
  the pendant, the watchdog) → controller error.
* Enable: an arm that is powered off or braked is powered on and its brakes released (``power_on``), then the
  control script is (re)started (uploading it stops whatever program the robot ran); this runs beside the loop
  (``_Worker``: ur_rtde releases the GIL while it waits) and the robot reports itself enabled once the arm
  executes commands (``ready``). A disable or stop cancels a power-up under way (between its steps). Reset:
  reconnect a lost link, unlock a protective stop on the dashboard (retried until the controller's 5 s rule
  allows it), then restart the control script. A chore that fails is a controller error, its text printed.
* Interaction control (admittance on the TCP wrench, ``control/interaction.py``) hands the arm's own controller
  what it does better: the FORCE axes go to ``forceMode`` (type 2, the interaction frame as the task frame; the
  compliant axes' speed within ``force_speed``, the others within ``force_deviation`` of the streamed pose;
  sent again when the axes or the wrench change (a wall's push) or the frame moves, in place of that cycle's
  servoJ, and every ``FORCE_MODE_REFRESH`` s (a register the script missed is not lost); ``forceModeStop``
  when they end), and a constrained zero-G freedrive can carry exactly goes to ``freedriveMode`` with its free
  axes (nothing is streamed meanwhile, the watchdog is kicked; ``endFreedriveMode`` when it ends). A disable or
  stop ends both before the arm is stopped.
* A program paused on the teach pendant: the arm is not ready (nothing is streamed, commands are ignored; a
  trajectory ends) until it plays again. In ``interface: velocity`` the controller scales speedJ by the slider
  as well as the loop's time base does: the loop's position feedback makes up the difference (with some lag).
* Threads: the loop's thread calls ``wait`` / ``read`` / ``write``; the worker owns the slow calls. The control
  interface is used by one of them at a time (``ctrl_lock``; the loop never waits for it: a cycle that finds it
  taken sends nothing) and the receive interface is swapped on reconnect under ``recv_lock`` (a cycle that finds
  it taken reports the link lost, which it is).
"""
from __future__ import annotations

import queue
import re
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from ..config import config_section
from ..data.codes import (ARM_RESULT_ENABLED, ARM_RESULT_FAILED, ARM_RESULT_OK, ARM_RESULT_UNSUPPORTED, ARM_SET_PAYLOAD,
                          ARM_TOOL_CONTACT, ARM_ZERO_FT)
from ..data.faults import FAULT_CONTROLLER_ERROR, FAULT_HARDWARE_ESTOP, FAULT_LINK_LOST, FAULT_PROTECTIVE_STOP
from ..data.state import Capability, HardwareCommand, HardwareState
from .base import Backend

# the controller's numbers (RTDE robot_mode, safety_mode, runtime_state)
ROBOT_POWER_OFF, ROBOT_IDLE, ROBOT_RUNNING = 3, 5, 7
SAFETY_NORMAL, SAFETY_REDUCED, SAFETY_PROTECTIVE_STOP, SAFETY_SAFEGUARD_STOP = 1, 2, 3, 5
SAFETY_SYSTEM_ESTOP, SAFETY_ROBOT_ESTOP = 6, 7  # (8 violation, 9 fault, 4 recovery, ...: controller errors)
SAFETY_AUTOMATIC_MODE_SAFEGUARD_STOP, SAFETY_THREE_POSITION_ENABLING_STOP = 12, 13
SAFETY_OK = (SAFETY_NORMAL, SAFETY_REDUCED)
SAFETY_ESTOPS = (SAFETY_SYSTEM_ESTOP, SAFETY_ROBOT_ESTOP)
SAFETY_STOPS = (SAFETY_PROTECTIVE_STOP, SAFETY_SAFEGUARD_STOP, SAFETY_AUTOMATIC_MODE_SAFEGUARD_STOP,
                SAFETY_THREE_POSITION_ENABLING_STOP)  # (anything else but NORMAL / REDUCED: a controller error)
RUNTIME_STOPPED, RUNTIME_PLAYING, RUNTIME_PAUSING, RUNTIME_PAUSED = 1, 2, 3, 4
FORCE_MODE_TYPE = 2  # forceMode: the task frame as given (not turned with the TCP's motion)
FRAME_MOVED = (0.005, 0.01)  # m, rad: a task frame that moved further is sent again (in_endpoint_frame)
WRENCH_CHANGED = 0.2  # N or Nm: a wrench (a wall's push) that changed more is sent again ...
FORCE_MODE_GAP = 4  # ... at most every this many cycles (the stream's servoJ goes in the others)
FORCE_MODE_REFRESH = 0.05  # s: forceMode is sent again this often while it stays the same
MIN_TORQUE_WATCHDOG_HZ = 10.0  # the least ``torque_watchdog_hz`` (a stale torque re-applied for 0.1 s at most)
MIN_WATCHDOG_HZ = 2.0  # the least RTDE watchdog rate: a dead loop's arm is stopped within 0.5 s plus its deceleration
INTERFACES = {"position": Capability.POSITION, "velocity": Capability.VELOCITY, "torque": Capability.TORQUE}
DIRECT_TORQUE_SINCE = (5, 26)  # PolyScope: ur_rtde's control script has direct_torque from this version on
TORQUE_STALE_PERIODS = 2.5  # direct torque: the register keeps a torque while its sample is at most this old
NO_FRICTION = [0.0] * 6  # directTorque's friction scales (the loop's law has the joints' friction already)
_STREAM, _SENT, _IDLE = 0, 1, 2  # what a cycle's command slot is for (``URBackend._cartesian``)
# what the loop reads from the arm (RTDEReceiveInterface's output recipe)
VARIABLES = ["timestamp", "actual_q", "actual_qd", "actual_TCP_force", "speed_scaling", "target_speed_fraction",
             "robot_mode", "safety_mode", "runtime_state", "safety_status_bits", "robot_status_bits"]


@dataclass
class URSettings:
    """``ur`` in the robot config (launch arguments override ``robot_ip``, ``rate``, ``link_timeout``,
    ``interface``, ``torque_watchdog_hz``)."""

    robot_ip: str = "127.0.0.1"
    rate: float = 500.0  # Hz: RTDE and the loop (e-Series 500, CB3 125)
    interface: str = "position"  # position: servoJ; velocity: speedJ; torque: directTorque (PolyScope 5.26+)
    servo_lookahead: float = 0.1  # s, servoJ lookahead_time (0.03 .. 0.2)
    servo_gain: float = 300.0  # servoJ gain (100 .. 2000)
    speed_acceleration: float = 4.0  # rad/s², speedJ's acceleration towards each new velocity
    stop_deceleration: float = 10.0  # rad/s², servoStop / speedStop
    watchdog_hz: float = 10.0  # the RTDE watchdog's minimum input rate (>= MIN_WATCHDOG_HZ: the dead-man)
    torque_watchdog_hz: float = 50.0  # ... at least this with direct torque (the script re-applies a stale torque)
    link_timeout: float = 0.05  # s without a new RTDE sample: the link is lost
    power_on: bool = True  # enable powers the arm on and releases its brakes if it needs it
    ft_sensor: bool = True  # the arm measures the TCP wrench (e-Series): interaction control by admittance
    force_mode: bool = True  # the FORCE axes of interaction control go to the controller's forceMode
    force_speed: tuple = (0.1, 0.5)  # m/s, rad/s: forceMode's speed limit along / about the compliant axes
    force_deviation: tuple = (0.1, 0.2)  # m, rad: forceMode's limit on the other axes' deviation from the stream
    freedrive: bool = True  # a constrained zero-G goes to the controller's freedriveMode (PolyScope 5.10+)
    startup_timeout: float = 30.0  # s to reach the controller and get its first sample
    ready_timeout: float = 30.0  # s for power on + brake release + control script start

    @classmethod
    def from_config(cls, cfg, overrides: dict | None = None) -> "URSettings":
        s = config_section(cfg, "ur", cls, overrides)
        s.rate, s.link_timeout = float(s.rate), float(s.link_timeout)
        if s.interface not in INTERFACES:
            raise ValueError(f"{cfg.path}: ur.interface {s.interface!r}: use one of {', '.join(INTERFACES)}")
        if not 10.0 <= s.rate <= 500.0:
            raise ValueError(f"{cfg.path}: ur.rate {s.rate} Hz: give 10..500 (e-Series 500, CB3 125)")
        if not 0.03 <= s.servo_lookahead <= 0.2 or not 100.0 <= s.servo_gain <= 2000.0:
            raise ValueError(f"{cfg.path}: ur.servo_lookahead must lie in [0.03, 0.2] s and ur.servo_gain in "
                             f"[100, 2000] (ur_rtde's servoJ ranges)")
        if not s.link_timeout >= 2.0 / s.rate:
            raise ValueError(f"{cfg.path}: ur.link_timeout {s.link_timeout} s: at least two periods")
        for name in ("force_speed", "force_deviation"):
            v = np.asarray(getattr(s, name), dtype=float)
            if v.shape != (2,) or not (np.isfinite(v).all() and (v > 0).all()):
                raise ValueError(f"{cfg.path}: ur.{name} {getattr(s, name)!r}: two numbers > 0 (linear, angular)")
            setattr(s, name, tuple(float(x) for x in v))
        s.watchdog_hz, s.torque_watchdog_hz = float(s.watchdog_hz), float(s.torque_watchdog_hz)
        if not s.watchdog_hz >= MIN_WATCHDOG_HZ:
            raise ValueError(f"{cfg.path}: ur.watchdog_hz {s.watchdog_hz:g}: at least {MIN_WATCHDOG_HZ:g} Hz (the "
                             f"dead-man: the controller stops the program {1 / MIN_WATCHDOG_HZ:g} s at most after the "
                             f"loop went quiet; a speedJ, a torque, force mode or freedrive would outlive a dead loop)")
        if not s.torque_watchdog_hz >= MIN_TORQUE_WATCHDOG_HZ:
            raise ValueError(f"{cfg.path}: ur.torque_watchdog_hz {s.torque_watchdog_hz:g}: at least "
                             f"{MIN_TORQUE_WATCHDOG_HZ:g} Hz (the script re-applies the last torque until it stops)")
        if cfg.n_arm != 6 or cfg.head_joint:
            raise ValueError(f"{cfg.path}: a UR arm has 6 joints and no head (config: {cfg.n_arm} arm joints, "
                             f"head {cfg.head_joint!r})")
        return s

    def capabilities(self) -> frozenset:
        caps = {INTERFACES[self.interface], Capability.SPEED_SCALING}
        if self.ft_sensor:
            caps.add(Capability.WRENCH)
        if self.interface != "torque":  # (a torque arm's interaction control is the loop's impedance)
            if self.force_mode and self.ft_sensor:
                caps.add(Capability.FORCE_MODE)
            if self.freedrive:
                caps.add(Capability.FREEDRIVE)
        return frozenset(caps)


class _Cancelled(Exception):
    """A chore overtaken by a disable, stop or reset (not an error)."""


class _Worker:
    """Runs the arm's slow chores (power on, brake release, protective stop unlock, script upload) one after
    another beside the loop. A failure is latched with a sequence number (``failures``, ``last_error``) until the
    backend has seen it; a later success does not wipe it."""

    def __init__(self):
        self.jobs: queue.Queue = queue.Queue()
        self.failures = 0
        self.last_error = ""
        self._thread = threading.Thread(target=self._run, daemon=True, name="ur-chores")
        self._thread.start()

    def post(self, job) -> None:
        self.jobs.put(job)

    def _run(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            try:
                job()
            except _Cancelled:
                pass
            except BaseException as e:  # (any failure: the thread must live on for the next chore)
                self.last_error = f"{job.__name__}: {e}"
                self.failures += 1
                print(f"[realtime_loop] UR: {self.last_error}", file=sys.stderr, flush=True)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def close(self, timeout: float = 5.0) -> None:
        self.jobs.put(None)
        self._thread.join(timeout)


RESET_GRACE = 20.0  # s a reset may take to clear a protective stop (the 5 s rule, the unlock, the script)
UNLOCK_RETRY = 7.0  # s the unlock is retried for (the controller refuses it until 5 s after the stop)


class URBackend(Backend):
    """A UR arm: ``options`` may override the config's ``ur`` section (``URSettings.from_config``)."""

    clock = True
    holds_itself = True  # (disabled, the controller holds the arm: the loop's brake setpoint follows it)
    requests = frozenset({"zero_ft_sensor", "set_payload", "tool_contact"})

    def __init__(self, rm, options: dict):
        super().__init__(rm.cfg.all_joints)
        self.settings = s = URSettings.from_config(rm.cfg, options)
        self.capabilities = s.capabilities()
        self.period = 1.0 / s.rate
        self.velocity_mode = s.interface == "velocity"
        self.torque_mode = s.interface == "torque"
        self.lags = s.interface == "position"  # (one cycle per RTDE sample: what the loop missed, ``lag``)
        self.rm = rm
        self._state_seen = None  # the loop's HardwareState (torque: gravity at its joints, once its guards ran)
        self._torque_stamp = -1.0  # the sample the last torque was computed from
        self._g = np.zeros(len(rm.cfg.all_joints))
        self._tau = np.zeros(len(rm.cfg.all_joints))
        self.recv = self.ctrl = self.dash = None
        self.worker: _Worker | None = None
        self.monotonic = time.monotonic
        self._stamp = -1.0
        self._last_seen = 0.0
        # robot state, shared with the worker (``_flags``): the robot wants the arm (``_wanted``); the arm executes
        # commands (``_ready``); ur_rtde's control script is known to run (``_script_ok``: only then do realtime
        # commands go out, which would otherwise spin up to 3 s for a script that is not ours); ``_gen`` counts
        # enable / brake / reset: a chore of an older generation is cancelled
        self._flags = threading.Lock()
        self._wanted = self._ready = self._script_ok = False
        self._gen = 0
        self._paused = False  # the program is paused on the pendant
        self._pause_cleared = False  # ... and its command register was cleared since
        self._streaming = False  # servoJ / speedJ sent since the last stop
        # the controller's own interaction control: forceMode as last sent (axes, wrench, frame) and whether it
        # is on (the loop's thread sets it, a chore's forceModeStop clears it); freedrive asked (loop) and on
        # (set and cleared by the chores that start and end it)
        self._fm_sent = np.zeros((3, 6))
        self._fm_active = self._fm_stopping = False
        self._fm_due = self._fm_age = 0  # forceMode sends still due for a change; cycles since the last one
        self._fm_refresh = max(1, int(round(FORCE_MODE_REFRESH * s.rate)))
        self._fm_limits = [*(s.force_speed[0],) * 3, *(s.force_speed[1],) * 3]
        self._fm_others = [*(s.force_deviation[0],) * 3, *(s.force_deviation[1],) * 3]
        self._free_want = False
        self._free_axes, self._free_frame = np.zeros(6), np.zeros(6)
        self._free_on = False
        self._halt = False  # velocity interface: a zero speedJ is due (the robot was just disabled or stopped)
        self._reset_until = 0.0  # monotonic() until which a reset's chore may still clear a protective stop
        self._resets = 0
        self._estop = False  # the last E-stop state the arm reported (kept while the link is down)
        self._failures_told = 0
        self.chore_error = ""  # the last failed chore's text (a controller error until reset / enable)
        self._why = ""  # why the arm's controller stops us, as last told (the launch's log)
        # while nothing is streamed the watchdog is kicked 4× faster than it needs
        self.watchdog_hz = max(s.watchdog_hz, s.torque_watchdog_hz) if self.torque_mode else s.watchdog_hz
        self._kick_period = 0.25 / self.watchdog_hz if self.watchdog_hz > 0 else 0.0  # s (by the clock: a loop
        self._kicked = -np.inf  # whose cycles run late must not kick less often)
        self.ctrl_lock = threading.Lock()
        self.recv_lock = threading.Lock()

    @classmethod
    def declared(cls, cfg, options: dict) -> frozenset:
        return URSettings.from_config(cfg, options).capabilities()

    # ---- connection --------------------------------------------------------------------------------
    def _receive_interface(self):
        import rtde_receive

        s = self.settings
        return rtde_receive.RTDEReceiveInterface(s.robot_ip, s.rate, VARIABLES)

    def connect(self) -> None:
        """Reach the controller (dashboard, RTDE state at ``rate``); nothing on the robot changes before
        ``enable``."""
        import dashboard_client

        s = self.settings
        end = time.monotonic() + s.startup_timeout
        while True:
            try:
                if self.dash is None:
                    dash = dashboard_client.DashboardClient(s.robot_ip)
                    dash.connect()
                    self.dash = dash
                self.recv = self._receive_interface()
                if self.recv.isConnected():
                    break
            except RuntimeError as e:
                if time.monotonic() > end:
                    raise RuntimeError(f"no UR controller at {s.robot_ip} (RTDE 30004, dashboard 29999) within "
                                       f"{s.startup_timeout:g} s: {e}") from e
            time.sleep(0.5)
        self._stamp = self.recv.getTimestamp()
        self._last_seen = self.monotonic()
        version = _version(self.dash.polyscopeVersion())
        if self.torque_mode and version < DIRECT_TORQUE_SINCE:
            raise RuntimeError(f"ur.interface torque needs PolyScope {'.'.join(map(str, DIRECT_TORQUE_SINCE))}+ "
                               f"(ur_rtde's directTorque); the controller runs {self.dash.polyscopeVersion()!r}: use "
                               f"interface position")
        if Capability.FREEDRIVE in self.capabilities and version < (5, 10):
            self.capabilities = self.capabilities - {Capability.FREEDRIVE}  # (the script's freedrive is 5.10+)
            print(f"[realtime_loop] UR: PolyScope {self.dash.polyscopeVersion()!r} has no freedriveMode (5.10+): "
                  f"a constrained zero-G runs as admittance", file=sys.stderr, flush=True)
        self.worker = _Worker()

    def _chore(self, fn, gen: int | None):
        """``fn(gen)`` as a worker job of generation ``gen`` (None: never cancelled), holding the control
        interface."""
        def job():
            self._check(gen)
            with self.ctrl_lock:
                fn(gen)
        job.__name__ = fn.__name__.strip("_")
        return job

    def _check(self, gen: int | None) -> None:
        if gen is not None and gen != self._gen:
            raise _Cancelled()

    # ---- chores (the worker's thread) ----------------------------------------------------------------
    def _start_script(self, gen: int) -> None:
        """(Re)start ur_rtde's control script (it replaces any program running) and set its watchdog."""
        import rtde_control

        s = self.settings
        self._script_ok = False
        self._fm_active = self._free_on = False  # (both end with the program)
        if self.ctrl is None:
            self.ctrl = rtde_control.RTDEControlInterface(s.robot_ip, s.rate)
        else:
            if not self.ctrl.isConnected():
                self.ctrl.reconnect()
            # the controller keeps its input registers: a script started now would run the last command in them
            # (a servoJ to where a stopped motion was heading). A command sent while no script runs is not sent:
            # ur_rtde clears the command register instead (kickWatchdog: the one with no arguments)
            if not self.ctrl.isProgramRunning():
                self.ctrl.kickWatchdog()
            if not self.ctrl.isProgramRunning() and not self.ctrl.reuploadScript():
                raise RuntimeError("the control script did not start (reuploadScript failed)")
        self._wait_for(lambda: self.recv.getRuntimeState() == RUNTIME_PLAYING, 5.0, "the control script to run",
                       gen)
        self._arm_watchdog()
        self._script_ok = True

    def _script_runs(self) -> bool:
        """ur_rtde's control script is ours and runs."""
        return self._script_ok and self.ctrl is not None and self.ctrl.isProgramRunning()

    def _arm_watchdog(self) -> None:
        if self.watchdog_hz > 0 and not self.ctrl.setWatchdog(self.watchdog_hz):
            raise RuntimeError("setWatchdog refused")

    def _power_up(self, gen: int) -> None:
        """Power on and release the brakes if the arm needs it, start the control script: the arm is ready."""
        r, s = self.recv, self.settings
        mode = r.getRobotMode()
        if mode != ROBOT_RUNNING:
            if not s.power_on:
                raise RuntimeError(f"the arm is not running (robot mode {mode}) and ur.power_on is false: power "
                                   f"it on and release its brakes on the teach pendant")
            if r.getSafetyMode() not in SAFETY_OK:
                raise RuntimeError(f"the arm is in safety mode {r.getSafetyMode()}: reset first")
            if mode == ROBOT_POWER_OFF:
                self.dash.powerOn()
            if mode != ROBOT_IDLE:
                self._wait_for(lambda: r.getRobotMode() == ROBOT_IDLE, s.ready_timeout, "the arm to power on", gen)
            self._check(gen)
            self.dash.brakeRelease()
            self._wait_for(lambda: r.getRobotMode() == ROBOT_RUNNING, s.ready_timeout, "the brakes to release",
                           gen)
        if r.getRuntimeState() in (RUNTIME_PAUSING, RUNTIME_PAUSED):
            raise RuntimeError("the program is paused on the teach pendant: play it there (enable does not "
                               "override the operator)")
        if not self._script_runs():
            self._start_script(gen)
        else:
            self._arm_watchdog()  # (a script ur_rtde restarted by itself after a reconnect runs without it)
            self._end_force_mode(gen)  # (one that failed to end before: nothing moves before the loop asks)
            self._end_freedrive(gen)
        with self._flags:
            self._check(gen)
            self._ready = self._wanted

    def _unlock(self, gen: int) -> None:
        """A reset: reconnect a lost link, unlock a protective stop, restart a stopped control script (the arm
        stays still)."""
        seq = self._resets
        try:
            if not self.recv.isConnected():
                fresh = self._receive_interface()  # (at our rate: ur_rtde's reconnect would reset it)
                with self.recv_lock:
                    old, self.recv = self.recv, fresh
                    self._stamp, self._last_seen = -1.0, self.monotonic()
                old.disconnect()
            r = self.recv
            if self.ctrl is not None and not self.ctrl.isConnected():
                self.ctrl.reconnect()
            if r.getSafetyMode() == SAFETY_PROTECTIVE_STOP:
                end = time.monotonic() + UNLOCK_RETRY
                while True:  # (refused until 5 s after the stop)
                    self._check(gen)
                    try:
                        self.dash.unlockProtectiveStop()
                        break
                    except RuntimeError:
                        if time.monotonic() > end:
                            raise
                        time.sleep(0.5)
                self._wait_for(lambda: r.getSafetyMode() in SAFETY_OK, 3.0, "the protective stop to unlock", gen)
            if r.getRobotMode() == ROBOT_RUNNING and r.getSafetyMode() in SAFETY_OK and not self._script_runs():
                self._start_script(gen)
        finally:
            if seq == self._resets:  # (a newer reset keeps its own grace)
                self._reset_until = 0.0

    def _wait_for(self, cond, timeout: float, what: str, gen: int) -> None:
        end = time.monotonic() + timeout
        while not cond():
            self._check(gen)
            if time.monotonic() > end:
                raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
            time.sleep(0.01)

    def _stop_stream(self) -> None:
        decel = self.settings.stop_deceleration
        if self.torque_mode:
            self.ctrl.stopJ(decel)  # (direct torque ends with a stop of the arm)
        elif self.velocity_mode:
            self.ctrl.speedStop(decel)
        else:
            self.ctrl.servoStop(decel)
        self._streaming = False

    def _stop_motion(self, gen: int) -> None:
        """Stop the stream, end force mode and freedrive (each tried though another fails): the controller holds
        the arm. Without a program there is nothing to end (neither mode outlives it: ``_start_script`` clears
        the flags)."""
        if not self._script_runs():
            return
        try:
            self._stop_stream()
        finally:
            try:
                self._end_force_mode(gen)
            finally:
                self._end_freedrive(gen)

    def _end_force_mode(self, gen: int) -> None:
        """forceModeStop if force mode may be on (after the stream stopped: the script's stopl must not meet its
        servoj); the flag is cleared once the controller took it, so a failed end is tried again."""
        try:
            if (self._fm_active or self._fm_stopping) and self._script_runs():
                self._stop_stream()
                if not self.ctrl.forceModeStop():
                    raise RuntimeError("forceModeStop refused")
                self._fm_active = False
        finally:
            self._fm_stopping = False

    def _freedrive(self, axes: list, feature: list):
        def freedrive(gen):
            """Stop the stream, then freedrive with ``axes`` free in ``feature``."""
            if not self._script_runs():
                return  # (no program: a fault stopped it, and the robot with it)
            self._stop_stream()
            self._end_force_mode(gen)
            self._free_on = True  # (before the call: an end is sent whatever became of it)
            if not self.ctrl.freedriveMode(axes, feature):
                raise RuntimeError(f"freedriveMode {axes} refused")
        return freedrive

    def _end_freedrive(self, gen: int) -> None:
        if self._free_on and self._script_runs():
            if not self.ctrl.endFreedriveMode():
                raise RuntimeError("endFreedriveMode refused")
            self._free_on = False

    # ---- the cycle ---------------------------------------------------------------------------------
    def wait(self, timeout: float) -> bool:
        """Until the next RTDE sample (True) or ``timeout`` s (False)."""
        end = time.monotonic() + timeout
        if not self.recv_lock.acquire(blocking=False):
            time.sleep(timeout)
            return False
        try:
            r = self.recv
            while r.getTimestamp() == self._stamp:
                if time.monotonic() > end:
                    return False
                time.sleep(0.0002)
            return True
        except Exception:  # (a link that failed: read reports it)
            return False
        finally:
            self.recv_lock.release()

    def read(self, state: HardwareState) -> None:
        """The newest sample (ur_rtde's getters allocate a list per vector: the one allocation per cycle this
        backend cannot avoid). A link that fails mid-read keeps the last values and reports the loss."""
        now = self.monotonic()
        if not self.recv_lock.acquire(blocking=False):
            state.fault, state.fault_joint, state.estop = FAULT_LINK_LOST, -1, self._estop  # (being reconnected)
            return
        try:
            r = self.recv
            stamp = r.getTimestamp()
            if stamp != self._stamp:
                ahead = stamp - self._stamp  # (a position arm's servoJ held the last target meanwhile)
                if self.lags and self._stamp >= 0.0 and 0.0 < ahead <= self.settings.link_timeout:
                    self.add_lag(ahead, now - self._last_seen, self.settings.link_timeout)
                self._stamp, self._last_seen = stamp, now
            state.position[:] = r.getActualQ()
            self._state_seen = state
            state.velocity[:] = r.getActualQd()
            if self.settings.ft_sensor:
                state.wrench[:] = r.getActualTCPForce()
            runtime = r.getRuntimeState()
            self._paused = runtime in (RUNTIME_PAUSING, RUNTIME_PAUSED)
            state.speed_scaling = 0.0 if self._paused else r.getSpeedScaling() * r.getTargetSpeedFraction()
            if runtime == RUNTIME_STOPPED:
                self._script_ok = False
            state.fault, state.fault_joint = self._fault(r, now, runtime), -1
        except Exception:  # (ur_rtde raises once its link is closed; a short vector: a broken link too)
            state.fault, state.fault_joint = FAULT_LINK_LOST, -1
        finally:
            self.recv_lock.release()
        state.estop = self._estop

    def _fault(self, r, now: float, runtime: int) -> int:
        if not r.isConnected() or now - self._last_seen > self.settings.link_timeout:
            return FAULT_LINK_LOST
        safety = r.getSafetyMode()
        self._estop = safety in SAFETY_ESTOPS
        if self._estop:
            return FAULT_HARDWARE_ESTOP
        w = self.worker
        if w.failures != self._failures_told:
            self._failures_told = w.failures
            self.chore_error = w.last_error or "a chore failed"
        code, why = 0, ""
        if self.chore_error or not w.alive():
            code = FAULT_CONTROLLER_ERROR  # (the chore's failure was printed by the worker)
        elif safety in SAFETY_STOPS:
            resetting = now < self._reset_until
            code = 0 if resetting and safety == SAFETY_PROTECTIVE_STOP else FAULT_PROTECTIVE_STOP
            why = "" if code == 0 else "a protective / safeguard stop"
        elif safety not in SAFETY_OK:
            code, why = FAULT_CONTROLLER_ERROR, "a safety mode that needs a restart"  # recovery, violation, fault...
        elif self._ready and now >= self._reset_until and (r.getRobotMode() != ROBOT_RUNNING or
                                                            runtime == RUNTIME_STOPPED):
            code, why = FAULT_CONTROLLER_ERROR, "powered off, or the program stopped under us (pendant, watchdog)"
        if why != self._why:  # (an edge: the texts are constants; said on the worker's thread, not the cycle's)
            self._why = why
            if why:
                self._tell(f"the controller reports {why}: safety mode {safety}, robot mode {r.getRobotMode()}, "
                           f"runtime state {runtime}")
        return code

    def _tell(self, text: str) -> None:
        def tell():
            print(f"[realtime_loop] UR: {text}", file=sys.stderr, flush=True)
        self.worker.post(tell)

    def write(self, command: HardwareCommand) -> None:
        """servoJ / speedJ to the control script while the robot is enabled and the program plays; otherwise the
        watchdog is kept fed (the script runs on, holding the arm). A program paused on the pendant is sent nothing
        but, once, the no-command register (``kickWatchdog``): a play must not resume the last speedJ / servoJ /
        torque before the loop's next command (the watchdog is the program's: it does not count the pause)."""
        ctrl = self.ctrl
        if ctrl is None or not self._script_ok or not self.ctrl_lock.acquire(blocking=False):
            return  # (a chore has the control interface: nothing is streamed while one runs)
        try:
            if self._paused:
                if not self._pause_cleared:
                    self._pause_cleared = True
                    ctrl.kickWatchdog()
                return
            self._pause_cleared = False
            slot = self._cartesian(command, ctrl) if self._ready else _IDLE
            if slot == _STREAM:
                s = self.settings
                if self.torque_mode:  # (the controller compensates gravity itself: the loop's torque, less it)
                    ok = self._direct_torque(ctrl, command)
                elif self.velocity_mode:
                    ok = ctrl.speedJ(command.velocity.tolist(), s.speed_acceleration, self.period)
                else:
                    ok = ctrl.servoJ(command.position.tolist(), 0.0, 0.0, self.period, s.servo_lookahead,
                                     s.servo_gain)
                self._streaming = self._streaming or ok
            elif self._halt:  # (at once from here; the stop chore's speedStop / servoStop follows)
                if self.torque_mode:
                    ctrl.kickWatchdog()  # (clears the command register: no torque is asked any more)
                else:
                    ctrl.speedJ([0.0] * 6, self.settings.stop_deceleration, self.period)
                self._halt = False
            elif slot == _IDLE and self._kick_period:
                now = self.monotonic()
                if now - self._kicked >= self._kick_period:
                    self._kicked = now
                    ctrl.kickWatchdog()
        except Exception:
            pass  # (a lost link, or a value ur_rtde refused: read reports the one, the monitors the other)
        finally:
            self.ctrl_lock.release()

    def _direct_torque(self, ctrl, command: HardwareCommand) -> bool:
        """The loop's torque less the controller's gravity compensation, at the joints as the loop saw them
        (repaired by its guards), for a new sample only: the script applies a torque for as long as it stays in
        the register. A cycle that finds no new sample (the loop ran ahead of RTDE) leaves the last torque there
        while its sample is at most ``TORQUE_STALE_PERIODS`` periods old — a torque one sample late, as any torque
        loop's; clearing it put the arm into the script's position hold for that cycle, and a loaded loop's
        holds stiffened its impedance (596 N/m asked 500, CI stop 40). Older feedback, or a torque that is not
        finite: nothing is asked (the register cleared)."""
        st = self._state_seen
        if st is None or self._stamp == self._torque_stamp:
            if st is None or self.monotonic() - self._last_seen > TORQUE_STALE_PERIODS * self.period:
                ctrl.kickWatchdog()  # (clears the register: no torque)
            return False
        self._torque_stamp = self._stamp
        self.rm.gravity(st.position, out=self._g)
        np.subtract(command.effort, self._g, out=self._tau)
        if not np.isfinite(self._tau).all():
            ctrl.kickWatchdog()
            return False
        return ctrl.directTorque(self._tau.tolist(), NO_FRICTION, NO_FRICTION)

    def _cartesian(self, command: HardwareCommand, ctrl) -> int:
        """Force mode and freedrive as ``command`` asks (the loop's thread, the control interface held): what
        this cycle's command slot is for: ``_STREAM`` (servoJ / speedJ), ``_SENT`` (a forceMode went instead),
        ``_IDLE`` (in or near freedrive, or a chore was posted: nothing streamed, the watchdog kicked)."""
        if not np.isfinite(command.cartesian).all():  # (never: the loop's rows are finite; if not, neither mode)
            command.cartesian[:] = 0.0
        free = command.free_axes
        if free.any():
            if not self._free_want or not np.array_equal(free, self._free_axes) or \
                    not np.array_equal(command.free_frame, self._free_frame):
                self._free_want = True
                self._free_axes[:], self._free_frame[:] = free, command.free_frame
                axes = [int(x) for x in free]
                self.worker.post(self._chore(self._freedrive(axes, command.free_frame.tolist()), None))
            return _IDLE
        if self._free_want:
            self._free_want = False
            self.worker.post(self._chore(self._end_freedrive, None))
            return _IDLE
        if self._free_on or self._fm_stopping:
            return _IDLE  # (freedrive or force mode is being ended)
        axes = command.force_axes
        if axes.any():
            # (a command the script's cycle does not see before the next one overwrites it is lost: new axes are
            # sent twice, and the same again every ``FORCE_MODE_REFRESH`` s)
            sent = self._fm_sent
            self._fm_age += 1
            if not (self._fm_active and np.array_equal(axes, sent[0])):
                self._fm_due = 2  # (new axes: at once)
            elif self._fm_age >= FORCE_MODE_GAP and (np.abs(command.force_wrench - sent[1]).max() > WRENCH_CHANGED
                                                      or _moved(command.force_frame, sent[2], bool(axes[3:].any()))):
                self._fm_due = 1  # (a wrench or frame that moves on: the next change or refresh makes up a loss)
            elif self._fm_due == 0 and self._fm_age < self._fm_refresh:
                return _STREAM
            limits = [lim if a else other for a, lim, other in zip(axes, self._fm_limits, self._fm_others)]
            if ctrl.forceMode(command.force_frame.tolist(), [int(a) for a in axes], command.force_wrench.tolist(),
                              FORCE_MODE_TYPE, limits):
                sent[0], sent[1], sent[2] = axes, command.force_wrench, command.force_frame
                self._fm_active = True
                self._fm_due, self._fm_age = max(self._fm_due - 1, 0), 0
            return _SENT
        if self._fm_active:
            self._fm_stopping = True  # (the stream resumes after the chore's forceModeStop)
            self.worker.post(self._chore(self._end_force_mode, None))
            return _IDLE
        return _STREAM

    # ---- requests to the controller (worker) ---------------------------------------------------------
    def request(self, rid: float, code: int, args) -> None:
        """zeroFtSensor / setPayload / toolContact through the control script (it must run: the robot enabled
        once); answered in ``answers``."""
        def ask(_gen):
            ctrl = self.ctrl
            if ctrl is None or not self._script_ok:
                self.answers.append((rid, float(ARM_RESULT_FAILED), -1.0))  # (-1: no control script)
                return
            value = 0.0
            if code == ARM_ZERO_FT:
                ok = ctrl.zeroFtSensor()
            elif code == ARM_SET_PAYLOAD:
                ok = ctrl.setPayload(float(args[0]), [float(x) for x in args[1:4]])
            elif code == ARM_TOOL_CONTACT and self.torque_mode and self._ready:  # (it would take the register
                self.answers.append((rid, float(ARM_RESULT_ENABLED), 0.0))  # from the torque: disabled only)
                return
            elif code == ARM_TOOL_CONTACT:  # (ur_rtde reads the answer before the script has made it: the
                direction = [float(x) for x in args[:6]]  # second call reads the first one's)
                ctrl.toolContact(direction)
                self.ctrl_lock.release()  # (the loop streams on meanwhile)
                try:
                    time.sleep(3.0 * self.period)
                finally:
                    self.ctrl_lock.acquire()
                value, ok = float(ctrl.toolContact(direction)), True
            else:
                self.answers.append((rid, float(ARM_RESULT_UNSUPPORTED), 0.0))
                return
            self.answers.append((rid, float(ARM_RESULT_OK if ok else ARM_RESULT_FAILED), value))

        job = self._chore(ask, None)

        def answered():  # (a request that fails is answered so; it is no fault of the robot's)
            try:
                job()
            except Exception as e:
                print(f"[realtime_loop] UR: request {code} failed: {e}", file=sys.stderr, flush=True)
                self.answers.append((rid, float(ARM_RESULT_FAILED), 0.0))
        self.worker.post(answered)

    # ---- robot state (the loop's thread) -------------------------------------------------------------
    def ready(self) -> bool:
        return self._ready and not self._paused

    def _next(self, wanted: bool) -> int:
        with self._flags:
            self._gen += 1
            self._wanted = wanted
            if not wanted:
                self._ready = False
            return self._gen

    def enable(self) -> None:
        self.chore_error = ""
        gen = self._next(True)
        if self.worker is not None:
            self.worker.post(self._chore(self._power_up, gen))

    def brake(self) -> None:
        """Stop streaming and stop the arm (servoStop / speedStop: the controller holds it); a power-up under way
        is cancelled."""
        self._next(False)
        self._halt = (self.velocity_mode or self.torque_mode) and self._streaming
        busy = self._streaming or self._fm_active or self._free_want or self._free_on
        self._free_want = False
        if busy and self.worker is not None:
            self._streaming = False
            self.worker.post(self._chore(self._stop_motion, None))  # (never cancelled: a speedJ would run on)

    def reset(self) -> None:
        """Cancels a power-up under way; the reset's own chore is not cancelled (an enable right after it waits
        for it)."""
        self.chore_error = ""
        self._resets += 1
        self._reset_until = self.monotonic() + RESET_GRACE
        self._next(False)
        if self.worker is not None:
            self.worker.post(self._chore(self._unlock, None))

    def close(self) -> None:
        """Stop the motion (``brake``'s chore, waited for), stop the control script (its watchdog would, the program
        being left without its client: a stop some controllers report as a protective stop), disconnect."""
        self.brake()
        if self.worker is not None:
            self.worker.close()
        if self.ctrl_lock.acquire(timeout=5.0):
            try:
                if self.ctrl is not None and self._script_ok:
                    try:
                        if self.ctrl.isProgramRunning():
                            self.ctrl.stopScript()
                    except Exception as e:  # (a lost link: the watchdog stops it)
                        print(f"[realtime_loop] UR: stopScript on close: {e}", file=sys.stderr, flush=True)
                    self._script_ok = False
                for link in (self.ctrl, self.recv, self.dash):
                    if link is not None:
                        try:
                            link.disconnect()
                        except RuntimeError:
                            pass
            finally:
                self.ctrl_lock.release()


def _version(text: str) -> tuple:
    """(major, minor) of a dashboard ``PolyscopeVersion`` reply ("URSoftware 5.11.1.108318 (...)"); (0, 0) if
    there is none."""
    m = re.search(r"(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _moved(frame: np.ndarray, sent: np.ndarray, origin: bool) -> bool:
    """A task frame (position, rotation vector) further than ``FRAME_MOVED`` from the one sent (its position
    counts only with compliant rotations: ``origin``; they are about it)."""
    dr = frame[3:] - sent[3:]
    if float(dr @ dr) > FRAME_MOVED[1] ** 2:
        return True
    dp = frame[:3] - sent[:3]
    return origin and float(dp @ dp) > FRAME_MOVED[0] ** 2
