"""Helpers for testing an Intera script against the simulated Sawyer (``sawyer_test.launch``), from pytest or from a
rostest node. The process must be a rospy node (``rospy.init_node``; the pytest plugin's ``ros_master`` does it).

Time is the robot's: ``/clock`` (the fixture runs on simulated time, faster than real time), so a wait of 5 s means
5 s of the robot's life however long the machine takes (a robot on wall time, ``/use_sim_time`` false, has no
``/clock``: its time is the wall clock's); every wait also has a generous wall-clock guard so a dead simulator fails a
test instead of hanging it.

* ``wait_for_ready()`` — until the latched ``/robot/ready`` says every robot-side interface is up;
* ``joint_positions()`` / ``joint_velocities()`` — the arm's, in ``/robot_config`` order (or ``names``);
* ``sim_time()``, ``sleep(s)``, ``wait_until(cond, s)`` — robot time;
* ``assert_reached(target, tol)`` — the arm is at ``target`` (an AssertionError lists every joint off by more);
* ``JointRecorder`` — records the joint trajectory (``with JointRecorder() as rec: ...``; ``rec.t``, ``rec.q``,
  ``rec.v``, ``rec.save(path)``);
* ``EventLog`` — what happened, in order: robot state changes, collisions, motion and trajectory goal results;
* robot state: ``enable()``, ``disable()``, ``reset()``; ``home(pose, enabled)`` — back to a known state between tests
  that share one robot (``module_launch``): E-stop out, cuff let go, reset, enabled, the arm at rest at ``pose``, the
  last test's messages forgotten;
* faults: ``press_estop()`` / ``release_estop()`` (the E-stop button), ``squeeze_cuff(True|False)`` (zero-G),
  ``push(link, force, torque, duration)`` (an external force on a link), ``inject_fault(fault, duration)``
  (``link_lost``, ``protective_stop``, ``controller_error``, ``hardware_estop``: what a real arm reports).
"""
from __future__ import annotations

import json
import threading
import time

import numpy as np
import rospy
from intera_core_msgs.msg import CollisionDetectionState, IOComponentCommand, RobotAssemblyState
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty

WALL_GUARD = 120.0  # s of wall time any wait gives a simulator that does not run at all


class _Latest:
    """The newest message of a topic, subscribed once per process."""
    _subs: dict = {}
    _lock = threading.Lock()

    @classmethod
    def get(cls, topic: str, msg_type):
        with cls._lock:
            if topic not in cls._subs:
                holder = cls()
                holder.msg, holder.event = None, threading.Event()
                holder.sub = rospy.Subscriber(topic, msg_type, holder._cb, queue_size=1)
                cls._subs[topic] = holder
            return cls._subs[topic]

    def _cb(self, m):
        self.msg = m
        self.event.set()

    @classmethod
    def forget(cls) -> None:
        with cls._lock:
            for holder in cls._subs.values():
                holder.event.clear()
                holder.msg = None


    def wait(self, wall: float = WALL_GUARD):
        if not self.event.wait(wall):
            raise TimeoutError(f"nothing on {self.sub.name} within {wall:g} s")
        return self.msg


def forget() -> None:
    """Drop what the last robot said: its successor's first messages are awaited afresh (``wait_for_ready`` and the
    fixture's ``stop()`` call it)."""
    _Latest.forget()


def _publisher(topic: str, msg_type, latch: bool = False) -> rospy.Publisher:
    pub = rospy.Publisher(topic, msg_type, queue_size=10, latch=latch)
    end = time.monotonic() + 10.0
    while pub.get_num_connections() == 0 and time.monotonic() < end:
        time.sleep(0.01)
    return pub


# ---- readiness and time ---------------------------------------------------------------------------------------
def wait_for_ready(timeout: float = WALL_GUARD, alive=None) -> None:
    """Until ``/robot/ready`` is True (``timeout``: wall seconds; TimeoutError naming what is still missing).
    ``alive()``: False once the robot's launch has ended (then it fails at once)."""
    _Latest.forget()
    ready = threading.Event()
    sub = rospy.Subscriber("/robot/ready", Bool, lambda m: m.data and ready.set(), queue_size=1)
    try:
        end = time.monotonic() + timeout
        while not ready.wait(0.1):
            if alive is not None and not alive():
                raise TimeoutError("the robot's launch ended before it was ready")
            if time.monotonic() > end:
                from ..ros.ready_node import missing
                import rosgraph
                left = missing(rosgraph.Master(rospy.get_name()), str(rospy.get_param("/robot_ready/skip", "")).split())
                raise TimeoutError(f"the robot was not ready within {timeout:g} s (missing: "
                                   f"{', '.join(left) or 'none; /robot/state not enabled as asked?'})")
    finally:
        sub.unregister()


def sim_time() -> float:
    """The robot's time (s): the newest ``/clock``."""
    return _Latest.get("/clock", Clock).wait().clock.to_sec()


def _robot_clock():
    """The robot's clock: ``sim_time`` on simulated time, the wall clock on a robot without ``/clock``
    (``/use_sim_time`` false: sawyer_sim.launch's default)."""
    return sim_time if rospy.get_param("/use_sim_time", True) else time.time


def _now() -> float:
    """The newest ``/clock`` without waiting for one (for subscriber callbacks); this process's ROS time when there
    is none yet (a robot on wall time has no /clock: its stamps are wall time too)."""
    m = _Latest.get("/clock", Clock).msg
    return m.clock.to_sec() if m is not None else rospy.get_time()


def wait_until(cond, timeout: float, period: float = 0.005) -> bool:
    """Until ``cond()`` is true (True) or ``timeout`` seconds of robot time have passed (False)."""
    clock = _robot_clock()
    end, wall_end = clock() + timeout, time.monotonic() + WALL_GUARD + timeout
    while not cond():
        if clock() >= end or time.monotonic() > wall_end:
            return bool(cond())
        time.sleep(period)
    return True


def sleep(seconds: float) -> None:
    """``seconds`` of robot time."""
    wait_until(lambda: False, seconds)


# ---- the arm ----------------------------------------------------------------------------------------------------
def arm_joints() -> list:
    return list(rospy.get_param("/robot_config/right_config/joint_names", [f"right_j{i}" for i in range(7)]))


def joint_state() -> JointState:
    return _Latest.get("/robot/joint_states", JointState).wait()


def _pick(field: str, names=None) -> np.ndarray:
    names = names or arm_joints()
    end = time.monotonic() + WALL_GUARD
    while True:  # (a joint_states message without these joints, from another publisher, is not the arm's)
        m = joint_state()
        if all(n in m.name for n in names):
            values = getattr(m, field)
            return np.array([values[m.name.index(n)] for n in names])
        if time.monotonic() > end:
            raise TimeoutError(f"no /robot/joint_states with {names}")
        time.sleep(0.005)


def joint_positions(names=None) -> np.ndarray:
    return _pick("position", names)


def joint_velocities(names=None) -> np.ndarray:
    return _pick("velocity", names)


def assert_reached(target, tol: float = 0.01, names=None, settle: float = 0.0) -> None:
    """The arm (or ``names``) is within ``tol`` rad of ``target`` (a list in order, or {name: angle}); with
    ``settle`` > 0 it is given that much robot time to get there."""
    if isinstance(target, dict):
        if names is not None:
            raise ValueError("assert_reached: names come with a dict target, not beside it")
        names, target = list(target), list(target.values())
    names = names or arm_joints()
    target = np.asarray(target, float)
    if target.shape != (len(names),):
        raise ValueError(f"assert_reached: {target.size} target angles for {len(names)} joints ({', '.join(names)})")
    if settle > 0:
        wait_until(lambda: np.abs(joint_positions(names) - target).max() <= tol, settle)
    err = joint_positions(names) - target
    off = [f"{n}: {e:+.4f} rad" for n, e in zip(names, err) if abs(e) > tol]
    assert not off, f"not within {tol:g} rad of the target: {', '.join(off)}"


class JointRecorder:
    """Every ``/robot/joint_states`` while recording: ``t`` (robot time, s), ``q``, ``v`` (arrays, one row per
    message, the arm's joints or ``names``)."""

    def __init__(self, names=None):
        self.names = names or arm_joints()
        self._rows, self.sub = [], None

    def _cb(self, m: JointState):
        try:
            index = [m.name.index(n) for n in self.names]
        except ValueError:
            return  # (not the arm's joints)
        self._rows.append((m.header.stamp.to_sec(), [m.position[i] for i in index], [m.velocity[i] for i in index]))

    def start(self) -> "JointRecorder":
        self.sub = rospy.Subscriber("/robot/joint_states", JointState, self._cb, queue_size=10000)
        return self

    def stop(self) -> "JointRecorder":
        if self.sub is not None:
            self.sub.unregister()
            self.sub = None
        rows = list(self._rows)  # (a callback under way may still append: one snapshot for t, q and v alike)
        self.t = np.array([r[0] for r in rows])
        self.q = np.array([r[1] for r in rows]).reshape(len(rows), len(self.names))
        self.v = np.array([r[2] for r in rows]).reshape(len(rows), len(self.names))
        return self

    __enter__ = start

    def __exit__(self, *exc):
        self.stop()

    def save(self, path: str) -> None:
        """CSV: t, then each joint's position, then each joint's velocity."""
        header = ",".join(["t"] + [f"{n}_pos" for n in self.names] + [f"{n}_vel" for n in self.names])
        np.savetxt(path, np.column_stack([self.t, self.q, self.v]), delimiter=",", header=header, comments="")


class EventLog:
    """What happened, in order of the robot's time: ``events`` is a list of (t, kind, detail) with kinds ``state``
    (enabled / disabled / stopped / error / estop changes), ``collision`` (detected / cleared), ``motion`` (a
    /motion/motion_command result) and ``trajectory`` (a follow_joint_trajectory result); ``sequence()`` the kinds
    and details without the times. Events are stamped with their message's time (the robot's state, which has no
    stamp, with the time it arrived at): two in the same 10 ms of robot time are in an order of their own. It starts
    from the robot's state as it is (awaited); a context manager (``with EventLog() as log:``) closes itself."""

    def __init__(self, wait: float = 10.0):
        from control_msgs.msg import FollowJointTrajectoryActionResult
        from intera_motion_msgs.msg import MotionCommandActionResult
        self.events, self._lock = [], threading.Lock()
        self._state, self._collision = None, None
        if any(topic == "/clock" for topic, _ in rospy.get_published_topics()):
            # every stamp the robot's, from the first: a state that came before this process's first /clock of a new
            # robot took this process's own time (seen under load: a fault sorted after the reset that cleared it)
            _Latest.get("/clock", Clock).wait(wait)
        self.subs = [
            rospy.Subscriber("/robot/state", RobotAssemblyState, self._on_state, queue_size=100),
            rospy.Subscriber("/robot/limb/right/collision_detection_state", CollisionDetectionState,
                             self._on_collision, queue_size=100),
            rospy.Subscriber("/motion/motion_command/result", MotionCommandActionResult,
                             lambda m: self._add(m.header.stamp.to_sec(), "motion",
                                                 f"{'ok' if m.result.result else 'failed'} {m.result.errorId}".strip()),
                             queue_size=100),
            rospy.Subscriber("/robot/limb/right/follow_joint_trajectory/result", FollowJointTrajectoryActionResult,
                             lambda m: self._add(m.header.stamp.to_sec(), "trajectory",
                                                 f"error_code {m.result.error_code}"), queue_size=100)]
        end = time.monotonic() + wait
        while (self._state is None or self._collision is None) and time.monotonic() < end:
            time.sleep(0.01)
        if self._state is None or self._collision is None:
            self.close()
            raise TimeoutError(f"no /robot/state or collision_detection_state within {wait:g} s: is the robot up?")

    def _add(self, t: float, kind: str, detail: str) -> None:
        with self._lock:
            self.events.append((t, kind, detail))

    def _on_state(self, m: RobotAssemblyState) -> None:
        s = ("enabled" if m.enabled else "disabled") + (" stopped" if m.stopped else "") + \
            (" error" if m.error else "") + (f" estop_button={m.estop_button}" if m.estop_button else "")
        if s != self._state:
            self._state = s
            self._add(_now(), "state", s)

    def _on_collision(self, m: CollisionDetectionState) -> None:
        if m.collision_state != self._collision:
            if self._collision is not None or m.collision_state:
                self._add(m.header.stamp.to_sec(), "collision", "detected" if m.collision_state else "cleared")
            self._collision = m.collision_state

    def sequence(self) -> list:
        with self._lock:
            return [(kind, detail) for _, kind, detail in sorted(self.events, key=lambda e: e[0])]

    def close(self) -> None:
        for s in self.subs:
            s.unregister()

    def __enter__(self) -> "EventLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ---- robot state ------------------------------------------------------------------------------------------------
def robot_state() -> RobotAssemblyState:
    return _Latest.get("/robot/state", RobotAssemblyState).wait()


def _until_state(pred, topic: str, msg, what: str, timeout: float) -> None:
    pub = _publisher(topic, type(msg))
    if not wait_until(lambda: pred(robot_state()) or pub.publish(msg), timeout, period=0.05):
        raise TimeoutError(f"the robot did not {what} within {timeout:g} s: {robot_state()}")


def enable(timeout: float = 5.0) -> None:
    _until_state(lambda s: s.enabled, "/robot/set_super_enable", Bool(True), "enable", timeout)


def disable(timeout: float = 5.0) -> None:
    _until_state(lambda s: not s.enabled, "/robot/set_super_enable", Bool(False), "disable", timeout)


def reset(timeout: float = 5.0) -> None:
    """Clears a stop or an error (after a fault is over, or the E-stop's release); the robot is disabled afterwards.
    A fault the arm still reports (``inject_fault``'s duration not over) re-stops it: give ``timeout`` enough."""
    _until_state(lambda s: not s.stopped and not s.error, "/robot/set_super_reset", Empty(), "reset", timeout)


def _subscribed(topic: str) -> bool:
    """Some node subscribes ``topic`` (the simulated arm's cuff, the safety E-stop: not every launch has them)."""
    import rosgraph
    _, subs, _ = rosgraph.Master(rospy.get_name()).getSystemState()
    return any(t == topic and nodes for t, nodes in subs)


def interaction_off() -> None:
    """Interaction control ended, as the SDK's scripts end it (an inactive command; one left on by an earlier test
    would hold the arm where its force put it)."""
    from intera_core_msgs.msg import InteractionControlCommand
    topic = "/robot/limb/right/interaction_control_command"
    if _subscribed(topic):
        off = InteractionControlCommand(interaction_control_active=False)
        _publisher(topic, InteractionControlCommand).publish(off)


def home(pose="neutral", enabled: bool = True, tol: float = 2e-3, timeout: float = 30.0) -> None:
    """The robot back in a known state, for tests that share one launch (``module_launch``) instead of starting their
    own: the E-stop button out, the safety E-stop released, the cuff let go, interaction control off, a stop or
    error reset, enabled, the arm brought to ``pose`` (a named pose of ``/named_poses/right/poses``, a list of the
    arm's angles, or {name: angle}; position commands, re-sent) until it is within ``tol`` rad and at rest, disabled
    again if ``enabled`` is False, and what the robot said before forgotten (``forget``). ``timeout``: robot seconds
    for each step (TimeoutError naming it). A fault the arm still reports (``inject_fault``'s duration) keeps it
    stopped: wait that out first."""
    from intera_core_msgs.msg import JointCommand
    forget()
    if isinstance(pose, str):
        pose = rospy.get_param(f"/named_poses/right/poses/{pose}")
    names = list(pose) if isinstance(pose, dict) else arm_joints()[:len(pose)]
    target = np.asarray(list(pose.values()) if isinstance(pose, dict) else pose, float)
    if robot_state().estop_button == RobotAssemblyState.ESTOP_BUTTON_PRESSED:
        release_estop(timeout)
    if _subscribed("/realtime_loop/safety_estop"):
        _publisher("/realtime_loop/safety_estop", Bool).publish(Bool(False))
    if _subscribed("/robot/sim/io/cuff"):
        squeeze_cuff(False, timeout)
    interaction_off()
    if robot_state().stopped or robot_state().error:
        reset(timeout)
    enable(timeout)
    cmd, pub = JointCommand(mode=JointCommand.POSITION_MODE, names=names, position=list(target)), \
        _publisher("/robot/limb/right/joint_command", JointCommand)

    def there() -> bool:
        return (np.abs(joint_positions(names) - target).max() <= tol
                and np.abs(joint_velocities(names)).max() < 0.01)
    if not wait_until(lambda: there() or pub.publish(cmd), timeout, period=0.02):
        raise TimeoutError(f"home: the arm did not come to rest at {list(target)} within {timeout:g} s "
                           f"(at {list(joint_positions(names))}; {robot_state()})")
    if not enabled:
        disable(timeout)
    forget()


# ---- faults ------------------------------------------------------------------------------------------------------
def _call(service: str, srv_type, *args):
    rospy.wait_for_service(service, 10.0)
    r = rospy.ServiceProxy(service, srv_type)(*args)
    if not r.success:
        raise ValueError(f"{service}: {r.message}")
    return r


def press_estop(timeout: float = 2.0) -> None:
    """The E-stop button pressed; returns once the robot reports it (stopped)."""
    from std_srvs.srv import SetBool
    _call("/robot/sim/set_estop", SetBool, True)
    pressed = RobotAssemblyState.ESTOP_BUTTON_PRESSED
    if not wait_until(lambda: robot_state().stopped and robot_state().estop_button == pressed, timeout):
        raise TimeoutError(f"the robot did not report the E-stop within {timeout:g} s")


def release_estop(timeout: float = 2.0) -> None:
    """The button out again; returns once the robot reports it released (it stays stopped until ``reset()``)."""
    from std_srvs.srv import SetBool
    _call("/robot/sim/set_estop", SetBool, False)
    if not wait_until(lambda: robot_state().estop_button == RobotAssemblyState.ESTOP_BUTTON_RELEASED, timeout):
        raise TimeoutError(f"the robot did not report the E-stop released within {timeout:g} s")


def squeeze_cuff(on: bool = True, timeout: float = 2.0) -> None:
    """The cuff squeezed (zero-G: the arm floats, while the robot is enabled) or let go; returns once the cuff
    reports it."""
    from intera_core_msgs.msg import IODeviceStatus
    pub = _publisher("/robot/sim/io/cuff", IOComponentCommand)
    cmd = IOComponentCommand(op="set", args=json.dumps({"signals": {"right_cuff": {"data": [int(on)]}}}))

    def squeezed() -> bool:
        st = _Latest.get("/io/robot/cuff/state", IODeviceStatus).msg
        sig = next((x for x in st.signals if x.name == "right_cuff"), None) if st is not None else None
        return sig is not None and json.loads(sig.data) == [bool(on)]
    if not wait_until(lambda: squeezed() or pub.publish(cmd), timeout, period=0.05):
        raise TimeoutError(f"the cuff did not report right_cuff = {bool(on)} within {timeout:g} s")


def push(link: str, force=(0.0, 0.0, 0.0), torque=(0.0, 0.0, 0.0), duration: float = 0.5) -> None:
    """Push on ``link`` (force N, torque Nm, base axes, at the link frame's origin) for ``duration`` s of robot time."""
    from geometry_msgs.msg import Vector3, Wrench
    from intera_compat.srv import ApplyWrench
    _call("/robot/sim/apply_wrench", ApplyWrench, link, Wrench(force=Vector3(*force), torque=Vector3(*torque)),
          duration)


def inject_fault(fault: str, duration: float) -> None:
    """The arm reports ``fault`` (``link_lost``, ``protective_stop``, ``controller_error``, ``hardware_estop``) for
    ``duration`` s of robot time: the robot stops (error) and stays stopped until ``reset()`` and ``enable()``."""
    from intera_compat.srv import InjectFault
    _call("/robot/sim/inject_fault", InjectFault, fault, duration)
