"""One robot launch shared by the tests of a module: a launch takes 20-30 s on a loaded 2-core machine, the tests
themselves seconds. The tests stay independent: each one gets the robot back in a known state (``home``: reset,
enabled, the arm where the launch started it) instead of a new launch.

A test module declares a module-scoped ``shared = shared_launch()`` fixture and, per test, calls
``shared.up(*roslaunch_args)``: the launch is started when it is not running with those arguments (another set stops
it first: one launch at a time), and ``home(js)`` puts the robot back. The module's end stops it with every node,
unregisters them and empties the parameter server (what conftest's ``launch`` does after a test). A module whose tests
also start launches of their own through conftest's ``launch`` overrides ``launch`` so that the shared one is stopped
first (the same node names)::

    @pytest.fixture
    def launch(shared, launch):
        shared.stop()
        yield launch
"""
from __future__ import annotations

import os
import subprocess
import tempfile

import numpy as np
import pytest
import rospy
from intera_compat.testing.processes import kill_group, log_tail

from ros_helpers import ARM, TOL, Latest, arm_positions, publisher, service, wait_for


class SharedLaunch:
    def __init__(self, log_name: str, log_dir=None):
        self.log_name, self.log_dir = log_name, log_dir
        self.argv, self.proc, self.js, self.log_path, self.starts, self.home_q = None, None, None, None, 0, None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def up(self, *argv, joints: int = 7, timeout: float = 120.0):
        """``roslaunch intera_compat *argv``'s /robot/joint_states holder (``ros_helpers.Latest``; ``arm``: its
        first ``joints`` right_j*), the launch started first if it is not running with ``argv``. ``fresh``: it was."""
        from sensor_msgs.msg import JointState
        if self.running() and self.js is not None and self.argv == list(argv):
            self.js.fresh = False
            return self.js
        self.stop()
        self.argv = list(argv)
        self.starts += 1
        fd, self.log_path = tempfile.mkstemp(prefix=f"{self.log_name}-{self.starts}-", suffix=".log",
                                             dir=self.log_dir)
        with os.fdopen(fd, "w") as log:
            self.proc = subprocess.Popen(["roslaunch", "intera_compat", *argv], env=os.environ.copy(), stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        self.js = Latest("/robot/joint_states", JointState)
        if not self.js.event.wait(timeout):
            tail = log_tail(self.log_path)
            self.stop()
            pytest.fail(f"nothing on /robot/joint_states {timeout:g} s after starting {' '.join(argv)}; "
                        f"log tail:\n{tail}")
        self.js.log_path, self.js.fresh, self.js.arm = self.log_path, True, ARM[:joints]
        self.home_q = arm_positions(self.js)
        return self.js

    def stop(self) -> None:
        if self.js is not None:
            self.js.close()
            self.js = None
        if self.proc is None:
            return
        from intera_compat.testing import forget
        from intera_compat.testing.pytest_plugin import clear_params, forget_nodes
        kill_group(self.proc)
        self.proc = None
        forget_nodes()
        clear_params()
        forget()

    def home(self, enable: bool = True, timeout: float = 60.0) -> None:
        """The robot as the launch left it for the previous test's successor: the E-stop button out, the safety
        E-stop released, the cuff let go, interaction control off, reset (a stop or an error cleared), enabled (or
        disabled), the arm back at the pose it started in (POSITION_MODE, re-sent, to the tests' tolerance: a Cobot's
        controller settles to a few mrad)."""
        from intera_core_msgs.msg import IOComponentCommand, JointCommand, RobotAssemblyState
        from std_msgs.msg import Bool, Empty
        js = self.js
        state = Latest("/robot/state", RobotAssemblyState)
        try:
            state.wait(timeout)
            if state.msg.estop_button != RobotAssemblyState.ESTOP_BUTTON_UNPRESSED:
                from std_srvs.srv import SetBool
                service("/robot/sim/set_estop", SetBool)(False)
            if _subscribed("/robot/sim/io/cuff"):  # (the simulated Sawyer's cuff)
                import json
                cuff = publisher("/robot/sim/io/cuff", IOComponentCommand)
                cuff.publish(IOComponentCommand(op="set", args=json.dumps(
                    {"signals": {"right_cuff": {"data": [0]}}})))
                cuff.unregister()
            from intera_compat.testing import interaction_off
            interaction_off()
            estop = publisher("/realtime_loop/safety_estop", Bool)
            estop.publish(Bool(False))
            reset = publisher("/robot/set_super_reset", Empty)
            en = publisher("/robot/set_super_enable", Bool)
            cmd = publisher("/robot/limb/right/joint_command", JointCommand)
            home = JointCommand(mode=JointCommand.POSITION_MODE, names=js.arm, position=list(self.home_q))

            def there() -> bool:
                return np.abs(arm_positions(js) - self.home_q).max() < TOL and np.abs(arm_velocities(js)).max() < 2e-2
            for _ in range(3):  # (an arm whose link drops under load stops with an error on the way: again)
                if not wait_for(lambda: not state.msg.stopped and not state.msg.error, timeout, period=0.2,
                                every=lambda: reset.publish()):
                    continue  # (stays stopped: said below)
                if not wait_for(lambda: state.msg.enabled, timeout / 3, period=0.2, every=lambda: en.publish(True)):
                    continue
                wait_for(lambda: there() or state.msg.error or state.msg.stopped, timeout, period=0.05,
                         every=lambda: cmd.publish(home))
                if there():
                    break
            assert there() and state.msg.enabled, \
                f"home: not reset, enabled and back at {self.home_q} (at {arm_positions(js)}; {state.msg})"
            if not enable:
                assert wait_for(lambda: not state.msg.enabled, timeout, period=0.2, every=lambda: en.publish(False))
            for p in (estop, reset, en, cmd):
                p.unregister()
        finally:
            state.close()


def _subscribed(topic: str) -> bool:
    import rosgraph
    _, subs, _ = rosgraph.Master(rospy.get_name()).getSystemState()
    return any(t == topic and nodes for t, nodes in subs)


def arm_velocities(js) -> np.ndarray:
    m = js.msg
    return np.array([m.velocity[m.name.index(n)] for n in js.arm])


def shared_launch(log_name: str = "shared"):
    """A module-scoped fixture: a ``SharedLaunch``, stopped at the module's end."""
    @pytest.fixture(scope="module")
    def shared(ros_master, tmp_path_factory):
        s = SharedLaunch(log_name, str(tmp_path_factory.mktemp(log_name)))
        yield s
        s.stop()
    return shared


class LoopCounters:
    """The realtime loop's command counters, from its own /diagnostics status (1 Hz of loop time; other nodes publish
    there too): what proves that a command the arm did not act on reached the loop (``commands_received_total``: the
    listener's; ``commands_applied_total`` / ``commands_ignored_total`` / ``commands_superseded_total``: the loop's)."""

    KEYS = ("commands_received_total", "commands_applied_total", "commands_ignored_total",
            "commands_superseded_total")

    def __init__(self, keys=KEYS):
        import threading
        from diagnostic_msgs.msg import DiagnosticArray
        self.keys = keys
        self.vals, self.count, self.cond = None, 0, threading.Condition()
        self.sub = rospy.Subscriber("/diagnostics", DiagnosticArray, self._cb, queue_size=10)

    def _cb(self, m) -> None:
        for st in m.status:
            kv = {x.key: x.value for x in st.values}
            if all(k in kv for k in self.keys):
                with self.cond:
                    self.vals = {k: int(float(kv[k])) for k in self.keys}
                    self.count += 1
                    self.cond.notify_all()

    def next(self, timeout: float = 120.0) -> dict:
        """The first status published after this call (``timeout``: a generous wall-clock guard)."""
        with self.cond:
            n = self.count
            assert self.cond.wait_for(lambda: self.count > n, timeout), \
                f"no realtime loop status on /diagnostics in {timeout:g} s"
            return dict(self.vals)

    def until(self, pred, timeout: float = 120.0, every=None, period: float = 0.05) -> dict:
        """Until a status satisfies ``pred(values)`` (``every()`` called meanwhile, e.g. a command re-sent)."""
        ok = wait_for(lambda: self.vals is not None and pred(self.vals), timeout, period=period, every=every)
        assert ok, f"no realtime loop status satisfied the condition in {timeout:g} s (last: {self.vals})"
        return dict(self.vals)

    def close(self) -> None:
        self.sub.unregister()


def delta(after: dict, before: dict, key: str, prefix: str = "commands") -> int:
    return after[f"{prefix}_{key}_total"] - before[f"{prefix}_{key}_total"]


HEAD_KEYS = ("head_commands_received_total", "head_commands_refused_total", "head_commands_posted_total")
INTERACTION_KEYS = ("interaction_commands_received_total", "interaction_commands_forwarded_total",
                    "interaction_commands_unchanged_total", "interaction_commands_refused_total")
DIGITAL_IO_KEYS = ("digital_io_commands_received_total", "digital_io_commands_refused_total",
                   "digital_io_commands_applied_total")


def robot_sleep(js, seconds: float) -> None:
    """``seconds`` of the robot's time: its joint states' stamps (wall time on a robot without /clock; a generous
    wall-clock guard)."""
    t = js.msg.header.stamp.to_sec()
    assert wait_for(lambda: js.msg.header.stamp.to_sec() >= t + seconds, 60 + 10 * seconds), \
        f"the robot's time stood still at {t:.3f}"


class Progress:
    """A trajectory goal's feedback callback: keeps the feedback (``fb``) and sets an event once the goal's desired
    time reaches ``at`` s (what a test waits on to act mid-motion, instead of a sleep)."""

    def __init__(self, at: float):
        import threading
        self.fb, self.at, self.reached = [], at, threading.Event()

    def __call__(self, f) -> None:
        self.fb.append(f)
        if f.desired.time_from_start.to_sec() >= self.at:
            self.reached.set()

    def wait(self, timeout: float = 120.0) -> None:
        assert self.reached.wait(timeout), f"the goal never reached {self.at} s (feedback: {len(self.fb)})"
