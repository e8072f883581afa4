"""Test harness: a private rosmaster per pytest process and nodes run in their own process groups.

* ``ros_master`` (session): ``rosmaster --core`` on a free port, ROS env pointed at it, this process
  initialised as a rospy node once (rospy allows one init per process).
* ``launch`` (function): start ``roslaunch``/``rosrun`` command lines as subprocesses in new
  sessions; every one is SIGTERM'd (then SIGKILL'd) with its whole process group afterwards.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path, lines: int = 60) -> str:
    """The last lines of a process log (for a failure message: CI keeps no tmp files)."""
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return f"(no log: {e})"


def _stat(pid) -> tuple | None:
    """(parent pid, start time) of a process from /proc, None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return int(fields[1]), int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def descendants(pid: int) -> dict:
    """Every process below ``pid``, with its start time (roslaunch starts each node in a session of its own, so
    killing roslaunch's group does not reach them)."""
    children: dict = {}
    for entry in os.listdir("/proc"):
        st = _stat(entry) if entry.isdigit() else None
        if st is not None:
            children.setdefault(st[0], []).append((int(entry), st[1]))
    found, todo = {}, [pid]
    while todo:
        for c, start in children.get(todo.pop(), []):
            if c not in found:
                found[c] = start
                todo.append(c)
    return found


def kill_group(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGINT to the process group (roslaunch shuts its nodes down), SIGKILL after ``timeout``; nodes that
    outlived it (one slow to exit, one respawned meanwhile) are SIGKILLed too: none is left behind."""
    if proc.poll() is not None:
        return
    nodes = descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        nodes.update(descendants(proc.pid))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)
    except ProcessLookupError:
        pass
    for pid, start in nodes.items():
        st = _stat(pid)
        if st is not None and st[1] == start:  # (the same process, not a new one with its number)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


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


def pytest_unconfigure(config):
    status = config.stash.get(LEFT_THREADS, None)
    if status is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


@pytest.fixture(scope="session")
def ros_master():
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    home = tempfile.mkdtemp(prefix="roshome-")
    os.environ.update(ROS_MASTER_URI=uri, ROS_HOSTNAME="127.0.0.1", ROS_HOME=home)
    os.environ.pop("ROS_IP", None)
    proc = subprocess.Popen(["rosmaster", "--core", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    import rosgraph

    deadline = time.time() + 20
    while not rosgraph.is_master_online(uri):
        if time.time() > deadline or proc.poll() is not None:
            kill_group(proc)
            raise RuntimeError("rosmaster did not start")
        time.sleep(0.05)
    import rospy

    rospy.init_node("pytest_client", anonymous=True, disable_signals=True)
    yield uri
    rospy.signal_shutdown("tests done")
    kill_group(proc)
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def launch(ros_master, tmp_path):
    """``launch(*argv)`` starts a command (e.g. roslaunch args) against the private master."""
    procs = []

    def start(*argv, log_name=None):
        log = open(tmp_path / (log_name or f"proc{len(procs)}.log"), "w")
        p = subprocess.Popen(list(argv), env=os.environ.copy(), stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        procs.append((p, log))
        p.log_path = log.name
        return p

    yield start
    for p, log in reversed(procs):
        kill_group(p)
        log.close()
    _clear_params()


def _clear_params():
    """Each test starts from an empty parameter server (roslaunch leaves params behind)."""
    import rosgraph
    import rosparam

    master = rosgraph.Master("/pytest")
    for name in master.getParamNames():
        if name not in ("/run_id", "/rosversion", "/rosdistro"):
            try:
                rosparam.delete_param(name, verbose=False)
            except Exception:
                pass


@pytest.fixture
def sim(launch):
    """The simulated Sawyer (sawyer_sim.launch, every robot-side server); yields its joint_states."""
    yield from _start_robot(launch, "sim")


# every backend's launch line (no_rt: the tests share two cores with it); the Limb-level node tests run against each
ROBOT_LAUNCHES = {
    "sim": ("sawyer_sim.launch",),
    # the MuJoCo arm behind gazebo_ros_control's interface, at 50 Hz: 3 periods = 60 ms of link timeout (the Python
    # fake stalls beyond 15 ms on a loaded 2-core VM)
    "ros_control": ("ros_control.launch", "fake:=true", "rate:=50"),
    # a 6-axis arm (UR5e figures) behind the same interface: right_j0..right_j5, no head
    "ur5e": ("ros_control.launch", "fake:=true", "rate:=50", "arm:=ur5e"),
    # a UR through ur_rtde (RTDE, dashboard, its control script) to the UR controller emulator on 127.0.0.1
    "ur": ("ur_emulator.launch",),
    # a waypoint-list Cobot (the generic 7-axis arm) through asyncua to the reference cobot PLC on 127.0.0.1
    "cobot": ("cobot_emulator.launch",),
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
