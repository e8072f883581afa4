"""pytest fixtures for testing scripts against the simulated Sawyer. In your package's ``conftest.py``::

    pytest_plugins = ["intera_compat.testing.pytest_plugin"]

* ``ros_master`` (session): a private ``rosmaster`` on a free port, the ROS environment of this process pointed at
  it (ROS_MASTER_URI, ROS_HOSTNAME=127.0.0.1, a fresh ROS_HOME), this process a rospy node (rospy allows one
  ``init_node`` per process, hence one master per session);
* ``launch`` (function): ``launch(*argv, log_name=None)`` starts a command line (``roslaunch ...``, ``rosrun ...``)
  against it in a process group of its own, its output in a log file (``proc.log_path``); after the test every one
  is stopped with every node it started, any other process that came during the test and still talks to the master
  (a node respawned while its launch shut down, a script left running) is stopped, every node that registered
  during the test is unregistered from the master (a killed node's stale registration can shut a later test's node
  down), and every parameter set during the test is deleted. What was there before the test — a robot of
  ``module_launch`` — is left alone: its nodes (a node of it respawned during the test too), registrations and
  parameters;
* ``module_launch`` (module): the same ``launch(*argv, log_name=None)`` for the tests of one module to share (a
  launch takes tens of seconds on a loaded machine, a test seconds), stopped and cleaned up after the module's last
  test. Put the robot back in a known state before each test with ``intera_compat.testing.home()``;
* ``sawyer`` (function): ``sawyer_test.launch`` started and ready (``/robot/ready``), stopped after the test; its
  arguments from the test's ``@pytest.mark.sawyer(initial_pose="neutral", start_enabled=True, scene="table", ...)``.
  Yields a ``SimSawyer`` (``log_path``, ``args``, ``stop()``); drive and check the robot with
  ``intera_compat.testing``. ``start_sawyer(launch, args)`` starts one within a test (several in turn), or once for
  a module with ``module_launch``::

    @pytest.fixture(scope="module")
    def robot(module_launch):
        return start_sawyer(module_launch, {"initial_pose": "neutral"})

    @pytest.fixture
    def sawyer(robot):
        T.home("neutral")  # E-stop out, reset, enabled, at neutral, the last test's messages forgotten
        return robot
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass

import pytest

from .processes import descendants, free_port, kill_group, kill_strays, log_tail, talking_to


def pytest_configure(config):
    config.addinivalue_line("markers", "sawyer(**args): sawyer_test.launch arguments for the sawyer fixture")


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
    from intera_compat.ros.node_init import init_node

    init_node("pytest_client", anonymous=True, disable_signals=True)
    yield uri
    rospy.signal_shutdown("tests done")
    kill_group(proc)
    shutil.rmtree(home, ignore_errors=True)


class Launcher:
    """``launcher(*argv, log_name=None)`` starts a command line against the private master in a process group of its
    own, its output in ``log_dir``; ``close()`` stops every one and cleans up after them (what the ``launch`` and
    ``module_launch`` fixtures do at their end): processes, node registrations and parameters that came since the
    launcher was made go, those that were there before stay."""

    shared: list = []  # the processes of every open module launcher (their nodes outlive a test's clean-up)

    def __init__(self, log_dir, shared: bool = False):
        self.log_dir, self.is_shared, self.procs = str(log_dir), shared, []
        self.before = talking_to(os.environ["ROS_MASTER_URI"])  # (the master, an X server of an earlier fixture...)
        self.nodes_before, self.params_before = registered_nodes(), param_names()

    def __call__(self, *argv, log_name=None):
        log = open(os.path.join(self.log_dir, log_name or f"proc{len(self.procs)}.log"), "w")
        p = subprocess.Popen(list(argv), env=os.environ.copy(), stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        self.procs.append((p, log))
        if self.is_shared:
            Launcher.shared.append(p)
        p.log_path = log.name
        return p

    def close(self) -> list:
        """Stop everything this launcher started and what came meanwhile; returns the pids of the strays stopped."""
        for p, log in reversed(self.procs):
            kill_group(p)
            log.close()
            if p in Launcher.shared:
                Launcher.shared.remove(p)
        keep = dict(self.before)  # (a shared robot's launch among them, started before this launcher)
        for p in Launcher.shared:  # (a shared robot's nodes, one respawned during the test among them)
            if p.poll() is None:
                keep.update(descendants(p.pid))
        left = kill_strays(os.environ["ROS_MASTER_URI"], keep)
        forget_nodes(keep=self.nodes_before)
        clear_params(keep=self.params_before)
        return left


@pytest.fixture
def launch(ros_master, tmp_path):
    """``launch(*argv)`` starts a command (e.g. roslaunch args) against the private master; stopped after the test."""
    launcher = Launcher(tmp_path)
    yield launcher
    left = launcher.close()
    if left:  # (said, so that a test that leaves processes behind is found)
        print(f"launch fixture: killed {len(left)} process(es) left talking to the master: {left}")


@pytest.fixture(scope="module")
def module_launch(ros_master, tmp_path_factory):
    """``launch(*argv)`` for every test of a module; stopped after the module's last test."""
    launcher = Launcher(tmp_path_factory.mktemp("module_launch"), shared=True)
    yield launcher
    left = launcher.close()
    if left:
        print(f"module_launch fixture: killed {len(left)} process(es) left talking to the master: {left}")
    from . import forget
    forget()


def registered_nodes() -> set:
    """The names of the nodes the master knows (publishing, subscribing or serving)."""
    import rosgraph
    return {n for _, nodes in sum(rosgraph.Master("/pytest").getSystemState(), []) for n in nodes}


def param_names() -> set:
    import rosgraph
    return set(rosgraph.Master("/pytest").getParamNames())


def forget_nodes(keep=()) -> None:
    """Unregister from the master every node but this process's and those named in ``keep`` (all of the test's are
    gone by now). A node that was killed rather than shut down stays registered, and when a node of the next test
    registers its name the master tells the dead one's address to shut down — an address the kernel may have handed
    to another new node by then, which then shuts down ("new node registered with same name")."""
    import rosgraph
    import rospy
    master = rosgraph.Master("/pytest")
    pubs, subs, srvs = master.getSystemState()
    me = rospy.get_name()
    keep = set(keep) | {me}
    apis = {}

    def api(node):
        if node not in apis:
            try:
                apis[node] = master.lookupNode(node)
            except rosgraph.MasterError:
                apis[node] = None
        return apis[node]
    for topic, nodes in pubs:
        for n in nodes:
            if n not in keep and api(n):
                rosgraph.Master(n).unregisterPublisher(topic, api(n))
    for topic, nodes in subs:
        for n in nodes:
            if n not in keep and api(n):
                rosgraph.Master(n).unregisterSubscriber(topic, api(n))
    for service, nodes in srvs:
        for n in nodes:
            if n not in keep:
                try:
                    rosgraph.Master(n).unregisterService(service, master.lookupService(service))
                except rosgraph.MasterError:
                    pass


def clear_params(keep=()) -> None:
    """An empty parameter server for the next test (roslaunch leaves its params behind), but for the names in
    ``keep`` (those of a robot the tests share)."""
    import rosgraph
    import rosparam

    master = rosgraph.Master("/pytest")
    for name in master.getParamNames():
        if name not in ("/run_id", "/rosversion", "/rosdistro") and name not in keep:
            try:
                rosparam.delete_param(name, verbose=False)
            except Exception:
                pass


@dataclass
class SimSawyer:
    proc: subprocess.Popen  # roslaunch
    log_path: str  # its output (every node's)
    args: dict  # the launch arguments it was started with

    def stop(self) -> None:
        """Stop it now (the fixture does after the test), every node with it, and empty the parameter server."""
        from . import forget
        kill_group(self.proc)
        forget_nodes()
        clear_params()
        forget()


def start_sawyer(launch, args: dict, timeout: float = 120.0) -> SimSawyer:
    """``sawyer_test.launch`` with ``args`` through the ``launch`` fixture, once it is ready."""
    from . import wait_for_ready
    argv = [f"{k}:={str(v).lower() if isinstance(v, bool) else v}" for k, v in args.items()]
    start_sawyer.count = getattr(start_sawyer, "count", 0) + 1
    proc = launch("roslaunch", "intera_compat", "sawyer_test.launch", *argv, log_name=f"sawyer{start_sawyer.count}.log")
    try:
        wait_for_ready(timeout, alive=lambda: proc.poll() is None)
    except TimeoutError as e:
        pytest.fail(f"{e}; the launch {'exited with ' + str(proc.poll()) if proc.poll() is not None else 'runs'}; "
                    f"its log's tail:\n{log_tail(proc.log_path)}")
    return SimSawyer(proc, proc.log_path, dict(args))


@pytest.fixture
def sawyer(request, launch):
    marker = request.node.get_closest_marker("sawyer")
    yield start_sawyer(launch, dict(marker.kwargs) if marker else {})
