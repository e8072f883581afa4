"""pytest fixtures for testing scripts against the simulated Sawyer. In your package's ``conftest.py``::

    pytest_plugins = ["intera_compat.testing.pytest_plugin"]

* ``ros_master`` (session): a private ``rosmaster`` on a free port, the ROS environment of this process pointed at
  it (ROS_MASTER_URI, ROS_HOSTNAME=127.0.0.1, a fresh ROS_HOME), this process a rospy node (rospy allows one
  ``init_node`` per process, hence one master per session);
* ``launch`` (function): ``launch(*argv, log_name=None)`` starts a command line (``roslaunch ...``, ``rosrun ...``)
  against it in a process group of its own, its output in a log file (``proc.log_path``); after the test every one
  is stopped with every node it started, any other process that came during the test and still talks to the master
  (a node respawned while its launch shut down, a script left running) is stopped, every node is unregistered from
  the master (a killed node's stale registration can shut a later test's node down), and the parameter server is
  emptied;
* ``sawyer`` (function): ``sawyer_test.launch`` started and ready (``/robot/ready``), stopped after the test; its
  arguments from the test's ``@pytest.mark.sawyer(initial_pose="neutral", start_enabled=True, scene="table", ...)``.
  Yields a ``SimSawyer`` (``log_path``, ``args``, ``stop()``); drive and check the robot with
  ``intera_compat.testing``. ``start_sawyer(launch, args)`` starts one within a test (several in turn).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass

import pytest

from .processes import free_port, kill_group, kill_strays, log_tail, talking_to


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

    rospy.init_node("pytest_client", anonymous=True, disable_signals=True)
    yield uri
    rospy.signal_shutdown("tests done")
    kill_group(proc)
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def launch(ros_master, tmp_path):
    """``launch(*argv)`` starts a command (e.g. roslaunch args) against the private master."""
    procs = []
    before = talking_to(os.environ["ROS_MASTER_URI"])  # (the master, an X server of an earlier fixture, ...: kept)

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
    left = kill_strays(os.environ["ROS_MASTER_URI"], before)
    if left:  # (said, so that a test that leaves processes behind is found)
        print(f"launch fixture: killed {len(left)} process(es) left talking to the master: {left}")
    forget_nodes()
    clear_params()


def forget_nodes() -> None:
    """Unregister from the master every node but this process's (all of the test's are gone by now). A node that was
    killed rather than shut down stays registered, and when a node of the next test registers its name the master
    tells the dead one's address to shut down — an address the kernel may have handed to another new node by then,
    which then shuts down ("new node registered with same name")."""
    import rosgraph
    import rospy
    master = rosgraph.Master("/pytest")
    pubs, subs, srvs = master.getSystemState()
    me = rospy.get_name()
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
            if n != me and api(n):
                rosgraph.Master(n).unregisterPublisher(topic, api(n))
    for topic, nodes in subs:
        for n in nodes:
            if n != me and api(n):
                rosgraph.Master(n).unregisterSubscriber(topic, api(n))
    for service, nodes in srvs:
        for n in nodes:
            if n != me:
                try:
                    rosgraph.Master(n).unregisterService(service, master.lookupService(service))
                except rosgraph.MasterError:
                    pass


def clear_params():
    """An empty parameter server for the next test (roslaunch leaves its params behind)."""
    import rosgraph
    import rosparam

    master = rosgraph.Master("/pytest")
    for name in master.getParamNames():
        if name not in ("/run_id", "/rosversion", "/rosdistro"):
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
