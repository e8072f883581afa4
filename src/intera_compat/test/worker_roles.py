"""Two pytest-xdist workers with a role each (``./run_tests.sh``: ``-n 2 --dist loadgroup``).

Most of the suite runs robot stacks on wall time — the simulated Sawyer (``sawyer_sim.launch``) and the emulator
backends (ros_control's fake at 50 Hz with its link timeout, the UR controller emulator's RTDE watchdog, the Cobot
PLC's lifebit) — and a stack keeps about half a core busy while it runs (its loop process alone a third), the serial
suite one core on average. Two stacks at once on the 2-core machine starve each other: every pairing tried (the UR
or the ros_control and Cobot stacks beside the sim's; favoured 4:1 or alike) failed tests — link losses, watchdog
trips, a JTAS keep-alive lost for 0.5 s. So the first worker (``gw0``, ``STACK``) runs every test that starts a
wall-time robot stack, one at a time and favoured (below); the others (``PURE``) run what starts none — the pure
core, the offline loop, single nodes on a clock of their own — and the sawyer_test.launch tests, whose simulated
time only slows down when the CPU is short.

* ``role(nodeid)`` — which worker a test belongs on (by module: ``PURE_MODULES``, anything else the stack worker's);
* ``RoleScheduling`` — xdist's scope scheduler with one module a work unit, each unit only to a worker of its role
  and in collection order; the stack worker takes what is left of the pure units once its own are done, the other
  way round never (unless no stack worker is left);
* ``shares(worker)`` / ``favour_this_process(shares)`` — each worker's priority, for every process it starts. Not
  ``os.nice``: the kernel groups each session for the scheduler (autogroup) and roslaunch starts every node in a
  session of its own, where a task's nice value no longer counts (measured: two spinning processes in sessions of
  their own, one at nice 19, got the same CPU). A cpu cgroup reaches them — every process started afterwards is in it,
  whatever its session — so each worker moves itself into one of its own: the stack worker's with ``STACK_SHARES``,
  the other's with ``PURE_SHARES`` (a session outside, e.g. a CPU hog, weighs 1024). The stack's loops and watchdogs
  then get the CPU they ask for first (a 1 kHz sleeper beside 4 spinning processes: 10.7 ms late at worst outside,
  3.9 ms inside). It needs a writable cgroup v1 ``cpu`` hierarchy (root here); without one the run goes on at the
  default priority (said on stderr). ``INTERA_TEST_SHARES="stack,pure"`` sets both (0: none).
"""
from __future__ import annotations

import os
import sys
import time

from xdist.scheduler import LoadScopeScheduling

STACK, PURE = "stack", "pure"

# modules that start no wall-time robot stack: the pure core and the offline loop (no ROS, or one node driven on a
# clock of its own), and sawyer_test.launch on simulated time (test_fixture, the wave_hello example, the rostests)
PURE_MODULES = {
    "test_arms.py", "test_backends.py", "test_cartesian_planner.py", "test_channels.py", "test_cobot_backend.py",
    "test_cobot_plc.py", "test_collision_safety.py", "test_command_watchdog.py", "test_docs.py", "test_effort_hold.py",
    "test_follow.py", "test_fuzz_regressions.py", "test_gripper.py", "test_head.py", "test_ik.py",
    "test_interaction.py", "test_invariants_fuzz.py", "test_io_devices.py", "test_joint_limits_braking.py",
    "test_joint_planner.py", "test_kinematics_node.py", "test_layers.py", "test_listener_loop_death.py",
    "test_loop_cycle.py", "test_loop_safety.py", "test_md5.py", "test_model.py", "test_motion_request.py",
    "test_node_init.py", "test_output_chain.py", "test_paced_arm.py", "test_path_collision.py",
    "test_pipeline_stages.py", "test_plant_viewer.py", "test_sdk_on_backends_interaction.py",
    "test_realtime_node_shutdown.py", "test_resample.py", "test_safe_sequences.py", "test_scheduler.py",
    "test_sdk_env.py", "test_simtime_shim.py", "test_stop_delivery.py", "test_trajectory.py", "test_ur_backend.py",
    "test_urdf_colors.py", "test_urdf_fragment.py",
    "test_id_kernel.py", "test_safety_kernels.py", "test_sim_kernel.py", "test_stream_kernel.py",
    "test_fixture.py", "test_wave_hello.py", "test_rostests.py",
}


def role(nodeid: str) -> str:
    return PURE if os.path.basename(nodeid.partition("::")[0]) in PURE_MODULES else STACK


def worker_role(worker_id: str) -> str:
    """``gw0`` runs the robot stacks, every other worker the rest."""
    return STACK if worker_id == "gw0" else PURE


class RoleScheduling(LoadScopeScheduling):
    """One module a work unit, each to a worker of its ``role()``, in collection order (see the module's docstring)."""

    def _split_scope(self, nodeid: str) -> str:
        return f"{role(nodeid)}|{nodeid.partition('::')[0]}"

    def _choice(self, node) -> str | None:
        """The next unit for ``node``: the first of its role; for the stack worker, then the first left; the first
        left when no worker of its role is there (one crashed)."""
        mine = worker_role(node.gateway.id)
        roles = {worker_role(n.gateway.id) for n in self.nodes}
        units = list(self.workqueue)
        return next((s for s in units if s.partition("|")[0] == mine),
                    next((s for s in units if mine == STACK or s.partition("|")[0] not in roles), None))

    def _assign_work_unit(self, node) -> None:
        scope = self._choice(node)
        work_unit = self.workqueue.pop(scope)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some([collection.index(nodeid) for nodeid, done in work_unit.items() if not done])

    def schedule(self) -> None:
        """As xdist's, in collection order, and a worker with nothing for it shuts down at once."""
        assert self.collection_is_completed
        if self.collection is not None:
            for node in self.nodes:
                self._reschedule(node)
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = list(next(iter(self.registered_collections.values())))
        for nodeid in self.collection:
            self.workqueue.setdefault(self._split_scope(nodeid), {})[nodeid] = False
        for node in self.nodes:
            self._reschedule(node)

    def _reschedule(self, node) -> None:
        """Units until the worker holds more than 2 tests (it runs a test once it knows the next one, or has been
        told to shut down: a unit of one test alone would wait for ever), or its shutdown when none is left."""
        while not node.shutting_down and self._pending_of(self.assigned_work[node]) <= 2:
            if self._choice(node) is None:
                node.shutdown()  # (after what it has: nothing more for it will come)
                return
            self._assign_work_unit(node)


# ---- the workers' priority -------------------------------------------------------------------------------------
STACK_SHARES, PURE_SHARES = (int(x) for x in os.environ.get("INTERA_TEST_SHARES", "16384,1024").split(","))
CGROUP_CPU = "/sys/fs/cgroup/cpu"
CGROUP_PREFIX = "intera_compat_tests-"


def shares(worker_id: str) -> int:
    """The cpu.shares of a worker's cgroup (0: none)."""
    return STACK_SHARES if worker_role(worker_id) == STACK else PURE_SHARES


def _own_cpu_cgroup() -> str:
    """This process's cgroup in the v1 ``cpu`` hierarchy (its directory)."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if "cpu" in controllers.split(","):
                return os.path.join(CGROUP_CPU, path.lstrip("/"))
    raise OSError("no cpu controller in /proc/self/cgroup")


def favour_this_process(shares: int) -> str | None:
    """This process, and every process it starts from now on, in a new cpu cgroup with ``shares``; its path, or None
    (said on stderr) where there is no writable cgroup v1 ``cpu`` hierarchy. Empty ones left by a killed run go."""
    try:
        parent = _own_cpu_cgroup()
        for name in os.listdir(parent):  # (a killed run's, its worker gone; rmdir fails while a process is in it)
            if name.startswith(CGROUP_PREFIX) and not os.path.exists(f"/proc/{name[len(CGROUP_PREFIX):]}"):
                try:
                    os.rmdir(os.path.join(parent, name))
                except OSError:
                    pass
        path = os.path.join(parent, f"{CGROUP_PREFIX}{os.getpid()}")
        os.mkdir(path)
    except OSError as e:
        print(f"worker_roles: this worker runs at the default priority (no cpu cgroup: {e})", file=sys.stderr)
        return None
    try:
        with open(os.path.join(path, "cpu.shares"), "w") as f:
            f.write(str(int(shares)))
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    except OSError as e:
        print(f"worker_roles: this worker runs at the default priority ({path}: {e})", file=sys.stderr)
        os.rmdir(path)
        return None
    return path


def leave(path: str, timeout: float = 5.0) -> None:
    """This process back in its parent cgroup and ``path`` removed once the processes it started have gone (each
    test's launches are stopped by then; the last ones still exiting get ``timeout`` s)."""
    parent = os.path.dirname(path)
    try:
        with open(os.path.join(parent, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    except OSError:
        return
    end = time.monotonic() + timeout
    while True:
        try:
            os.rmdir(path)
            return
        except OSError:
            if time.monotonic() > end:
                return  # (a stray still in it: the next run's favour_this_process removes it once empty)
            time.sleep(0.1)
