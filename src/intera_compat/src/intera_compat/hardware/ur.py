"""Universal Robots arms (e-Series at 500 Hz, CB3 at 125 Hz) through PyPI ``ur_rtde``.

``RTDEReceiveInterface`` brings the arm's state at the robot's rate (the arm is the clock: one loop cycle per
RTDE sample); ``RTDEControlInterface`` uploads ur_rtde's control script (port 30003) and streams to it:
``servoJ`` every cycle (``interface: position``; lookahead and gain in config) or ``speedJ``
(``interface: velocity``), ``servoStop`` / ``speedStop`` when the robot is disabled or stopped, and the RTDE
watchdog (the controller stops the program if nothing comes for ``1 / watchdog_hz``: a dead loop stops the
arm); ``DashboardClient`` powers the arm on, releases its brakes and unlocks protective stops.

* Speed scaling: ``speed_scaling`` × ``target_speed_fraction`` (the teach pendant's slider; 0 while the program
  is paused) is the trajectory time base's factor: the slider at 0 pauses a trajectory, it does not abort it.
* Faults (``read``): no new RTDE sample for ``link_timeout`` s → link lost; safety mode protective stop or
  safeguard stop → protective stop; an emergency stop → hardware E-stop (the robot's E-stop button); a safety
  fault or violation, or — while enabled — the arm leaving RUNNING or its program leaving PLAYING (stopped on
  the pendant, the watchdog) → controller error.
* Enable: an arm that is powered off or braked is powered on and its brakes released (``power_on``), then the
  control script is (re)started; this runs beside the loop (``_Worker``: ur_rtde releases the GIL while it
  waits) and the robot reports itself enabled once the arm executes commands (``ready``). Reset: unlock a
  protective stop on the dashboard, then restart the control script.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass

import numpy as np

from ..safety.faults import (FAULT_CONTROLLER_ERROR, FAULT_HARDWARE_ESTOP, FAULT_LINK_LOST,
                             FAULT_PROTECTIVE_STOP)
from .base import Backend, Capability, CommandMode, HardwareCommand, HardwareState

# the controller's numbers (RTDE robot_mode, safety_mode, runtime_state)
ROBOT_POWER_OFF, ROBOT_IDLE, ROBOT_RUNNING = 3, 5, 7
SAFETY_NORMAL, SAFETY_REDUCED, SAFETY_PROTECTIVE_STOP, SAFETY_SAFEGUARD_STOP = 1, 2, 3, 5
SAFETY_SYSTEM_ESTOP, SAFETY_ROBOT_ESTOP, SAFETY_VIOLATION, SAFETY_FAULT = 6, 7, 8, 9
RUNTIME_STOPPED, RUNTIME_PLAYING, RUNTIME_PAUSING, RUNTIME_PAUSED = 1, 2, 3, 4
INTERFACES = {"position": Capability.POSITION, "velocity": Capability.VELOCITY}
# what the loop reads from the arm (RTDEReceiveInterface's output recipe)
VARIABLES = ["timestamp", "actual_q", "actual_qd", "actual_TCP_force", "speed_scaling", "target_speed_fraction",
             "robot_mode", "safety_mode", "runtime_state", "safety_status_bits", "robot_status_bits"]


@dataclass
class URSettings:
    """``ur`` in the robot config (launch arguments override ``robot_ip``, ``rate``, ``link_timeout``)."""

    robot_ip: str = "127.0.0.1"
    rate: float = 500.0  # Hz: RTDE and the loop (e-Series 500, CB3 125)
    interface: str = "position"  # position: servoJ each cycle; velocity: speedJ each cycle
    servo_lookahead: float = 0.1  # s, servoJ lookahead_time (0.03 .. 0.2)
    servo_gain: float = 300.0  # servoJ gain (100 .. 2000)
    speed_acceleration: float = 4.0  # rad/s², speedJ's acceleration towards each new velocity
    stop_deceleration: float = 10.0  # rad/s², servoStop / speedStop
    watchdog_hz: float = 10.0  # the RTDE watchdog's minimum input rate (0: off)
    link_timeout: float = 0.05  # s without a new RTDE sample: the link is lost
    power_on: bool = True  # enable powers the arm on and releases its brakes if it needs it
    ft_sensor: bool = True  # the arm measures the TCP wrench (e-Series): interaction control by admittance
    startup_timeout: float = 30.0  # s to reach the controller and get its first sample
    ready_timeout: float = 30.0  # s for power on + brake release + control script start

    @classmethod
    def from_config(cls, cfg, overrides: dict | None = None) -> "URSettings":
        raw = {**dict(cfg.raw.get("ur") or {}), **{k: v for k, v in (overrides or {}).items() if v not in ("", None)}}
        unknown = sorted(set(raw) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"{cfg.path}: ur has unknown keys {unknown}")
        s = cls(**raw)
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
        if cfg.n_arm != 6 or cfg.head_joint:
            raise ValueError(f"{cfg.path}: a UR arm has 6 joints and no head (config: {cfg.n_arm} arm joints, "
                             f"head {cfg.head_joint!r})")
        return s

    def capabilities(self) -> frozenset:
        caps = {INTERFACES[self.interface], Capability.SPEED_SCALING}
        if self.ft_sensor:
            caps.add(Capability.WRENCH)
        return frozenset(caps)


class _Worker:
    """Runs the arm's slow chores (power on, brake release, protective stop unlock, script upload) one after
    another beside the loop; ``busy`` while one is queued or running, ``error`` what the last one failed of."""

    def __init__(self):
        self.jobs: queue.Queue = queue.Queue()
        self.busy = 0
        self.error = ""
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True, name="ur-chores")
        self._thread.start()

    def post(self, job) -> None:
        with self._lock:
            self.busy += 1
        self.jobs.put(job)

    def _run(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            try:
                job()
                self.error = ""
            except Exception as e:  # (reported as a controller error by the backend, with this text logged)
                self.error = f"{getattr(job, '__name__', 'job')}: {e}"
            with self._lock:
                self.busy -= 1

    def close(self) -> None:
        self.jobs.put(None)
        self._thread.join(2.0)


class URBackend(Backend):
    """A UR arm: ``options`` may override the config's ``ur`` section (``robot_ip``, ``rate``, ``link_timeout``)."""

    clock = True

    def __init__(self, rm, options: dict):
        super().__init__(rm.cfg.all_joints)
        self.settings = s = URSettings.from_config(rm.cfg, options)
        self.capabilities = s.capabilities()
        self.period = 1.0 / s.rate
        self.velocity_mode = s.interface == "velocity"
        self.recv = self.ctrl = self.dash = None
        self.worker: _Worker | None = None
        self.monotonic = time.monotonic
        self._stamp = -1.0
        self._last_seen = 0.0
        self._wanted = False  # the robot is enabled: the arm is to execute commands
        self._streaming = False  # servoJ / speedJ sent since the last stop
        self._ready = False  # the control script runs and commands reach it
        self._resetting = False  # a reset's chores run: the faults they clear are not reported meanwhile
        # while nothing is streamed the watchdog is kicked 4× faster than it needs
        self._kick_every = max(1, int(s.rate / (4.0 * s.watchdog_hz))) if s.watchdog_hz > 0 else 0
        self._cycle = 0
        self.chore_error = ""  # the last chore's failure (a controller error fault while set)
        # one user of the control interface at a time (its command handshake is not thread-safe): the worker
        # holds it for a chore; the loop never waits for it (a cycle that finds it taken sends nothing)
        self.ctrl_lock = threading.Lock()

    @classmethod
    def declared(cls, cfg, options: dict) -> frozenset:
        return URSettings.from_config(cfg, options).capabilities()

    # ---- connection --------------------------------------------------------------------------------
    def connect(self) -> None:
        import dashboard_client
        import rtde_receive

        s = self.settings
        end = time.monotonic() + s.startup_timeout
        while True:
            try:
                self.dash = dashboard_client.DashboardClient(s.robot_ip)
                self.dash.connect()
                self.recv = rtde_receive.RTDEReceiveInterface(s.robot_ip, s.rate, VARIABLES)
                if self.recv.isConnected():
                    break
            except RuntimeError as e:
                if time.monotonic() > end:
                    raise RuntimeError(f"no UR controller at {s.robot_ip} (RTDE 30004, dashboard 29999) within "
                                       f"{s.startup_timeout:g} s: {e}") from e
            time.sleep(0.5)
        self._stamp = self.recv.getTimestamp()
        self._last_seen = self.monotonic()
        self.worker = _Worker()
        if self._arm_running():  # an arm that runs already gets the control script now (no motion)
            self.worker.post(self._chore(self._start_script))

    def _chore(self, fn):
        """``fn`` as a worker job, holding the control interface."""
        def job():
            with self.ctrl_lock:
                fn()
        job.__name__ = fn.__name__.strip("_")
        return job

    def _arm_running(self) -> bool:
        r = self.recv
        return r.getRobotMode() == ROBOT_RUNNING and r.getSafetyMode() in (SAFETY_NORMAL, SAFETY_REDUCED)

    # ---- chores (the worker's thread) ----------------------------------------------------------------
    def _start_script(self) -> None:
        """(Re)start ur_rtde's control script and set its watchdog."""
        import rtde_control

        s = self.settings
        if self.ctrl is None:
            self.ctrl = rtde_control.RTDEControlInterface(s.robot_ip, s.rate)
        elif not self.ctrl.isProgramRunning():
            if not self.ctrl.isConnected():
                self.ctrl.reconnect()
            if not self.ctrl.reuploadScript():
                raise RuntimeError("the control script did not start (reuploadScript failed)")
        self._wait_for(lambda: self.recv.getRuntimeState() == RUNTIME_PLAYING, 5.0, "the control script to run")
        if s.watchdog_hz > 0 and not self.ctrl.setWatchdog(s.watchdog_hz):
            raise RuntimeError("setWatchdog refused")

    def _power_up(self) -> None:
        """Power on and release the brakes if the arm needs it, then make sure the control script runs."""
        r, s = self.recv, self.settings
        if r.getRobotMode() != ROBOT_RUNNING:
            if not s.power_on:
                raise RuntimeError(f"the arm is not running (robot mode {r.getRobotMode()}) and ur.power_on is "
                                   f"false: power it on and release its brakes on the teach pendant")
            if r.getRobotMode() == ROBOT_POWER_OFF:
                self.dash.powerOn()
                self._wait_for(lambda: r.getRobotMode() == ROBOT_IDLE, s.ready_timeout, "the arm to power on")
            self.dash.brakeRelease()
            self._wait_for(lambda: r.getRobotMode() == ROBOT_RUNNING, s.ready_timeout, "the brakes to release")
        if self.ctrl is None or not self.ctrl.isProgramRunning():
            self._start_script()
        self._ready = self._wanted

    def _unlock(self) -> None:
        """A reset: reconnect a lost link, unlock a protective stop, restart a stopped control script (the arm
        stays still)."""
        try:
            r = self.recv
            if not r.isConnected():
                r.reconnect()
            if self.ctrl is not None and not self.ctrl.isConnected():
                self.ctrl.reconnect()
            if r.getSafetyMode() == SAFETY_PROTECTIVE_STOP:
                self.dash.unlockProtectiveStop()
                self._wait_for(lambda: r.getSafetyMode() == SAFETY_NORMAL, 10.0, "the protective stop to unlock")
            self.chore_error = ""
            if self._arm_running() and (self.ctrl is None or not self.ctrl.isProgramRunning()):
                self._start_script()
        finally:
            self._resetting = False

    def _wait_for(self, cond, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > end:
                raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
            time.sleep(0.01)

    def _stop_motion(self) -> None:
        ctrl = self.ctrl
        if ctrl is not None and ctrl.isProgramRunning():
            decel = self.settings.stop_deceleration
            ctrl.speedStop(decel) if self.velocity_mode else ctrl.servoStop(decel)

    # ---- the cycle ---------------------------------------------------------------------------------
    def wait(self, timeout: float) -> bool:
        """Until the next RTDE sample (True) or ``timeout`` s (False)."""
        r, end = self.recv, time.monotonic() + timeout
        while r.getTimestamp() == self._stamp:
            if time.monotonic() > end:
                return False
            time.sleep(0.0002)
        return True

    def read(self, state: HardwareState) -> None:
        """The newest sample (ur_rtde's getters allocate a list per vector: the one allocation per cycle this
        backend cannot avoid). A link that fails mid-read keeps the last values and reports the loss."""
        r = self.recv
        now = self.monotonic()
        try:
            stamp = r.getTimestamp()
            if stamp != self._stamp:
                self._stamp, self._last_seen = stamp, now
            state.position[:] = r.getActualQ()
            state.velocity[:] = r.getActualQd()
            if self.settings.ft_sensor:
                state.wrench[:] = r.getActualTCPForce()
            runtime = r.getRuntimeState()
            paused = runtime in (RUNTIME_PAUSING, RUNTIME_PAUSED)
            state.speed_scaling = 0.0 if paused else r.getSpeedScaling() * r.getTargetSpeedFraction()
            state.fault, state.fault_joint = self._fault(r, now, runtime), -1
        except RuntimeError:  # (ur_rtde raises once its link is closed)
            state.fault, state.fault_joint = FAULT_LINK_LOST, -1

    def _fault(self, r, now: float, runtime: int) -> int:
        if not r.isConnected() or now - self._last_seen > self.settings.link_timeout:
            return FAULT_LINK_LOST
        safety = r.getSafetyMode()
        if safety in (SAFETY_SYSTEM_ESTOP, SAFETY_ROBOT_ESTOP):
            return FAULT_HARDWARE_ESTOP
        if self._resetting:
            return 0
        if safety in (SAFETY_PROTECTIVE_STOP, SAFETY_SAFEGUARD_STOP):
            return FAULT_PROTECTIVE_STOP
        if safety in (SAFETY_VIOLATION, SAFETY_FAULT) or self.chore_error:
            return FAULT_CONTROLLER_ERROR
        if self._ready and (r.getRobotMode() != ROBOT_RUNNING or runtime not in (RUNTIME_PLAYING, RUNTIME_PAUSING,
                                                                                  RUNTIME_PAUSED)):
            return FAULT_CONTROLLER_ERROR  # powered off or the program stopped (pendant, watchdog) under us
        err = self.worker.error if self.worker is not None else ""
        if err and not self.worker.busy:
            self.chore_error = err
            self.worker.error = ""
            return FAULT_CONTROLLER_ERROR
        return 0

    def write(self, command: HardwareCommand) -> None:
        """servoJ / speedJ to the control script while the robot is enabled; otherwise the watchdog is kept fed
        (the script runs on, holding the arm)."""
        ctrl = self.ctrl
        if ctrl is None or not self.ctrl_lock.acquire(blocking=False):
            return  # (a chore has it: nothing is streamed while one runs)
        try:
            if self._ready:
                s = self.settings
                if self.velocity_mode:
                    ok = ctrl.speedJ(command.velocity.tolist(), s.speed_acceleration, self.period)
                else:
                    ok = ctrl.servoJ(command.position.tolist(), 0.0, 0.0, self.period, s.servo_lookahead,
                                     s.servo_gain)
                self._streaming = self._streaming or ok
            elif self._kick_every:
                self._cycle += 1
                if self._cycle % self._kick_every == 0 and self.recv.getRuntimeState() == RUNTIME_PLAYING:
                    ctrl.kickWatchdog()
        except RuntimeError:
            pass  # (a lost link: read reports it)
        finally:
            self.ctrl_lock.release()

    # ---- robot state ---------------------------------------------------------------------------------
    def ready(self) -> bool:
        return self._ready

    def enable(self) -> None:
        self._wanted = True
        self.chore_error = ""
        if self.worker is not None:
            self.worker.post(self._chore(self._power_up))

    def brake(self) -> None:
        """Stop streaming and stop the arm (servoStop / speedStop): the controller holds it."""
        self._wanted = self._ready = False
        if self._streaming and self.worker is not None:
            self._streaming = False
            self.worker.post(self._chore(self._stop_motion))

    def reset(self) -> None:
        self._resetting = True
        self.chore_error = ""
        if self.worker is not None:
            self.worker.post(self._chore(self._unlock))

    def close(self) -> None:
        self.brake()
        if self.worker is not None:
            self.worker.close()
        for link in (self.ctrl, self.recv):
            if link is not None:
                try:
                    link.disconnect()
                except RuntimeError:
                    pass
        if self.dash is not None:
            self.dash.disconnect()
