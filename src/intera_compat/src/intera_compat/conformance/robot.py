"""What the running robot has, found from the outside (its parameters, topics and declared backend), and its time.

Robot time is ``/clock`` when the robot publishes one (the simulated robots run on it, faster or slower than the
wall) and the wall clock otherwise (a robot without ``/clock`` stamps everything with wall time)."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np
import rospy

from .. import testing as T

WALL_GUARD = 120.0  # s of wall time a wait adds to its robot-time budget before it gives up on a robot that stalls


@dataclass
class RobotInfo:
    backend: str  # the realtime loop's backend: sim, sim_position, ros_control, ur, cobot (or "unknown")
    arm: str  # the config's name: sawyer, ur5e, cobot7, ...
    joints: list  # the arm's joint names, in order
    neutral: np.ndarray  # the named pose "neutral" (the arm's start pose when it has none)
    lower: np.ndarray  # joint position limits (rad)
    upper: np.ndarray
    capabilities: frozenset  # the backend's declared capabilities ("torque", "position", "trajectory_only", ...)
    head: bool  # a head pan joint (/robot/head/head_state)
    head_display: bool  # a head display (/robot/head_display subscribed)
    gripper: bool  # an electric gripper (IO node end_effector's right_gripper)
    lights: list = field(default_factory=list)  # the IO node robot's light signals
    clock: bool = False  # the robot runs on /clock
    sim_io: bool = False  # the simulator presses buttons (/robot/sim/io/*)

    @property
    def n(self) -> int:
        return len(self.joints)

    @property
    def streaming(self) -> bool:
        """Takes streamed JointCommands (POSITION / VELOCITY / TRAJECTORY): not a trajectory-only arm."""
        return "trajectory_only" not in self.capabilities

    @property
    def torque(self) -> bool:
        return "torque" in self.capabilities

    @property
    def velocity(self) -> bool:
        return "velocity" in self.capabilities or "torque" in self.capabilities

    @property
    def interaction(self) -> bool:
        """Serves interaction control: impedance on a torque arm, admittance on a position arm with a wrist F/T."""
        c = self.capabilities
        return "torque" in c or ("wrench" in c and bool(c & {"position", "velocity"}))

    def summary(self) -> str:
        has = [w for w, ok in (("head", self.head), ("head display", self.head_display), ("gripper", self.gripper))
               if ok]
        return (f"{self.arm} on backend {self.backend}: {self.n} joints, {', '.join(sorted(self.capabilities))}; "
                f"{', '.join(has) or 'no head, no gripper'}; {'/clock' if self.clock else 'wall'} time")


def _topics() -> tuple[set, set]:
    import rosgraph
    pubs, subs, _ = rosgraph.Master(rospy.get_name()).getSystemState()
    return {t for t, _ in pubs}, {t for t, _ in subs}


def _capabilities(backend: str, config: str) -> frozenset:
    """The backend's declared capabilities, as the realtime loop computes them from its config and launch options."""
    from ..config import load_config
    from ..hardware.registry import declared_capabilities
    cfg = load_config(config or None)
    p = lambda name: rospy.get_param(f"/realtime_loop/{name}", "")  # noqa: E731
    options = {
        "ros_control": {"interface": p("ros_control_interface"), "rate": float(p("ros_control_rate") or 0.0)},
        "ur": {k: p(f"ur_{k}") for k in ("robot_ip", "rate", "link_timeout", "interface")},
        "cobot": {k: p(f"cobot_{k}") for k in ("endpoint", "execution_mode", "settle_timeout")},
    }.get(backend, {})
    options = {k: v for k, v in options.items() if v not in ("", 0, 0.0)}
    return frozenset(c.value for c in declared_capabilities(backend, cfg, options))


def discover() -> RobotInfo:
    """The running robot (needs ``rospy.init_node`` and the robot's parameters up)."""
    joints = list(rospy.get_param("/robot_config/right_config/joint_names"))
    pubs, subs = _topics()
    backend = str(rospy.get_param("/realtime_loop/backend", "unknown"))
    config = str(rospy.get_param("/realtime_loop/config", ""))
    arm = os.path.splitext(os.path.basename(config))[0] or "unknown"
    try:
        caps = _capabilities(backend, config)
    except Exception as e:  # (an arm this tool does not know: assume the least, say so)
        rospy.logwarn(f"conformance: the backend's capabilities are unknown ({e}); assuming a position-only arm")
        caps = frozenset({"position"})
    named = rospy.get_param("/named_poses/right", {})
    q_now = T.joint_positions(joints)
    if named and "neutral" in named.get("poses", {}):
        by_name = dict(zip(named["joint_names"], named["poses"]["neutral"]))
        neutral = np.array([by_name.get(j, q) for j, q in zip(joints, q_now)])
    else:
        neutral = q_now
    from sensor_msgs.msg import JointState  # noqa: F401 (the limits come with the URDF's)
    lower, upper = _limits(joints)
    lights = []
    if "/io/robot/robot/state" in pubs:
        from intera_core_msgs.msg import IODeviceStatus
        try:
            st = rospy.wait_for_message("/io/robot/robot/state", IODeviceStatus, 10.0)
            lights = [s.name for s in st.signals if "light" in s.name]
        except rospy.ROSException:
            pass
    return RobotInfo(backend=backend, arm=arm, joints=joints, neutral=neutral, lower=lower, upper=upper,
                     capabilities=caps, head="/robot/head/head_state" in pubs,
                     head_display="/robot/head_display" in subs,
                     gripper="/io/end_effector/right_gripper/state" in pubs, lights=lights,
                     clock="/clock" in pubs, sim_io="/robot/sim/io/navigator" in subs)


def _limits(joints: list) -> tuple[np.ndarray, np.ndarray]:
    from intera_core_msgs.msg import JointLimits
    try:
        m = rospy.wait_for_message("/robot/joint_limits", JointLimits, 10.0)
        lo = np.array([m.position_lower[m.joint_names.index(j)] for j in joints])
        hi = np.array([m.position_upper[m.joint_names.index(j)] for j in joints])
        return lo, hi
    except (rospy.ROSException, ValueError):
        return np.full(len(joints), -np.pi), np.full(len(joints), np.pi)


# ---- the robot's time ------------------------------------------------------------------------------------------
def now(clock: bool) -> float:
    """Robot time (s): the newest /clock, or the wall clock on a robot without one."""
    return T.sim_time() if clock else time.time()


def wait_until(cond, seconds: float, clock: bool, period: float = 0.01) -> bool:
    """Until ``cond()`` (True) or ``seconds`` of robot time passed (False); a wall guard for a stalled robot."""
    end, wall_end = now(clock) + seconds, time.monotonic() + WALL_GUARD + seconds
    while not cond():
        if now(clock) >= end or time.monotonic() > wall_end:
            return bool(cond())
        time.sleep(period)
    return True


def sleep(seconds: float, clock: bool) -> None:
    wait_until(lambda: False, seconds, clock)
