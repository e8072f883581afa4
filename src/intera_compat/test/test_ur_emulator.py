"""The UR controller emulator (``python -m intera_compat.emulator``) against the real ur_rtde client: RTDE data
(the MuJoCo UR5e's joints and tool pose, modes, status bits, at the requested rate), the Dashboard's power / brake /
program / protective-stop state machine, refusals a real controller gives, and its fault injection."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

dashboard_client = pytest.importorskip("dashboard_client")
rtde_receive = pytest.importorskip("rtde_receive")

from intera_compat.config import load_config  # noqa: E402
from intera_compat.emulator.ur_controller import default_config  # noqa: E402
from intera_compat.model import RobotModel  # noqa: E402

HOST = "127.0.0.1"


@pytest.fixture
def emulator():
    proc = subprocess.Popen([sys.executable, "-m", "intera_compat.emulator"], stdout=subprocess.PIPE,
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
    t0, w0 = rr.getTimestamp(), time.monotonic()
    time.sleep(1.0)
    assert rr.getTimestamp() - t0 == pytest.approx(time.monotonic() - w0, abs=0.2)  # real time
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
    time.sleep(0.1)
    assert rr.getRuntimeState() == 2 and rr.getRobotStatus() & 3 == 3  # PLAYING; power on, program running
    inject(db, "protective stop")
    time.sleep(0.1)
    assert rr.isProtectiveStopped() and rr.getSafetyMode() == 3 and not db.running()
    with pytest.raises(RuntimeError):
        db.play()
    db.unlockProtectiveStop()
    time.sleep(0.1)
    assert not rr.isProtectiveStopped() and "NORMAL" in db.safetymode()
    with pytest.raises(Exception, match="Unlock protective stop failure"):
        db.unlockProtectiveStop()  # nothing to unlock
    rr.disconnect()


def test_emergency_stop_and_a_silent_link(emulator):
    db = emulator
    rr = receive()
    db.powerOn()
    db.brakeRelease()
    inject(db, "estop on")
    time.sleep(0.1)
    assert rr.isEmergencyStopped() and "POWER_OFF" in db.robotmode()
    inject(db, "estop off")
    time.sleep(0.1)
    assert not rr.isEmergencyStopped() and "POWER_OFF" in db.robotmode()  # released: still off until powered on
    inject(db, "rtde silent on")
    assert rr.isConnected()
    deadline = time.monotonic() + 6.0
    while rr.isConnected() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not rr.isConnected()  # the client's 2.5 s read timeout: no more data packages
