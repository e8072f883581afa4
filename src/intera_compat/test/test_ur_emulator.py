"""The UR controller emulator (``python -m intera_compat.emulator``) against the real ur_rtde client: RTDE data
(the MuJoCo UR5e's joints and tool pose, modes, status bits, at the requested rate), the Dashboard's power / brake /
program / protective-stop state machine, refusals a real controller gives, and its fault injection.

The controller's clock is the wall clock (and a stalled emulator does not replay the cycles it missed): a check waits
for what it checks (a generous wall-clock guard), rates are read from the controller's own speeds, not from how far
the arm got in a sleep."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import EMULATOR_HOST

dashboard_client = pytest.importorskip("dashboard_client")
rtde_receive = pytest.importorskip("rtde_receive")

from intera_compat.config import load_config  # noqa: E402
from intera_compat.emulator.ur_controller import default_config  # noqa: E402
from intera_compat.model import RobotModel  # noqa: E402

HOST = EMULATOR_HOST
GUARD = 60.0  # s of wall time a check waits for what it checks


def until(cond, timeout: float = GUARD, period: float = 0.01) -> bool:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            return bool(cond())
        time.sleep(period)
    return True


@pytest.fixture
def emulator():
    proc = subprocess.Popen([sys.executable, "-m", "intera_compat.emulator", "--host", HOST], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    line = proc.stdout.readline().decode()  # (printed once both servers listen)
    assert "UR controller emulator" in line, line
    db = dashboard_client.DashboardClient(HOST)
    db.connect()
    yield db
    db.disconnect()
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(10)


def inject(db, what: str) -> None:
    """The emulator's fault injection, through the dashboard's raw send / receive."""
    db.send(f"emulator {what}\n")
    assert db.receive().startswith("emulator"), what


def receive(**kw):
    rr = rtde_receive.RTDEReceiveInterface(HOST, **kw)
    assert rr.isConnected()
    return rr


def test_rtde_reports_the_simulated_arm_at_the_requested_rate(emulator):
    cfg = load_config(default_config())
    rr = receive()
    q = np.array(rr.getActualQ())
    assert q == pytest.approx(cfg.full_pose("neutral")[:6], abs=1e-3)  # at rest, the brakes on
    x = RobotModel(cfg).fk(np.asarray(q), cfg.tips[0])
    assert np.array(rr.getActualTCPPose()[:3]) == pytest.approx(x.translation, abs=1e-4)
    assert rr.getRobotMode() == 3 and rr.getSafetyMode() == 1  # POWER_OFF, NORMAL
    # the controller's clock, in seconds: it runs (and never ahead of the wall clock it is read on; the first reading
    # may be a package old, by 0.1 s at most once the client reads again)
    t0, w0 = rr.getTimestamp(), time.monotonic()
    assert until(lambda: rr.getTimestamp() > t0 + 0.5)
    assert 0.5 < rr.getTimestamp() - t0 <= time.monotonic() - w0 + 0.1
    rr.disconnect()
    few = receive(frequency=50.0, variables=["timestamp", "actual_q", "runtime_state"])
    assert few.getActualQ() == pytest.approx(list(q), abs=1e-3)
    few.disconnect()


def test_an_unknown_variable_is_refused_as_by_a_real_controller(emulator):
    with pytest.raises(RuntimeError, match="not found"):
        rtde_receive.RTDEReceiveInterface(HOST, variables=["actual_q", "flux_capacitor"])


def test_dashboard_power_brakes_program_and_protective_stop(emulator):
    db = emulator
    rr = receive()
    assert "POWER_OFF" in db.robotmode()
    with pytest.raises(RuntimeError):
        db.play()  # no program runs on an arm that is off: "Failed to execute: play"
    db.powerOn()
    assert "IDLE" in db.robotmode()
    db.brakeRelease()
    assert "RUNNING" in db.robotmode()
    db.play()
    assert db.running()
    assert until(lambda: rr.getRuntimeState() == 2 and rr.getRobotStatus() & 3 == 3)  # PLAYING; on, running
    inject(db, "protective stop")
    assert until(lambda: rr.isProtectiveStopped())
    t_stop = rr.getTimestamp()
    assert rr.isProtectiveStopped() and rr.getSafetyMode() == 3 and not db.running()
    with pytest.raises(RuntimeError):
        db.play()
    try:
        db.unlockProtectiveStop()  # refused until 5 s after the stop, as by a real controller
        unlocked = rr.getTimestamp()
    except Exception as e:
        assert "Unlock protective stop failure" in str(e)
        unlocked = None
    # (refused unless this process stalled past the 5 s: the controller's clock says)
    assert unlocked is None or unlocked - t_stop > 4.9, f"unlocked {unlocked - t_stop:.3f} s after the stop"

    def unlock() -> bool:
        try:
            db.unlockProtectiveStop()
            return True
        except Exception as e:
            assert "Unlock protective stop failure" in str(e)
            return False
    assert unlocked is not None or until(unlock, period=0.2)
    assert until(lambda: not rr.isProtectiveStopped()) and "NORMAL" in db.safetymode()
    with pytest.raises(Exception, match="Unlock protective stop failure"):
        db.unlockProtectiveStop()  # nothing to unlock
    rr.disconnect()


def test_emergency_stop_and_a_silent_link(emulator):
    db = emulator
    rr = receive()
    db.powerOn()
    db.brakeRelease()
    inject(db, "estop on")
    assert until(lambda: rr.isEmergencyStopped())
    assert "POWER_OFF" in db.robotmode()
    inject(db, "estop off")
    assert until(lambda: not rr.isEmergencyStopped())
    assert "POWER_OFF" in db.robotmode()  # released: still off until powered on
    inject(db, "rtde silent on")
    assert rr.isConnected()
    assert until(lambda: not rr.isConnected(), period=0.1)  # the client's 2.5 s read timeout: no more data


rtde_control = pytest.importorskip("rtde_control")


@pytest.fixture
def running(emulator):
    """Powered, brakes released, ur_rtde's control script uploaded and running; yields (control, receive)."""
    emulator.powerOn()
    emulator.brakeRelease()
    rr = receive()
    rc = rtde_control.RTDEControlInterface(HOST)
    assert rc.isConnected() and rc.isProgramRunning()
    yield rc, rr, emulator
    rc.disconnect()
    rr.disconnect()


def test_move_servo_and_speed_commands_drive_the_arm(running):
    rc, rr, _ = running
    q0 = np.array(rr.getActualQ())
    q1 = q0 + np.array([0.3, 0.0, 0.0, 0.2, 0.0, 0.0])
    assert rc.moveJ(list(q1), 1.0, 1.4)  # blocking: back when the controller reports it done
    assert np.array(rr.getActualQ()) == pytest.approx(q1, abs=2e-3)
    for k in range(1, 251):  # servoJ at 125 Hz: a 0.1 rad ramp on the base joint
        t = rc.initPeriod()
        assert rc.servoJ(list(q1 + np.array([0.1 * k / 250, 0, 0, 0, 0, 0])), 0.5, 0.5, 0.008, 0.1, 300)
        rc.waitPeriod(t)
    assert rc.servoStop()
    assert until(lambda: abs(rr.getActualQd()[0]) < 1e-3)
    assert rr.getActualQ()[0] == pytest.approx(q1[0] + 0.1, abs=0.01)
    base = rr.getActualQ()[0]
    assert rc.speedJ([0.2, 0, 0, 0, 0, 0], 0.5, 0.0)
    assert until(lambda: rr.getActualQ()[0] > base + 0.1)
    assert rr.getActualQd()[0] == pytest.approx(0.2, abs=0.02)  # (past the 0.4 s ramp: at the commanded speed)
    assert rc.speedStop()
    assert until(lambda: abs(rr.getActualQd()[0]) < 1e-3)
    rc.stopScript()  # (returns nothing)
    assert rr.getRuntimeState() == 1 and not rc.moveJ(list(q0), 1.0, 1.4)  # no program: refused, nothing moves
    assert np.abs(np.array(rr.getActualQd())).max() < 1e-3


def test_a_protective_stop_ends_a_motion_and_the_program(running):
    rc, rr, db = running
    q0 = np.array(rr.getActualQ())
    assert rc.moveJ(list(q0 + np.array([0, 0, 0, 0, 0, 1.5])), 0.25, 1.0, True)  # asynchronous (6 s)
    assert until(lambda: rr.getActualQd()[5] > 0.1)  # under way
    inject(db, "protective stop")
    assert until(lambda: rr.isProtectiveStopped() and abs(rr.getActualQd()[5]) < 1e-4)
    q_stop = np.array(rr.getActualQ())
    time.sleep(0.5)
    assert np.abs(np.array(rr.getActualQ()) - q_stop).max() < 1e-3 and abs(q_stop[5] - q0[5]) < 1.2
    assert rr.isProtectiveStopped() and rr.getRuntimeState() == 1
    assert not rc.servoJ(list(q_stop), 0.5, 0.5, 0.008, 0.1, 300)  # the program ended with the stop


def test_the_rtde_watchdog_stops_the_program_when_the_client_goes_quiet(running):
    rc, rr, _ = running
    assert rc.setWatchdog(0.5)  # (2 s between kicks stops it: a stall of this process shorter than that does not)
    for _ in range(20):  # kicked at 20 Hz for a second
        rc.kickWatchdog()
        time.sleep(0.05)
    assert rr.getRuntimeState() == 2
    # quiet: the controller stops the program (the arm holds)
    assert until(lambda: rr.getRuntimeState() == 1) and not rc.isProgramRunning()


def test_the_speed_slider_slows_the_controllers_own_motion_and_is_reported(running):
    rc, rr, db = running
    q0 = np.array(rr.getActualQ())
    inject(db, "slider 0.5")
    assert until(lambda: rr.getTargetSpeedFraction() == pytest.approx(0.5))  # (the next data package)
    assert rc.speedJ([0.2, 0, 0, 0, 0, 0], 1.0, 0.0)
    assert until(lambda: rr.getActualQ()[0] > q0[0] + 0.02)  # (past the ramp: 0.2 s at half the acceleration)
    assert rr.getActualQd()[0] == pytest.approx(0.1, abs=0.01)  # half the commanded speed
    inject(db, "slider 0")
    assert until(lambda: abs(rr.getActualQd()[0]) < 1e-3)
    assert rr.getActualQ()[0] > q0[0]  # stopped where it got to, not aborted
    assert rc.isProgramRunning()
    assert rc.speedStop()


def mode(db) -> str:
    db.send("emulator mode\n")
    return db.receive()


def tcp(rr) -> np.ndarray:
    return np.array(rr.getActualTCPPose()[:3])


def test_force_mode_regulates_the_compliant_axis_and_the_others_follow_the_program(running):
    rc, rr, db = running
    x0, q0 = tcp(rr), rr.getActualQ()
    # +10 N along base z, at most 0.05 m/s there; nothing pushes back: the tool rises at the speed limit
    assert rc.forceMode([0.0] * 6, [0, 0, 1, 0, 0, 0], [0, 0, 10.0, 0, 0, 0], 2, [0.1, 0.1, 0.03, 1, 1, 1])
    time.sleep(0.01)  # (a register the script's 2 ms cycle has not read yet is overwritten by the next command)
    speeds = []
    for _ in range(250):  # (servoJ to where the arm was: the program holds x, y and the orientation)
        t = rc.initPeriod()
        rc.servoJ(q0, 0.0, 0.0, 0.002, 0.1, 300)
        speeds.append(rr.getActualTCPSpeed()[2])
        rc.waitPeriod(t)
    assert "force 001000 freedrive off" in mode(db)
    rise = tcp(rr) - x0
    # it rises at the speed limit (the controller's own TCP speed; how far it got depends on the time it had)
    assert rise[2] > 0.005 and 0.02 < max(speeds) < 0.03 + 0.002 and np.abs(rise[:2]).max() < 0.001
    # a hand pushes down (for 5 s) with what the tool pushes up: equilibrium, it stops
    inject(db, "push 0 0 -10 0 0 0 5")
    assert until(lambda: abs(rr.getActualTCPSpeed()[2]) < 1e-3)
    z = tcp(rr)[2]
    time.sleep(0.5)
    assert abs(tcp(rr)[2] - z) < 0.002
    # the program turns the base joint: x and y follow it (z stays the force's)
    rm = RobotModel(load_config(default_config()))
    q1 = np.array(q0) + np.array([0.05, 0, 0, 0, 0, 0])
    x1 = rm.fk(q1, rm.cfg.tips[0]).translation
    assert rc.servoJ(list(q1), 0.0, 0.0, 0.002, 0.1, 300)
    assert until(lambda: np.abs(tcp(rr)[:2] - x1[:2]).max() < 0.001)
    assert np.linalg.norm(x1[:2] - x0[:2]) > 0.02
    assert rc.servoStop()  # (first: the script's forceModeStop stops the arm, which a running servoj controls)
    assert rc.forceModeStop()
    assert "force off" in mode(db) and mode(db).endswith("errors 0")
    z = tcp(rr)[2]
    time.sleep(0.5)
    assert abs(tcp(rr)[2] - z) < 0.001  # held where force mode left it


def test_freedrive_yields_to_a_hand_along_the_free_axes_only_and_ignores_motion(running):
    rc, rr, db = running
    turned = [0, 0, 0, 0, 0, np.pi / 2]  # the feature frame turned 90° about z: its x is the base's y
    assert rc.freedriveMode([1, 0, 0, 0, 0, 0], turned)
    assert "freedrive 100000" in mode(db)
    x0 = tcp(rr)
    inject(db, "push 8 0 0 0 0 0 1")  # along base x: held
    time.sleep(1.2)
    assert np.abs(tcp(rr) - x0).max() < 0.001
    inject(db, "push 0 8 0 0 0 0 1")  # along base y (the feature's x): free
    assert until(lambda: tcp(rr)[1] - x0[1] > 0.05)
    assert until(lambda: np.abs(rr.getActualTCPSpeed()[:3]).max() < 1e-3)  # (the hand let go: it stops)
    moved = tcp(rr) - x0
    assert moved[1] > 0.05 and abs(moved[0]) < 0.002 and abs(moved[2]) < 0.002
    assert rc.servoJ(rr.getActualQ(), 0.0, 0.0, 0.002, 0.1, 300)  # a motion command in freedrive: ignored
    assert until(lambda: "ignored 0" not in mode(db), period=0.05)
    assert rc.endFreedriveMode() and "freedrive off" in mode(db)
    x1 = tcp(rr)
    inject(db, "push 0 8 0 0 0 0 1")  # out of freedrive: the arm holds
    time.sleep(1.0)
    assert np.abs(tcp(rr) - x1).max() < 0.001


def test_direct_torque_is_refused_below_polyscope_5_26(emulator):
    from intera_compat.hardware.ur import URBackend
    cfg = load_config(default_config())
    backend = URBackend(RobotModel(cfg), {"robot_ip": HOST, "interface": "torque", "startup_timeout": 5.0})
    with pytest.raises(RuntimeError, match=r"PolyScope 5\.26\+.*5\.11\.1"):
        backend.connect()  # (the emulator reports 5.11.1: ur_rtde's script leaves direct_torque out there)
    backend.dash.disconnect()
    backend.recv.disconnect()


@pytest.fixture
def running_526():
    """The emulator as a PolyScope 5.26 controller, running ur_rtde's control script."""
    proc = subprocess.Popen([sys.executable, "-m", "intera_compat.emulator", "--host", HOST, "--version", "5.26.0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        line = proc.stdout.readline().decode()
        assert "UR controller emulator" in line, line
        db = dashboard_client.DashboardClient(HOST)
        db.connect()
        db.powerOn()
        db.brakeRelease()
        rr = receive()
        rc = rtde_control.RTDEControlInterface(HOST)
        yield rc, rr, db
        rc.disconnect()
        rr.disconnect()
        db.disconnect()
    finally:  # (ended whatever failed: one left behind would hold the address)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        out = proc.communicate(timeout=10)[0].decode()
        assert proc.returncode in (0, -signal.SIGTERM), out[-2000:]


def test_direct_torque_acts_on_top_of_the_controllers_gravity_compensation(running_526):
    rc, rr, db = running_526
    assert "5.26.0" in db.polyscopeVersion()
    q0 = np.array(rr.getActualQ())
    for _ in range(250):  # zero torque: the controller's gravity compensation alone holds the arm
        t = rc.initPeriod()
        assert rc.directTorque([0.0] * 6)
        rc.waitPeriod(t)
    assert "motion torque" in mode(db)
    assert np.abs(np.array(rr.getActualQ()) - q0).max() < 2e-3
    for _ in range(100):  # 1 Nm on the last joint: it turns that way
        t = rc.initPeriod()
        rc.directTorque([0, 0, 0, 0, 0, 1.0])
        rc.waitPeriod(t)
    assert rr.getActualQd()[5] > 0.1 and rr.getActualQ()[5] > q0[5] + 0.01
    rc.kickWatchdog()  # (clears the command: no torque asked any more) ...
    assert until(lambda: "motion hold" in mode(db), period=0.05)  # ... the arm holds
    assert until(lambda: np.abs(np.array(rr.getActualQd())).max() < 1e-3)
    q = np.array(rr.getActualQ())
    time.sleep(0.3)
    assert np.abs(np.array(rr.getActualQ()) - q).max() < 1e-3


@pytest.fixture
def scripted():
    """The controller in process (no sockets), powered, brakes released; ``(c, watchdog)``: ``watchdog(hz)`` starts
    the control script with its watchdog at ``hz``, fed now."""
    from intera_compat.emulator.ur_controller import URController
    c = URController()
    c.start()

    def watchdog(hz: float) -> None:
        assert until(lambda: c.start_script())
        with c.lock:
            c.watchdog_hz = hz
            c._last_input = c.clock()
    try:
        c.power_on()
        assert until(lambda: c.brake_release())
        yield c, watchdog
    finally:
        c.stop()


def test_the_watchdog_gives_no_grace_to_a_client_that_sent_nothing(scripted):
    """The emulator waits a moment for inputs sent in time but not yet read (its own threads lag on a loaded
    machine); a client that sent nothing gets no grace: kicks 140 ms apart stop the program at 10 Hz, as on a real
    controller (the grace had passed gaps of up to 150 ms). In process: the kicks straight into the controller."""
    c, watchdog = scripted
    watchdog(10.0)
    for _ in range(40):
        time.sleep(0.14)  # (never shorter)
        c.take_inputs({"input_int_register_0": 0})
        if c.watchdog_trips:
            break
    assert c.watchdog_trips >= 1


def test_a_pause_on_the_pendant_is_no_silence_of_the_client_to_the_watchdog(scripted):
    """The watchdog is the program's: paused, it does not run, and a play counts from there (a pause longer than
    1 / watchdog_hz stopped the program on its first cycle after the play). In controller time, in process."""
    from intera_compat.emulator.ur_controller import PLAYING
    c, watchdog = scripted
    watchdog(0.5)  # (2 s)
    assert c.pause_program()
    paused = c.now
    assert until(lambda: c.now > paused + 2.5, 30)
    assert c.play()
    played = c.now
    assert until(lambda: c.now > played + 0.5, 30)
    assert c.watchdog_trips == 0 and c.runtime_state == PLAYING


def test_a_script_started_reads_the_inputs_sent_before_it_first(monkeypatch, scripted):
    """The client clears the command register on RTDE and then uploads the script on port 30003: the script must
    not run the stale servoJ still in the register while the clear waits in the RTDE socket. In process: the
    RTDE reader stands still for 20 ms with the clear pending (the grace made long: this process may stall)."""
    import threading

    from intera_compat.emulator import ur_controller
    from intera_compat.emulator.ur_controller import SERVOJ
    monkeypatch.setattr(ur_controller, "INPUT_GRACE", 10.0)
    c, _ = scripted
    with c.lock:
        q0 = c.state.position[:6].copy()
    stale = {"input_int_register_0": SERVOJ}
    stale.update({f"input_double_register_{i}": float(q0[i] + (0.3 if i == 5 else 0.0)) for i in range(6)})
    c.take_inputs(stale)  # (the last servoJ before a stop: 0.3 rad ahead on the last joint)
    pending = [True]
    c.inputs_pending = lambda: pending[0]

    def reader():  # (the clear, read late)
        time.sleep(0.02)
        c.take_inputs({"input_int_register_0": 0})
        pending[0] = False
    t = threading.Thread(target=reader)
    t.start()
    assert c.start_script()
    t.join()
    started = c.now
    assert until(lambda: c.now > started + 0.3, 30)
    with c.lock:
        moved = float(np.abs(c.state.position[:6] - q0).max())
    assert moved < 1e-4, f"the stale servoJ moved the arm {moved * 1e3:.2f} mrad"
