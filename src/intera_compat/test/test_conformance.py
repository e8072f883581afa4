"""``rosrun intera_compat conformance`` on the sim and on each emulator backend: every case the backend can do passes.

One launch per backend (a class per backend, its fixture class-scoped: a test worker runs each backend's tests
together), one run of the tool as a lab runs it (``--report DIR``: its ``results.json`` is read here), then one test
per case and backend.
A case the backend cannot do is SKIP in the tool's report with its reason: that passes here (it is the tool's
answer, not a pytest skip). Each backend's wall time is printed. Skipped without the Intera SDK.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import time

import pytest
from conftest import ROBOT_LAUNCHES
from intera_compat.testing.processes import kill_group, kill_strays, log_tail, talking_to

SDK_MISSING = importlib.util.find_spec("intera_interface") is None
# a backend's whole run is its class's first setup: more than pytest.ini's 300 s per test on a loaded machine (the run
# itself is bounded by RUN_TIMEOUT)
RUN_TIMEOUT = 1200
pytestmark = [pytest.mark.conformance, pytest.mark.timeout(RUN_TIMEOUT + 300), pytest.mark.skipif(
    SDK_MISSING, reason="Intera SDK not built here (./setup.sh --minimal leaves it out): ./setup.sh installs it")]

BACKENDS = {"sim": ROBOT_LAUNCHES["sim"], "ros_control": ROBOT_LAUNCHES["ros_control"],
            "ur": ROBOT_LAUNCHES["ur"], "cobot": ROBOT_LAUNCHES["cobot"]}

WALL = {}  # backend → wall seconds of its conformance run (printed at the end of the module)
RESULTS = {}  # backend → the tool's results (the per-backend table printed at the end of the module)


@pytest.fixture(scope="module", autouse=True)
def per_backend_table():
    """At the module's end, the README's per-backend table from what ran, and each backend's wall time."""
    yield
    if RESULTS:
        from intera_compat.conformance.report import per_backend
        print("\n" + per_backend(RESULTS))
        print("wall time: " + ", ".join(f"{b} {s:.0f} s" for b, s in WALL.items()))


def _cases() -> list:
    if SDK_MISSING:
        return []
    from intera_compat.conformance.cases import CASES
    return [c.name for c in CASES]


def _wait_ready(proc, timeout: float = 120.0) -> None:
    """Until the robot reports itself (/robot/state) with its joint names up; its launch alive."""
    import rospy
    from intera_core_msgs.msg import RobotAssemblyState
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            pytest.fail(f"the launch exited with {proc.poll()}:\n{log_tail(proc.log_path)}")
        try:
            rospy.wait_for_message("/robot/state", RobotAssemblyState, 1.0)
            if rospy.has_param("/robot_config/right_config/joint_names") and rospy.has_param("/realtime_loop/backend"):
                return
        except rospy.ROSException:
            pass
    pytest.fail(f"no /robot/state {timeout:g} s after the launch:\n{log_tail(proc.log_path)}")


@pytest.fixture(scope="class")
def conformance(request, ros_master, tmp_path_factory):
    """The class's backend's launch, and the tool's results on it: {case: {result, detail, ...}}."""
    from intera_compat import testing as T
    from intera_compat.testing.pytest_plugin import clear_params, forget_nodes
    backend = request.cls.backend
    out = tmp_path_factory.mktemp(f"conformance-{backend}")
    before = talking_to(os.environ["ROS_MASTER_URI"])
    log = open(out / "launch.log", "w")
    proc = subprocess.Popen(["roslaunch", "intera_compat", *BACKENDS[backend], "no_rt:=true"], stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True, env=os.environ.copy())
    proc.log_path = log.name
    try:
        _wait_ready(proc)
        start = time.monotonic()
        run = subprocess.run(["rosrun", "intera_compat", "conformance", "--report", str(out / "report"),
                              "--workdir", str(out / "work")], capture_output=True, text=True, timeout=RUN_TIMEOUT)
        WALL[backend] = time.monotonic() - start
        print(f"\nconformance on {backend}: {WALL[backend]:.0f} s wall\n{run.stdout}")
        path = out / "report" / "results.json"
        if not path.exists():
            pytest.fail(f"conformance wrote no results (exit {run.returncode}):\n{run.stdout}\n{run.stderr[-3000:]}")
        RESULTS[backend] = json.loads(path.read_text())["cases"]
        results = {c["case"]: c for c in RESULTS[backend]}
        failed = any(c["result"] == "FAIL" for c in results.values())
        assert run.returncode == (1 if failed else 0), f"exit status {run.returncode} with failed={failed}"
        yield backend, results, proc.log_path
    finally:
        kill_group(proc)
        log.close()
        kill_strays(os.environ["ROS_MASTER_URI"], before)
        forget_nodes()
        clear_params()
        T.forget()


class Conformance:
    """One backend's cases (a class per backend: parallel test workers take one each)."""
    backend = ""

    @pytest.mark.parametrize("case", _cases())
    def test_case(self, conformance, case):
        backend, results, launch_log = conformance
        r = results[case]
        if r["result"] == "SKIP":  # the robot cannot: the tool says why
            assert r["detail"], f"{case} skipped on {backend} without a reason"
            return
        assert r["result"] == "PASS", (f"{case} on {backend}: {r['detail']}\n--- the launch's log:\n"
                                       f"{log_tail(launch_log, 30)}")

    def test_wall_time(self, conformance):
        """The backend's run, said (not asserted: the machine's load decides it)."""
        backend, results, _ = conformance
        ran = [r for r in results.values() if r["result"] != "SKIP"]
        print(f"\nconformance on {backend}: {WALL.get(backend, 0):.0f} s wall for {len(ran)} cases run, "
              f"{sum(r['robot_s'] for r in ran):.0f} s of robot time")
        assert ran, f"no case ran on {backend}"


class TestSim(Conformance):
    backend = "sim"


class TestRosControl(Conformance):
    backend = "ros_control"


class TestUR(Conformance):
    backend = "ur"


class TestCobot(Conformance):
    backend = "cobot"
