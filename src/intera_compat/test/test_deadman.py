"""Dead-man: whatever dies, the arm stops (README "Dead-man: what stops the arm when something dies").

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

import pytest

from intera_compat.config import load_config
from intera_compat.loop.channel import Channel
from intera_compat.model.robot_model import RobotModel

CFG = load_config()
PATIENCE = 60.0  # s of wall time before a test gives up waiting for what must happen (never a latency bound)

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
