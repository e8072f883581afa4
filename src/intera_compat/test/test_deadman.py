"""Dead-man: whatever dies, the arm stops (docs/safety.md "Dead-man: what stops the arm when something dies").

* The loop process (no ROS): an exception in a cycle, SIGTERM, SIGINT, the control record's shutdown and the death of
  its parent (the realtime_loop node) all end it through the same way out — the backend braked, then closed.
* The sim: the plant lives in the loop process; the node's death ends it in order (above, with the MuJoCo Sawyer).
* UR: the RTDE watchdog set and fed by the backend; the emulated controller stops the program when the feeding stops
  and brings the arm to rest — measured in the controller's own time.
* Cobot: the backend toggles the PLC's lifebit from its cycle; the reference PLC stops the running point list when
  the lifebit stops changing — asserted on the PLC's own state and counters. Its ``close`` aborts.
"""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.loop.channel import Channel
from intera_compat.model.robot_model import RobotModel

CFG = load_config()
PATIENCE = 60.0  # s of wall time before a test gives up waiting for what must happen (never a latency bound)
# an emulated controller's trip comes in the first cycle's slot after its timeout (a cycle of 2 ms / 1 ms), unless its
# schedule restarted after a stall of its own of more than 0.1 s (``loop.scheduler.sleep_until_next``)
SLOT = 0.1 + 0.002
# s: the emulators' deadman reports' resolution (the UR's dashboard and the PLC's report print 4 decimals: a trip
# 0.2500001 s after the last input reads 0.2500)
REPORTED = 1e-4

# the loop process with a backend that records its way out ("brake", "close") and can fail in a cycle: the MuJoCo
# Sawyer, so the cycle is the real one
LOOP = r"""
import os, sys
from intera_compat.hardware import registry
from intera_compat.hardware.sim import SimBackend
from intera_compat.loop import process

RECORD = os.environ["DEADMAN_RECORD"]
FAIL_AT = int(os.environ.get("DEADMAN_FAIL_AT", "0"))
SLOW = bool(os.environ.get("DEADMAN_SLOW_CONNECT"))


def note(what):
    with open(RECORD, "a") as f:
        f.write(what + "\n")


class Recording(SimBackend):
    cycles = 0

    def connect(self):
        if SLOW:  # (an arm's controller that takes its time to answer)
            note("connecting")
            import time
            time.sleep(600)
        super().connect()

    def read(self, state):
        self.cycles += 1
        if self.cycles == 100:
            note("running")
        if self.cycles == FAIL_AT:
            raise RuntimeError("the arm's driver failed")
        super().read(state)

    def brake(self):
        note("brake")

    def close(self):
        note("close")


registry.BACKENDS["recording"] = (Recording, lambda rm, options: Recording(rm, rm.cfg.full_pose("neutral")))
sys.exit(process.main(sys.argv[1:]))
"""

# a stand-in for the realtime_loop node: starts the loop process as the node does (its child, the tick pipe's write
# end passed on), prints its pid, reads the ticks until it is killed
NODE = r"""
import os, subprocess, sys
r, w = os.pipe()
argv = [sys.executable, "-c", sys.argv[1], *sys.argv[2:], "--tick-fd", str(w)]
proc = subprocess.Popen(argv, pass_fds=(w,))
os.close(w)
print(proc.pid, flush=True)
if os.environ.get("DEADMAN_CLOSE_TICKS"):
    sys.stdin.readline()  # (told when: once the loop runs)
    os.close(r)
    sys.stdin.readline()
else:
    while os.read(r, 256):
        pass
"""


@pytest.fixture
def channel():
    rm = RobotModel(CFG)
    ch = Channel(len(CFG.all_joints), create=True, pairs=len(rm.tight.collisionPairs))
    ch.set_control(speed_ratio=CFG.control["speed_ratio"], command_timeout=CFG.control["command_timeout"])
    yield ch
    ch.close()


class LoopRun:
    """A loop process (``LOOP``) started by the test (``node=False``: the test is its parent) or by a stand-in node;
    what its backend recorded is in ``record``."""

    def __init__(self, tmp_path, channel, fail_at: int = 0, node: bool = False, close_ticks: bool = False,
                 slow_connect: bool = False):
        self.path = tmp_path / "record"
        self.path.write_text("")
        env = dict(os.environ, DEADMAN_RECORD=str(self.path), DEADMAN_FAIL_AT=str(fail_at))
        if close_ticks:
            env["DEADMAN_CLOSE_TICKS"] = "1"
        if slow_connect:
            env["DEADMAN_SLOW_CONNECT"] = "1"
        args = ["--backend", "recording", "--channel", json.dumps(channel.names), "--speedup", "1", "--no-rt"]
        if node:
            self.node = subprocess.Popen([sys.executable, "-c", NODE, LOOP, *args], env=env, stdout=subprocess.PIPE,
                                         stdin=subprocess.PIPE, text=True)
            self.pid = int(self.node.stdout.readline())
            self.proc = None
        else:
            self.read_fd, write_fd = os.pipe()
            os.set_blocking(self.read_fd, False)
            self.proc = subprocess.Popen([sys.executable, "-c", LOOP, *args, "--tick-fd", str(write_fd)], env=env,
                                         pass_fds=(write_fd,), stderr=subprocess.PIPE, text=True)
            os.close(write_fd)
            self.pid = self.proc.pid

    def record(self) -> list:
        return self.path.read_text().split()

    def wait_for(self, what: str) -> list:
        end = time.monotonic() + PATIENCE
        while what not in self.record():
            assert time.monotonic() < end, f"the loop process never recorded {what!r}: {self.record()}"
            if self.proc is not None and self.proc.poll() is not None and what not in self.record():
                raise AssertionError(f"the loop process ended ({self.proc.returncode}) without {what!r}: "
                                     f"{self.record()}")
            time.sleep(0.01)
        return self.record()

    def gone(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        try:  # (a zombie that its new parent has not reaped yet is gone too)
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True

    def wait_gone(self) -> None:
        end = time.monotonic() + PATIENCE
        while not self.gone():
            assert time.monotonic() < end, "the loop process outlived its node"
            time.sleep(0.01)

    def end(self) -> None:
        for p in (self.proc, getattr(self, "node", None)):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(10)
        if not self.gone():
            os.kill(self.pid, signal.SIGKILL)
        if self.proc is not None:
            os.close(self.read_fd)


@pytest.fixture
def loop_run(tmp_path, channel):
    runs = []

    def start(**kw) -> LoopRun:
        runs.append(LoopRun(tmp_path, channel, **kw))
        return runs[-1]
    yield start
    for run in runs:
        run.end()


def test_an_exception_in_a_cycle_brakes_and_closes_the_backend_and_is_raised_on(loop_run, channel):
    run = loop_run(fail_at=300)
    code = run.proc.wait(PATIENCE)
    assert run.record() == ["running", "brake", "close"]
    assert code != 0 and "the arm's driver failed" in run.proc.stderr.read()  # (the node logs the exit code)
    channel.stats.read()
    assert channel.stats.local.alive[0] == 0.0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_loop_in_order(loop_run, sig):
    run = loop_run()
    run.wait_for("running")
    run.proc.send_signal(sig)
    assert run.proc.wait(PATIENCE) == 0
    assert run.record() == ["running", "brake", "close"]


def test_the_stop_request_ends_the_loop_in_order(loop_run, channel):
    run = loop_run()
    run.wait_for("running")
    channel.set_control(shutdown=1.0)
    assert run.proc.wait(PATIENCE) == 0
    assert run.record() == ["running", "brake", "close"]


def test_a_signal_while_the_backend_connects_ends_the_process_through_the_same_way_out(loop_run):
    run = loop_run(slow_connect=True)
    run.wait_for("connecting")
    run.proc.send_signal(signal.SIGTERM)  # (a controller that does not answer: the node's Ctrl-C must not wait)
    assert run.proc.wait(PATIENCE) == 0
    assert run.record() == ["connecting", "brake", "close"]


def test_the_nodes_death_ends_the_loop_in_order_the_simulated_arm_with_it(loop_run):
    run = loop_run(node=True)
    run.wait_for("running")
    run.node.kill()  # SIGKILL: nothing of the node's runs; the kernel tells the loop (die_with_parent)
    run.node.wait(PATIENCE)
    assert run.wait_for("close") == ["running", "brake", "close"]
    run.wait_gone()  # (the plant lived in it: the simulated arm is gone with it)


def test_a_node_whose_end_of_the_tick_pipe_closed_is_gone_for_the_loop(loop_run):
    run = loop_run(node=True, close_ticks=True)
    run.wait_for("running")
    run.node.stdin.write("\n")
    run.node.stdin.flush()  # the node (alive, its death signal not sent) closes the read end of the ticks
    assert run.wait_for("close") == ["running", "brake", "close"]
    run.wait_gone()


# ---- UR: the RTDE watchdog -------------------------------------------------------------------------------------
UR_HOST = "127.0.32.2"  # (a loopback address of these tests' own: the UR tests elsewhere use 127.0.0.1's ports)
UR_CONFIG = os.path.join(os.path.dirname(__file__), "..", "config", "ur5e.yaml")
WATCHDOG_HZ = 4.0  # (the tests' watchdog: a stall of the VM's of tens of ms must not trip it; the config's is 10)
AT_REST = 0.005  # rad/s (the emulator's)


@pytest.fixture
def ur():
    """The UR controller emulator on ``UR_HOST``; yields its dashboard client."""
    import dashboard_client

    proc = subprocess.Popen([sys.executable, "-m", "intera_compat.emulator", "--host", UR_HOST],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        assert "UR controller emulator" in proc.stdout.readline().decode()
        db = dashboard_client.DashboardClient(UR_HOST)
        db.connect()
        yield db
        db.disconnect()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def ur_deadman(db) -> dict:
    """The emulator's RTDE watchdog and its last stop, in the controller's own time."""
    db.send("emulator deadman\n")
    words = db.receive().split()[1:]
    return {k: float(v) for k, v in zip(words[0::2], words[1::2])}


def ur_at_rest(db) -> dict:
    """Waits (wall time, only as a bound on a failure) until the controller reports the arm at rest after a stop."""
    end = time.monotonic() + PATIENCE
    while (d := ur_deadman(db))["rest"] < 0:
        assert time.monotonic() < end, f"the arm was never at rest: {d}"
        time.sleep(0.05)
    return d


def test_the_ur_emulators_watchdog_stops_the_program_and_brings_a_running_speedj_to_rest(ur):
    import rtde_control
    import rtde_receive

    ur.powerOn()
    ur.brakeRelease()
    rr = rtde_receive.RTDEReceiveInterface(UR_HOST)
    rc = rtde_control.RTDEControlInterface(UR_HOST)
    assert rc.setWatchdog(WATCHDOG_HZ)
    for _ in range(100):  # speedJ at 0.5 rad/s on the base, fed at 125 Hz
        t = rc.initPeriod()
        rc.speedJ([0.5, 0, 0, 0, 0, 0], 4.0, 0.008)
        rc.waitPeriod(t)
    assert rr.getActualQd()[0] == pytest.approx(0.5, abs=0.02) and ur_deadman(ur)["trips"] == 0
    d = ur_at_rest(ur)  # the client went quiet: the script's speedJ would run on; the watchdog stops it
    assert d["trips"] == 1 and rr.getRuntimeState() == 1 and not rc.isProgramRunning()
    assert 1.0 / WATCHDOG_HZ - REPORTED < d["tripped"] - d["last_input"] <= 1.0 / WATCHDOG_HZ + SLOT
    assert d["speed"] == pytest.approx(0.5, abs=0.02)  # (it ran on until then)
    ramp = 0.5 / 10.0  # (PROGRAM_STOP_DECELERATION: a stop, not a jolt)
    assert ramp <= d["rest"] - d["tripped"] <= 0.25
    assert np.abs(rr.getActualQd()).max() < 0.005
    print(f"UR emulator, speedJ 0.5 rad/s: at rest {d['rest'] - d['tripped']:.3f} s after the watchdog's stop "
          f"(controller time)")
    rc.disconnect()
    rr.disconnect()


def ur_loop(channel_factory, interface: str):
    """The loop process on the emulated UR (``interface``, the tests' watchdog rate): (process, channel, config)."""
    cfg = load_config(UR_CONFIG)
    ch = channel_factory(cfg)
    options = {"robot_ip": UR_HOST, "interface": interface, "watchdog_hz": WATCHDOG_HZ, "startup_timeout": 20.0}
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "intera_compat.loop.process", "--config", UR_CONFIG,
                             "--backend", "ur", "--backend-options", json.dumps(options), "--channel",
                             json.dumps(ch.names), "--tick-fd", str(write_fd), "--speedup", "1", "--no-rt"],
                            pass_fds=(write_fd,))
    os.close(write_fd)
    os.set_blocking(read_fd, False)
    return proc, ch, cfg, read_fd


@pytest.fixture
def ur_channel():
    made = []

    def make(cfg):
        rm = RobotModel(cfg)
        ch = Channel(len(cfg.all_joints), create=True, pairs=len(rm.tight.collisionPairs))
        ch.set_control(speed_ratio=cfg.control["speed_ratio"], command_timeout=cfg.control["command_timeout"],
                       joint_state_hz=float(cfg.rates["joint_states_hz"]))
        made.append(ch)
        return ch
    yield make
    for ch in made:
        ch.close()


def stream_until_moving(ch, cfg, speed: float, proc, more: int = 25) -> None:
    """VELOCITY_MODE commands (the base joint at ``speed``) as a JointCommand publisher sends them (50 Hz), until the
    robot is enabled and the arm moves at that speed (the loop's state record), and ``more`` after that."""
    from intera_compat.data.codes import VELOCITY_MODE
    from intera_compat.loop.commands import make_validator

    validator = make_validator(cfg)
    velocity = [speed] + [0.0] * (cfg.n_arm - 1)
    end = time.monotonic() + PATIENCE
    st = None
    while True:
        assert proc.poll() is None, "the loop process ended"
        assert time.monotonic() < end, "the arm never moved" + ("" if st is None else (
            f" (enabled {st.enabled[0]:g}, ready {st.ready[0]:g}, base joint {st.velocity[0]:+.3f} rad/s)"))
        ch.state.read()
        st = ch.state.local
        if st.enabled[0] > 0.5 and st.ready[0] > 0.5:
            v = validator.check(VELOCITY_MODE, cfg.joint_names, {"velocity": velocity})
            assert v.ok, v
            ch.post_command(v.mode, v.mask, v.arrays)
            if abs(st.velocity[0] - speed) < 0.05 * abs(speed) + 0.01 or more < 25:
                more -= 1
                if more < 0:
                    return
        time.sleep(0.02)


@pytest.mark.parametrize("interface", ["velocity", "position"])
def test_a_ur_loop_process_killed_mid_motion_leaves_the_arm_at_rest_within_half_a_second(ur, ur_channel, interface):
    proc, ch, cfg, read_fd = ur_loop(ur_channel, interface)
    try:
        stream_until_moving(ch, cfg, 0.4, proc)
        assert ur_deadman(ur)["trips"] == 0
        proc.kill()  # SIGKILL mid-motion: nothing of the loop's runs any more
        proc.wait(PATIENCE)
        d = ur_at_rest(ur)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(read_fd)
    assert d["trips"] == 1  # the watchdog the backend set stopped the program
    assert 1.0 / WATCHDOG_HZ - REPORTED < d["tripped"] - d["last_input"] <= 1.0 / WATCHDOG_HZ + SLOT
    stopped = d["rest"] - d["last_input"]
    if interface == "velocity":  # the script's speedJ ran on at the loop's last speed until the watchdog's stop ...
        assert d["speed"] > 0.3  # (the loop's last: 0.4 and its feedback's share)
        after_trip = d["rest"] - d["tripped"]
        assert stopped <= 0.5 and 0.0 < after_trip <= 0.2
        print(f"UR velocity interface, loop process killed at 0.4 rad/s: the watchdog's stop {1 / WATCHDOG_HZ:g} s "
              f"after its last command, at rest {after_trip:.3f} s later (controller time): "
              f"{0.1 + after_trip:.3f} s at the config's 10 Hz")
    else:  # ... its servoJ stayed at the loop's last target: the arm stopped there by itself, before the trip
        assert d["speed"] < AT_REST and stopped < 1.0 / WATCHDOG_HZ
        print(f"UR position interface, loop process killed at 0.4 rad/s: at rest {stopped:.3f} s after its last "
              f"command (controller time), the program stopped by the watchdog {1 / WATCHDOG_HZ:g} s after it")


def test_a_ur_loop_process_ended_by_sigterm_stops_the_arm_and_its_script_itself(ur, ur_channel):
    import rtde_receive

    proc, ch, cfg, read_fd = ur_loop(ur_channel, "velocity")
    try:
        stream_until_moving(ch, cfg, 0.4, proc)
        proc.send_signal(signal.SIGTERM)  # (Ctrl-C on the launch, the node's shutdown: the loop's way out)
        assert proc.wait(PATIENCE) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(read_fd)
    d = ur_deadman(ur)
    end = time.monotonic() + PATIENCE
    while d["now"] < d["fed"] + 2.0 / WATCHDOG_HZ:  # (the watchdog would have stopped it by now, controller time)
        assert time.monotonic() < end
        time.sleep(0.05)
        d = ur_deadman(ur)
    rr = rtde_receive.RTDEReceiveInterface(UR_HOST)
    assert d["trips"] == 0 and d["watchdog_hz"] == 0.0  # the script was stopped by the backend, not its watchdog
    assert rr.getRuntimeState() == 1 and np.abs(rr.getActualQd()).max() < AT_REST
    rr.disconnect()


# ---- Cobot: the PLC's lifebit --------------------------------------------------------------------------------
def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


COBOT_ENDPOINT = f"opc.tcp://127.0.0.1:{free_port()}/cobot"  # (a port of these tests' own: the Cobot tests use 4840)
COBOT_CONFIG = os.path.join(os.path.dirname(__file__), "..", "config", "cobot7.yaml")
LIFEBIT_TIMEOUT = 0.2  # s (the reference PLC's default)


@pytest.fixture
def cobot_plc():
    """The reference PLC in a process of its own (a PLC is); yields its query (Emulator.Inject)."""
    from asyncua import ua
    from asyncua.sync import Client, ThreadLoop

    proc = subprocess.Popen([sys.executable, "-m", "intera_compat.emulator.cobot_plc", "--endpoint", COBOT_ENDPOINT],
                            stdout=subprocess.PIPE, start_new_session=True)
    with ThreadLoop(timeout=10) as tloop:
        client = Client(COBOT_ENDPOINT, timeout=5, tloop=tloop)
        try:
            assert "cobot PLC emulator" in proc.stdout.readline().decode()
            client.connect()
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        ns = client.get_namespace_index("urn:intera_compat:cobot_plc")
        emu = client.get_node(ua.NodeId("Emulator", ns))
        state = client.get_node(ua.NodeId("Robot.State", ns))
        code = client.get_node(ua.NodeId("Robot.ErrorCode", ns))

        def query(what: str):
            if what == "state":
                return state.read_value(), code.read_value()
            reply = emu.call_method(ua.NodeId("Emulator.Inject", ns), what)
            if what != "deadman":
                return reply
            words = reply.split()[1:]
            return {k: (v if k == "lifebit" else float(v)) for k, v in zip(words[0::2], words[1::2])}
        try:
            yield query
        finally:
            client.disconnect()
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def plc_at_rest(query, trips: int = 0) -> dict:
    """The PLC's dead-man record once its lifebit watch has tripped more than ``trips`` times and the arm is at rest
    after the last trip."""
    end = time.monotonic() + PATIENCE
    while (d := query("deadman"))["trips"] <= trips or d["rest"] < d["tripped"]:
        assert time.monotonic() < end, f"the PLC never stopped the arm: {d}"
        time.sleep(0.05)
    return d


class CobotLoop:
    """The Cobot backend driven as the loop drives it (``read`` and ``write`` every cycle), in this process."""

    def __init__(self):
        from intera_compat.data.state import CommandMode, HardwareCommand, HardwareState
        from intera_compat.hardware.cobot import CobotBackend

        cfg = load_config(COBOT_CONFIG)
        self.b = CobotBackend(RobotModel(cfg), {"endpoint": COBOT_ENDPOINT, "startup_timeout": 20.0})
        self.hs = HardwareState.zeros(len(cfg.all_joints))
        self.cmd = HardwareCommand.zeros(len(cfg.all_joints), CommandMode.POSITION)
        self.b.connect()
        self.b.enable()

    def run(self, until, seconds_bound: float = PATIENCE, why=lambda: "") -> None:
        """Cycles at the backend's rate until ``until()`` (wall time bounds a failure only)."""
        end = time.monotonic() + seconds_bound
        while not until():
            assert time.monotonic() < end, f"never: {why()}"
            self.b.read(self.hs)
            self.b.write(self.cmd)
            time.sleep(self.b.period)

    def start_a_long_motion(self, query, attempts: int = 3) -> int:
        """A point list a few seconds long; cycles until the PLC moves the arm along it, its lifebit watch armed; the
        PLC's lifebit trips so far (the watch's count before the test's own stop). This process is the loop here: a
        stall of it beyond the lifebit's timeout on a loaded machine trips the PLC before the motion is under way —
        what the test is about, too early — so the error is reset and the list sent again (``attempts`` in all)."""
        q0, tries = None, 1

        def started():
            nonlocal q0, tries
            if query("state") == (2, 300) and q0 is not None:  # (LIFEBIT_ERROR before the motion was under way)
                assert tries < attempts, f"the PLC's lifebit tripped {tries} times before the motion was under way"
                tries, q0 = tries + 1, None
                self.b.reset()
                self.b.enable()
                return False
            if q0 is None and self.b._rx is not None and query("state")[0] != 2:
                q0 = self.hs.position[:7].copy()
                t = np.linspace(0.0, 4.0, 21)
                q = q0 + np.outer(t / 4.0, [1.0, 0.0, 0.0, 0.6, 0.0, 0.0, 0.8])
                assert self.b.submit(t, q, np.tile([0.25, 0, 0, 0.15, 0, 0, 0.2], (21, 1)), np.zeros_like(q))
            return q0 is not None and abs(self.hs.velocity[0]) > 0.1 and query("state")[0] == 1 \
                and query("deadman")["lifebit"] == "armed"
        self.run(started, why=lambda: f"velocity {self.hs.velocity[:7]}, fault {self.hs.fault}, PLC {query('state')}, "
                 f"{query('deadman')}, {query('calls')}, lifebit writes {self.b.lifebit_writes}")
        return int(query("deadman")["trips"])


def test_a_cobot_loop_that_stops_cycling_has_its_motion_stopped_by_the_plc(cobot_plc):
    loop = CobotLoop()
    try:
        trips = loop.start_a_long_motion(cobot_plc)
        # the loop hangs (or died): no more cycles, no more toggles; the client's thread (the link) lives on
        d = plc_at_rest(cobot_plc, trips)
    finally:
        loop.b.close()
    assert d["trips"] == trips + 1 and cobot_plc("state") == (2, 300)  # stopped as on an error: LIFEBIT_ERROR
    assert 0.0 <= d["forgiven"] <= LIFEBIT_TIMEOUT  # (the PLC server's own stalls, forgiven up to one timeout)
    assert LIFEBIT_TIMEOUT - REPORTED < d["tripped"] - d["before"] - d["forgiven"] <= LIFEBIT_TIMEOUT + SLOT
    assert d["speed"] > 0.1  # (it was under way)
    assert d["rest"] - d["before"] - d["forgiven"] <= 0.5  # (the time forgiven is not the client's silence)
    print(f"Cobot, loop hung at {d['speed']:.2f} rad/s: at rest {d['rest'] - d['tripped']:.3f} s after the PLC's "
          f"lifebit stop, {d['rest'] - d['before']:.3f} s after the lifebit's last change (PLC time)")


def test_a_cobot_backend_closed_mid_motion_aborts_it_before_the_lifebit_would(cobot_plc):
    loop = CobotLoop()
    trips = loop.start_a_long_motion(cobot_plc)
    loop.b.close()  # (the loop's way out: Abort, answered, before the lifebit goes quiet)
    assert "Abort" in cobot_plc("calls").split(";")[0].split()
    end = time.monotonic() + PATIENCE
    while (d := cobot_plc("deadman"))["now"] < d["changed"] + 2 * LIFEBIT_TIMEOUT or cobot_plc("state")[0] != 0:
        assert time.monotonic() < end, d  # (the PLC's own time: its watch would have stopped it by now)
        time.sleep(0.05)
    assert d["trips"] == trips and d["lifebit"] == "off" and cobot_plc("state") == (0, 0)  # stopped, idle, no error


def test_a_cobot_loop_process_killed_mid_motion_has_its_motion_stopped_by_the_plc(cobot_plc):
    from intera_compat.data.codes import POSITION_MODE
    from intera_compat.loop.commands import make_validator

    cfg = load_config(COBOT_CONFIG)
    rm = RobotModel(cfg)
    ch = Channel(len(cfg.all_joints), create=True, pairs=len(rm.tight.collisionPairs))
    ch.set_control(speed_ratio=cfg.control["speed_ratio"], command_timeout=cfg.control["command_timeout"],
                   joint_state_hz=float(cfg.rates["joint_states_hz"]))
    read_fd, write_fd = os.pipe()
    options = {"endpoint": COBOT_ENDPOINT, "startup_timeout": 20.0}
    proc = subprocess.Popen([sys.executable, "-m", "intera_compat.loop.process", "--config", COBOT_CONFIG,
                             "--backend", "cobot", "--backend-options", json.dumps(options), "--channel",
                             json.dumps(ch.names), "--tick-fd", str(write_fd), "--speedup", "1", "--no-rt"],
                            pass_fds=(write_fd,))
    os.close(write_fd)
    os.set_blocking(read_fd, False)
    validator = make_validator(cfg)
    try:
        end = time.monotonic() + PATIENCE
        while True:  # POSITION_MODE: one waypoint 1.2 rad away on the base (the PLC plans the motion)
            assert proc.poll() is None and time.monotonic() < end, "the arm never moved"
            ch.state.read()
            st = ch.state.local
            if st.enabled[0] > 0.5 and st.ready[0] > 0.5:
                target = np.array(st.position[:7])
                target[0] = 1.2 if target[0] < 0.0 else -1.2
                v = validator.check(POSITION_MODE, cfg.joint_names, {"position": list(target)})
                assert v.ok, v
                break
            time.sleep(0.02)
        while abs(st.velocity[0]) < 0.2 or cobot_plc("deadman")["lifebit"] != "armed":
            assert proc.poll() is None and time.monotonic() < end, "the arm never moved"
            ch.post_command(v.mode, v.mask, v.arrays)
            time.sleep(0.02)
            ch.state.read()
        proc.kill()  # SIGKILL mid-motion: no Abort, no more lifebit
        proc.wait(PATIENCE)
        d = plc_at_rest(cobot_plc)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(read_fd)
        ch.close()
    assert d["trips"] == 1 and cobot_plc("state") == (2, 300) and d["speed"] > 0.2
    assert 0.0 <= d["forgiven"] <= LIFEBIT_TIMEOUT  # (the PLC server's own stalls, forgiven up to one timeout)
    assert LIFEBIT_TIMEOUT - REPORTED < d["tripped"] - d["before"] - d["forgiven"] <= LIFEBIT_TIMEOUT + SLOT
    assert d["rest"] - d["before"] - d["forgiven"] <= 0.5  # (the time forgiven is not the client's silence)
    print(f"Cobot, loop process killed at {d['speed']:.2f} rad/s: at rest {d['rest'] - d['tripped']:.3f} s after the "
          f"PLC's lifebit stop, {d['rest'] - d['before']:.3f} s after the lifebit's last change (PLC time)")
