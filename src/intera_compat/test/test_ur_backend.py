"""The UR backend's cycle against a fake ur_rtde (no controller): what direct torque sends, and when it sends
nothing; force mode's re-sends. (Against the emulator and the real client: test_ur_emulator.py, test_ur_node.py.)"""
import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.data.state import CommandMode, HardwareCommand, HardwareState
from intera_compat.emulator.ur_controller import default_config
from intera_compat.hardware.ur import FORCE_MODE_GAP, URBackend, URSettings
from intera_compat.model import RobotModel

CFG = load_config(default_config())
Q = np.array([0.1, -1.2, 1.3, -1.6, -1.5, 0.2])


class FakeReceive:
    def __init__(self):
        self.stamp = 1.0

    def getTimestamp(self):
        return self.stamp

    def isConnected(self):
        return True

    def getActualQ(self):
        return list(Q)

    def getActualQd(self):
        return [0.0] * 6

    def getActualTCPForce(self):
        return [0.0] * 6

    def getRuntimeState(self):
        return 2  # PLAYING

    def getSpeedScaling(self):
        return 1.0

    def getTargetSpeedFraction(self):
        return 1.0

    def getSafetyMode(self):
        return 1

    def getRobotMode(self):
        return 7

    def disconnect(self):
        pass


class FakeControl:
    def __init__(self):
        self.sent = []

    def __getattr__(self, name):
        def call(*args):
            self.sent.append((name, args))
            return True
        return call


class Chores:
    failures, last_error = 0, ""

    def __init__(self):
        self.jobs = []

    def post(self, job):
        self.jobs.append(job)

    def alive(self):
        return True

    def close(self, timeout=5.0):  # (the worker's thread runs what is left, then ends)
        while self.jobs:
            self.jobs.pop(0)()


def streaming(interface):
    rm = RobotModel(CFG)
    b = URBackend(rm, {"interface": interface})
    b.recv, b.ctrl, b.worker = FakeReceive(), FakeControl(), Chores()
    b._script_ok = b._ready = b._wanted = True
    b.isProgramRunning = True
    hs = HardwareState.zeros(6)
    cmd = HardwareCommand.zeros(6, CommandMode.TORQUE if interface == "torque" else CommandMode.POSITION)
    return rm, b, hs, cmd


def test_direct_torque_sends_the_loops_torque_less_gravity_and_only_on_fresh_feedback():
    rm, b, hs, cmd = streaming("torque")
    b.read(hs)
    cmd.effort[:] = rm.gravity(Q) + np.array([1.0, -2.0, 0.5, 0.0, 0.3, -0.1])
    b.write(cmd)
    name, args = b.ctrl.sent[-1]
    assert name == "directTorque" and args[0] == pytest.approx([1.0, -2.0, 0.5, 0.0, 0.3, -0.1], abs=1e-9)
    clock = [b._last_seen]
    b.monotonic = lambda: clock[0]
    n = len(b.ctrl.sent)
    clock[0] += 0.004
    b.write(cmd)  # no new sample, the last 2 periods old: the register keeps its torque (no hold for one cycle)
    assert len(b.ctrl.sent) == n
    clock[0] += 0.002
    b.write(cmd)  # 3 periods old: the script would apply the torque open loop: it is cleared instead
    assert b.ctrl.sent[-1] == ("kickWatchdog", ())
    b.recv.stamp += 0.002
    b.read(hs)
    cmd.effort[2] = np.nan
    b.write(cmd)
    assert b.ctrl.sent[-1] == ("kickWatchdog", ())  # not finite: nothing asked
    b.brake()
    b.write(cmd)
    assert b.ctrl.sent[-1] == ("kickWatchdog", ())  # disabled: cleared at once (the stop chore's stopJ follows)
    assert b.watchdog_hz >= 50.0  # (at least ur.torque_watchdog_hz, 50 Hz, with direct torque)


def test_force_mode_is_sent_twice_on_a_change_then_refreshed_and_a_wall_push_not_every_cycle():
    rm, b, hs, cmd = streaming("position")
    b.read(hs)
    cmd.force_axes[2], cmd.force_wrench[2] = 1.0, 10.0
    names = []
    for k in range(40):
        cmd.force_wrench[2] = 10.0 if k < 20 else 10.0 - (k - 19)  # (from k 20: a wall's push, changing 1 N/cycle)
        b.write(cmd)
        names.append(b.ctrl.sent[-1][0])
    assert names[:3] == ["forceMode", "forceMode", "servoJ"]  # a change: twice, then the stream
    assert "forceMode" not in names[3:20]  # (refreshed every 50 ms = 25 cycles)
    wall = names[20:]
    assert 0 < wall.count("forceMode") <= len(wall) // FORCE_MODE_GAP + 2 and "servoJ" in wall


def test_the_rtde_watchdog_is_required_on_every_interface_and_at_least_2_hz():
    for interface in ("position", "velocity"):
        for hz in (0, 1.0):  # (a servoJ holds its last target; but force mode, freedrive, a stale register ...)
            with pytest.raises(ValueError, match=r"ur.watchdog_hz .*at least 2 Hz"):
                URSettings.from_config(CFG, {"interface": interface, "watchdog_hz": hz})
    assert URSettings.from_config(CFG, {"watchdog_hz": 2}).watchdog_hz == 2.0
    with pytest.raises(ValueError, match=r"ur.torque_watchdog_hz 5: at least 10 Hz"):
        URSettings.from_config(CFG, {"torque_watchdog_hz": 5})
    assert URSettings.from_config(CFG, {"torque_watchdog_hz": "10"}).torque_watchdog_hz == 10.0  # (a launch's string)


def test_close_stops_the_motion_then_the_control_script_before_it_disconnects():
    rm, b, hs, cmd = streaming("velocity")
    b.read(hs)
    cmd.velocity[0] = 0.3
    b.write(cmd)
    assert b.ctrl.sent[-1][0] == "speedJ"
    b.close()  # (the loop's way out: a speedJ must not run on until the watchdog, which some arms report as a
    names = [name for name, _ in b.ctrl.sent]  # protective stop)
    assert names.index("speedStop") < names.index("stopScript") < names.index("disconnect")


def test_while_nothing_is_streamed_the_watchdog_is_kicked_by_the_clock_even_when_the_loops_cycles_run_late():
    """Disabled (nothing streamed), the RTDE watchdog must still hear from the loop 4× as often as it needs: counted
    by the clock, not in cycles — a loop whose cycles come every 10 ms instead of 2 ms (a loaded machine) would
    otherwise kick every 12 cycles = 120 ms, and a 10 Hz watchdog stops the program."""
    rm, b, hs, cmd = streaming("position")
    b.read(hs)
    clock = [100.0]
    b.monotonic = lambda: clock[0]
    b._ready = False  # (not ready: nothing streamed, the watchdog kept fed)
    kicks = []
    for _ in range(60):
        n = len(b.ctrl.sent)
        b.write(cmd)
        if b.ctrl.sent[n:] == [("kickWatchdog", ())]:
            kicks.append(clock[0])
        clock[0] += 0.010
    assert kicks and np.diff(kicks).max() <= 0.25 / b.watchdog_hz + 0.010 + 1e-9
    assert len(kicks) < 30  # (and not every cycle)


def test_a_program_paused_on_the_pendant_is_sent_nothing_but_a_cleared_register_once():
    """Paused, nothing is streamed; the command register is cleared once (a play must not resume the last speedJ
    before the loop's next command), and not every cycle (ur_rtde complains on stderr of each command sent while
    the program does not run)."""
    rm, b, hs, cmd = streaming("velocity")
    b.read(hs)
    cmd.velocity[0] = 0.3
    b.write(cmd)
    assert b.ctrl.sent[-1][0] == "speedJ"
    b.recv.getRuntimeState = lambda: 4  # PAUSED
    b.read(hs)
    assert not b.ready() and hs.speed_scaling == 0.0
    n = len(b.ctrl.sent)
    for _ in range(100):
        b.write(cmd)
    assert b.ctrl.sent[n:] == [("kickWatchdog", ())]
    b.recv.getRuntimeState = lambda: 2  # PLAYING again
    b.read(hs)
    b.write(cmd)
    assert b.ready() and b.ctrl.sent[-1][0] == "speedJ"
    b.recv.getRuntimeState = lambda: 4  # a second pause clears it again
    b.read(hs)
    b.write(cmd)
    assert b.ctrl.sent[-1] == ("kickWatchdog", ())


def test_a_position_arm_counts_the_samples_the_loop_missed_as_lag():
    """servoJ holds its last target through a stall of the loop: the controller's time it missed is ``lag`` (the
    trajectory under way makes it up, loop/lag.py) — bounded by the loop's own clock, none on a velocity arm."""
    rm, b, hs, cmd = streaming("position")
    clock = [100.0]
    b.monotonic = lambda: clock[0]
    b.read(hs)
    for late in (4, 1, 1):  # a sample 4 periods on (3 missed), then on time
        b.recv.stamp += late * b.period
        clock[0] += late * b.period
        b.read(hs)
    assert b.lags and b.lag == pytest.approx(3 * b.period)
    b.recv.stamp += 5 * b.period  # the controller's clock steps on while a period passes: 0.5 period at most
    clock[0] += b.period
    b.read(hs)
    assert b.lag == pytest.approx(3.5 * b.period)
    assert not streaming("velocity")[1].lags


def test_why_the_controller_stops_the_arm_is_told_once_each_time_it_changes(capsys):
    """(the launch's log says which state of the controller stopped the robot: the program stopped, a protective
    stop — once on each change, off the cycle's thread)"""
    rm, b, hs, cmd = streaming("position")
    b.read(hs)
    assert hs.fault == 0 and not b.worker.jobs
    b.recv.getRuntimeState = lambda: 1  # STOPPED: the RTDE watchdog, or the pendant
    for _ in range(3):
        b.read(hs)
    assert hs.fault != 0 and len(b.worker.jobs) == 1
    b.recv.getSafetyMode = lambda: 3  # then a protective stop
    b.read(hs)
    b.read(hs)
    assert len(b.worker.jobs) == 2
    b.worker.close()
    err = capsys.readouterr().err.splitlines()
    assert err == ["[realtime_loop] UR: the controller reports powered off, or the program stopped under us (pendant, "
                   "watchdog): safety mode 1, robot mode 7, runtime state 1",
                   "[realtime_loop] UR: the controller reports a protective / safeguard stop: safety mode 3, robot "
                   "mode 7, runtime state 1"]
