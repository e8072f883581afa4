"""Test harness: a private rosmaster per pytest process and nodes run in their own process groups — the fixtures of
``intera_compat.testing.pytest_plugin`` (``ros_master``, ``launch``, ``module_launch``, ``sawyer``), which users'
suites use too — and each backend's launch as the ``robot`` fixture.

A launch takes tens of seconds on the loaded 2-core machine, a test seconds: a module whose tests can share one robot
asks for ``sim_shared`` (one ``sawyer_sim.launch`` per module) through ``sim_home`` (each test starts from the robot
brought home: ``intera_compat.testing.home``).
"""
import os
import sys
import threading
import time

import pytest
from intera_compat.testing.processes import free_port, kill_group, log_tail  # noqa: F401 (tests import them here)


# the private master and the launch fixture are those offered to users (intera_compat.testing.pytest_plugin):
# ``ros_master`` (session) and ``launch`` (function), with its ``sawyer`` fixture
pytest_plugins = ["intera_compat.testing.pytest_plugin"]


LEFT_THREADS = pytest.StashKey[int]()  # the exit status, when threads were left
_THREAD_OWNERS: dict = {}  # a thread that is not a daemon → the test it first showed up after


def _lingering() -> list:
    """Threads that would keep the interpreter from exiting (an idle ThreadPoolExecutor worker does not: the
    executor's atexit hook ends it)."""
    return [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon
            and not t.name.startswith("ThreadPoolExecutor")]


def pytest_runtest_teardown(item, nextitem):
    for t in _lingering():
        _THREAD_OWNERS.setdefault(t, item.nodeid)


def pytest_sessionfinish(session, exitstatus):
    """A thread that is not a daemon, left running by a test, would keep this process (and CI) waiting for ever
    after the summary: name it and the test it came from, fail the run, and leave without waiting for it
    (``pytest_unconfigure``)."""
    deadline = time.monotonic() + 3.0
    while True:
        left = _lingering()
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if left:
        names = [f"{t.name} (after {_THREAD_OWNERS.get(t, 'the session')})" for t in left]
        print(f"\nthreads left running by the tests (not daemons): {names}", file=sys.stderr)
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        session.config.stash[LEFT_THREADS] = int(session.exitstatus)


# ---- two workers with a role each (worker_roles): the stack worker runs every test that starts a wall-time robot
# stack, one at a time, the other the rest; each in a cpu cgroup of its own, the stack worker's processes first
WORKER_CGROUP = pytest.StashKey[str]()


SIM_SPEEDUP_BESIDE_STACKS = "1"  # sawyer_test.launch's speedup beside a wall-time robot (INTERA_SIM_SPEEDUP)


def pytest_configure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is not None and int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        # a simulation on its own time as fast as it goes (~8x) sends tens of thousands of messages a second over
        # loopback: beside it, a wall-time robot's processes stalled for up to 0.8 s whatever their cgroup and nice
        # (the ros_control fake's joint states: 52 gaps over 60 ms in one conformance run, 3 at 3x, link losses; at 2x
        # beside a CPU hog the fake still stalled enough that the SDK's joint_trajectory_client, which cancels at its
        # trajectory's length, ended 16-17 mrad short in 3 of 4 full runs and in a run of those modules alone; at 1x
        # that run passed)
        os.environ.setdefault("INTERA_SIM_SPEEDUP", SIM_SPEEDUP_BESIDE_STACKS)
        import worker_roles
        shares = worker_roles.shares(worker)
        path = worker_roles.favour_this_process(shares) if shares > 0 else None
        if path is not None:
            config.stash[WORKER_CGROUP] = path


@pytest.hookimpl(tryfirst=True)  # (before xdist's own DSession, which answers for --dist loadgroup too)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``: each test on a worker of its role (``worker_roles.RoleScheduling``)."""
    if config.getvalue("dist") == "loadgroup":
        import worker_roles
        return worker_roles.RoleScheduling(config, log)
    return None


def pytest_unconfigure(config):
    path = config.stash.get(WORKER_CGROUP, None)
    if path is not None:
        import worker_roles
        worker_roles.leave(path)
    status = config.stash.get(LEFT_THREADS, None)
    if status is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _latched_topics() -> set:
    """The topics this process publishes latched (none before rospy is in use)."""
    rospy = sys.modules.get("rospy")
    if rospy is None:
        return set()
    tm = rospy.topics.get_topic_manager()
    with tm.lock:
        return {name for name, impl in tm.pubs.items() if impl.is_latch}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A latched publisher a test made goes with the test, passed or failed: its last message would reach every node
    of every later launch in this process (a test failing between a latched speed_override 0 and its 1 paused every
    later robot of its worker: 30 failures after one)."""
    before = _latched_topics()
    yield
    left = _latched_topics() - before
    if left:
        import rospy
        from rospy.impl.registration import Registration
        tm = rospy.topics.get_topic_manager()
        for name in left:
            while tm.get_publisher_impl(name) is not None:  # (every Publisher the test made of it)
                tm.release_impl(Registration.PUB, name)


@pytest.fixture
def sim(launch):
    """The simulated Sawyer (sawyer_sim.launch, every robot-side server); yields its joint_states."""
    yield from _start_robot(launch, "sim")


@pytest.fixture(scope="module")
def sim_shared(module_launch):
    """The simulated Sawyer (sawyer_sim.launch, no cameras) for every test of a module; yields its joint_states."""
    yield from _start_robot(module_launch, "sim", "cameras:=false")


@pytest.fixture
def sim_home(sim_shared):
    """``sim_shared`` brought home before the test (E-stop out, reset, enabled, at rest at neutral, the last test's
    messages forgotten: ``intera_compat.testing.home``)."""
    from intera_compat import testing as T
    T.home("neutral")
    return sim_shared


# every backend's launch line (no_rt: the tests share two cores with it); the Limb-level node tests run against each
# the UR and Cobot emulators serve on the controller's fixed ports (RTDE 30004, dashboard 29999, script 30003; OPC UA
# 4840): each pytest-xdist worker's on a loopback address of its own, 127.0.(40 + worker).(the run's number), so that
# another run on the machine (another checkout's, a test run by hand) never takes them (test_deadman's own tests use
# 127.0.32.2). The run's number is set once, by the process that starts the workers (they inherit it).
_RUN = int(os.environ.setdefault("INTERA_TEST_RUN", str(1 + os.getpid() % 250)))
EMULATOR_HOST = f"127.0.{40 + int(os.environ.get('PYTEST_XDIST_WORKER', 'gw0')[2:] or 0)}.{_RUN}"
ROBOT_LAUNCHES = {
    "sim": ("sawyer_sim.launch",),
    # the MuJoCo arm behind gazebo_ros_control's interface, at 50 Hz (the Python fake at the config's 200 Hz would keep
    # most of a core busy)
    "ros_control": ("ros_control.launch", "fake:=true", "rate:=50"),
    # a 6-axis arm (UR5e figures) behind the same interface: right_j0..right_j5, no head
    "ur5e": ("ros_control.launch", "fake:=true", "rate:=50", "arm:=ur5e"),
    # a UR through ur_rtde (RTDE, dashboard, its control script) to the UR controller emulator on EMULATOR_HOST
    "ur": ("ur_emulator.launch", f"host:={EMULATOR_HOST}"),
    # a waypoint-list Cobot (the generic 7-axis arm) through asyncua to the reference cobot PLC on EMULATOR_HOST; its
    # lifebit watch at 0.5 s (0.2 s tripped while a launch's nodes started beside a CPU hog; test_deadman's own PLC
    # keeps the 0.2 s)
    "cobot": ("cobot_emulator.launch", f"host:={EMULATOR_HOST}", "lifebit_timeout:=0.5"),
}
ROBOT_JOINTS = {"sim": 7, "ros_control": 7, "ur5e": 6, "ur": 6, "cobot": 7}  # arm joints each backend's launch exposes
ROBOT_ARMS = {"sim": "sawyer", "ros_control": "sawyer", "ur5e": "ur5e", "ur": "ur5e", "cobot": "cobot7"}  # configs


@pytest.fixture(params=sorted(ROBOT_LAUNCHES))
def robot(request, launch):
    """Each backend's launch (every robot-side server) in turn; yields its /robot/joint_states holder, with
    ``backend`` set to the backend's name."""
    yield from _start_robot(launch, request.param)


def _start_robot(launch, backend, *args):
    from ros_helpers import Latest
    from sensor_msgs.msg import JointState

    proc = launch("roslaunch", "intera_compat", *ROBOT_LAUNCHES[backend], "no_rt:=true", *args,
                  log_name=f"{backend}.log")
    js = Latest("/robot/joint_states", JointState)
    if not js.event.wait(60):
        js.close()
        pytest.fail(f"nothing on /robot/joint_states 60 s after starting {backend}; its launch "
                    f"{'exited with ' + str(proc.poll()) if proc.poll() is not None else 'still runs'}; "
                    f"log tail:\n{log_tail(proc.log_path)}")
    js.backend = backend
    js.log_path = proc.log_path  # (the launch's output)
    js.arm = [f"right_j{i}" for i in range(ROBOT_JOINTS[backend])]
    yield js
    js.close()
