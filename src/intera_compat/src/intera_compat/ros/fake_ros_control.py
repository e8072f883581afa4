"""A MuJoCo arm behind exactly the interface gazebo_ros_control gives (Debian has no Gazebo nor ros_control): the
test fixture of the ros_control backend, and a way to try ``ros_control.launch`` without Gazebo.

* ``/joint_states`` (sensor_msgs/JointState: position, velocity, measured effort) at ``~rate`` Hz, as
  joint_state_controller publishes it;
* one ``JointGroup{Position,Velocity,Effort}Controller``: ``std_msgs/Float64MultiArray`` on the configured
  command topic, one value per joint in the controller's order; the last command holds until the next, for ever
  (as ros_controllers do), and before the first one the arm's positions or zeros (velocity, effort: as they
  start); a command of the wrong length or with a NaN is refused with a log, as there;
* the plant: the configured arm simulated, stepped every 1 ms in real time; the position controller is a stiff
  PD with gravity compensation and a velocity feed-forward from its last two commands (as a real arm's servo
  interpolates its stream; a bare PD would brake every move with its D term), the velocity controller a PD on
  the integrated velocity (that reference kept within ``WINDUP`` of the arm: a blocked arm does not wind it up),
  the effort controller passes torques through. An effort arm's physics waits for its first command (the arm stays
  in its initial pose until then, as a Gazebo world started ``paused`` and unpaused once its controllers run: an
  effort controller starts at zero, and the arm would otherwise fall before the loop has started).

* ``interface: trajectory``: instead, a joint trajectory controller's ``FollowJointTrajectory`` action (cubic
  Hermite through the points' positions and velocities, from receipt; a cancel holds where the arm is).

Fault injection for tests: ``~pause_joint_states`` (std_srvs/SetBool: the link goes silent while true),
``~drop_trajectory_action`` (std_srvs/SetBool: the trajectory action vanishes from the graph, its goal stops),
``~stall_trajectory`` (std_srvs/SetBool: goals are accepted but not executed, no feedback: a hung controller),
``~drop_joint`` (std_msgs/String: leave that joint out of joint states; "" restores it) and
``~teleport`` (sensor_msgs/JointState: put the arm there, as a person moving a braked-off arm would).
"""
from __future__ import annotations

import threading
import time

import numpy as np
import rospy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, SetBoolResponse

from ..config import load_config
from ..data.state import CommandMode, HardwareCommand, HardwareState
from ..hardware.ros_control import RosControlSettings
from ..hardware.sim import SimBackend, SimPositionBackend
from ..loop.scheduler import raise_priority, sleep_until_next
from ..model.robot_model import RobotModel
from .node_init import init_node


WINDUP = 0.05  # rad: the velocity controller's integrated reference stays this close to the arm


class FakeRosControl:
    def __init__(self):
        self.cfg = cfg = load_config(rospy.get_param("~config", None) or None)
        s = RosControlSettings.from_config(cfg, rospy.get_param("~interface", ""), float(rospy.get_param("~rate", 0.0)))
        self.interface = s.interface
        self.rate = s.rate
        self.names = list(s.joints)
        rm = RobotModel(cfg)
        q0 = cfg.full_pose(rospy.get_param("~initial_pose", cfg.sim.get("initial_pose", "neutral")))
        self.plant = SimPositionBackend(rm, q0)
        self.plant.connect()
        n = self.n = len(self.names)
        self.state = HardwareState.zeros(n)
        self.plant.read(self.state)
        self.cmd = HardwareCommand.zeros(n, CommandMode.POSITION)
        self.cmd.position[:] = self.state.position
        self.lock = threading.Lock()
        # the controller's latest command; until the first one, what a JointGroup*Controller starts with: the arm's
        # positions (position), zeros (velocity, effort)
        self._given = self.state.position.copy() if self.interface == "position" else np.zeros(n)
        self._given_v = np.zeros(n)  # position controller: the velocity between its last two commands ...
        self._t_given = 0.0  # ... and when the last came (monotonic s); the feed-forward ends a period after it
        self._vmax = cfg.limits.velocity.copy()
        self.paused = False
        self.frozen = self.interface == "effort"  # (physics paused until the first command)
        self.dropped = ""
        self.refused = 0
        self.js = JointState(name=list(self.names))
        self.pub = rospy.Publisher(s.joint_states, JointState, queue_size=1, tcp_nodelay=True)
        self.jtc = None
        if self.interface == "trajectory":
            self.jtc = FakeTrajectoryController(self, s.trajectory_action, cfg.n_arm)
            topic = s.trajectory_action
        else:
            topic = s.command_topics[self.interface]
            rospy.Subscriber(topic, Float64MultiArray, self._on_command, queue_size=1, tcp_nodelay=True)
        rospy.Service("~pause_joint_states", SetBool, self._on_pause)
        rospy.Subscriber("~drop_joint", String, self._on_drop, queue_size=1)
        rospy.Subscriber("~teleport", JointState, self._on_teleport, queue_size=1)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        rospy.loginfo(f"fake ros_control arm: {self.interface} controller on {topic}, joint states at {self.rate:g} Hz")

    # ---- controller and fault injection --------------------------------------------------------------
    def _on_command(self, msg: Float64MultiArray) -> None:
        d = np.asarray(msg.data, float)
        if d.shape != (self.n,) or not np.isfinite(d).all():
            self.refused += 1
            rospy.logerr_throttle(1.0, f"command has {len(d)} values (or a non-finite one) for {self.n} joints: "
                                       f"refused")
            return
        with self.lock:
            if self.interface == "position":
                # the stream's velocity, over at least half its nominal period (a late message followed by an
                # early one is not a speed-up), within the joints' limits; none after a pause
                now = time.monotonic()
                gap = now - self._t_given
                if gap < 3.0 / self.rate:
                    np.subtract(d, self._given, out=self._given_v)
                    self._given_v /= max(gap, 0.5 / self.rate)
                    np.clip(self._given_v, -self._vmax, self._vmax, out=self._given_v)
                else:
                    self._given_v[:] = 0.0
                self._t_given = now
            self._given[:] = d
            self.frozen = False

    def _on_pause(self, req):
        self.paused = bool(req.data)
        return SetBoolResponse(True, "joint states " + ("paused" if self.paused else "flowing"))

    def _on_drop(self, msg: String) -> None:
        self.dropped = msg.data

    def _on_teleport(self, msg: JointState) -> None:
        q = self.state.position.copy()
        for name, x in zip(msg.name, msg.position):
            if name in self.names:
                q[self.names.index(name)] = x
        with self.lock:
            self.plant.set_state(q)
            self.cmd.position[:] = q
            self._given_v[:] = 0.0
            self._t_given = 0.0
            if self.interface == "position":
                self._given[:] = q

    # ---- the plant ---------------------------------------------------------------------------------
    def _step(self, dt: float) -> None:
        with self.lock:
            given = self._given
            cmd, st = self.cmd, self.state
            if self.jtc is not None:
                self.jtc.sample(time.monotonic(), cmd)
                self.plant.write(cmd)
            elif self.interface == "position":
                cmd.position[:] = given
                if time.monotonic() - self._t_given < 1.5 / self.rate:  # (a stream that stops: no coasting)
                    cmd.velocity[:] = self._given_v
                else:
                    cmd.velocity[:] = 0.0
                self.plant.write(cmd)
            elif self.interface == "velocity":
                cmd.position += given * dt  # PD on the integrated velocity command, kept near the arm (a blocked
                np.clip(cmd.position, st.position - WINDUP, st.position + WINDUP, out=cmd.position)  # arm: no windup)
                cmd.velocity[:] = given
                self.plant.write(cmd)
            elif not self.frozen:
                cmd.mode = CommandMode.TORQUE
                cmd.effort[:] = given
                SimBackend.write(self.plant, cmd)
            self.plant.read(st)

    def _publish(self) -> None:
        st, js = self.state, self.js
        keep = [k for k, name in enumerate(self.names) if name != self.dropped]
        js.header.stamp = rospy.Time.now()
        js.name = [self.names[k] for k in keep]
        js.position = st.position[keep].tolist()
        js.velocity = st.velocity[keep].tolist()
        js.effort = st.effort[keep].tolist()
        self.pub.publish(js)

    def _run(self) -> None:
        dt = self.plant.period
        steps_per_sample = max(1, int(round(1.0 / (self.rate * dt))))
        t_next = time.monotonic() + dt
        k = 0
        while not rospy.is_shutdown():
            self._step(dt)
            k += 1
            if k % steps_per_sample == 0 and not self.paused:
                try:
                    self._publish()
                except rospy.ROSException:  # (closed by the shutdown that ends this loop)
                    if rospy.core.is_shutdown_requested():
                        return
                    raise
            t_next = sleep_until_next(t_next, dt)


class FakeTrajectoryController:
    """A joint_trajectory_controller's FollowJointTrajectory action on the fake arm's first ``m`` joints."""

    def __init__(self, fake: FakeRosControl, action: str, m: int):
        import actionlib
        from control_msgs.msg import FollowJointTrajectoryAction

        self.fake, self.m = fake, m
        self.names = fake.names[:m]
        self.hold = fake.state.position[:m].copy()
        self.t = self.q = self.v = None  # the running trajectory (times from t0, positions, velocities)
        self.linear = False  # positions only: linear interpolation
        self.t0 = 0.0
        self.lock = threading.Lock()
        self.server = actionlib.SimpleActionServer(action, FollowJointTrajectoryAction, self._execute,
                                                   auto_start=False)
        self.server.start()
        self.dropped = self.stalled = False
        rospy.Service("~drop_trajectory_action", SetBool, self._on_drop)
        rospy.Service("~stall_trajectory", SetBool, self._on_stall)

    def sample(self, now: float, cmd: HardwareCommand) -> None:
        """This 1 ms step's position and velocity for the servo (under the fake's lock)."""
        m = self.m
        with self.lock:
            if self.t is None:
                cmd.position[:m], cmd.velocity[:m] = self.hold, 0.0
                return
            t, q, v = self.t, self.q, self.v
            s = min(max(now - self.t0, 0.0), t[-1])
            k = min(max(int(np.searchsorted(t, s, side="right")) - 1, 0), len(t) - 2)
            h = t[k + 1] - t[k]
            u = (s - t[k]) / h
            if self.linear:
                cmd.position[:m] = q[k] + u * (q[k + 1] - q[k])
                cmd.velocity[:m] = (q[k + 1] - q[k]) / h
                return
            h00, h10, h01, h11 = 2 * u**3 - 3 * u**2 + 1, u**3 - 2 * u**2 + u, -2 * u**3 + 3 * u**2, u**3 - u**2
            cmd.position[:m] = h00 * q[k] + h10 * h * v[k] + h01 * q[k + 1] + h11 * h * v[k + 1]
            d00, d10, d01, d11 = 6 * u**2 - 6 * u, 3 * u**2 - 4 * u + 1, -6 * u**2 + 6 * u, 3 * u**2 - 2 * u
            cmd.velocity[:m] = (d00 * q[k] + d01 * q[k + 1]) / h + d10 * v[k] + d11 * v[k + 1]

    def _stop(self) -> None:
        with self.lock:
            self.t = None
            self.hold[:] = self.fake.state.position[:self.m]

    def _execute(self, goal) -> None:
        from control_msgs.msg import FollowJointTrajectoryFeedback, FollowJointTrajectoryResult

        jt = goal.trajectory
        res = FollowJointTrajectoryResult()
        if sorted(jt.joint_names) != sorted(self.names) or len(jt.points) < 1:
            res.error_code = FollowJointTrajectoryResult.INVALID_JOINTS
            res.error_string = f"the controller's joints are {self.names}"
            self.server.set_aborted(res)
            return
        order = [jt.joint_names.index(j) for j in self.names]
        t = np.array([p.time_from_start.to_sec() for p in jt.points])
        q = np.array([[p.positions[i] for i in order] for p in jt.points])
        linear = not any(p.velocities for p in jt.points)  # positions only: linear, as joint_trajectory_controller
        v = np.array([[p.velocities[i] for i in order] if p.velocities else [0.0] * self.m for p in jt.points])
        if t[0] > 0.0:  # from where the arm is
            t, q, v = np.r_[0.0, t], np.vstack([self.fake.state.position[:self.m], q]), np.vstack([np.zeros(self.m), v])
        if len(t) < 2 or np.any(np.diff(t) <= 0.0) or not (np.isfinite(q).all() and np.isfinite(v).all()):
            res.error_code = FollowJointTrajectoryResult.INVALID_GOAL
            res.error_string = "times must increase and values be finite"
            self.server.set_aborted(res)
            return
        r = rospy.Rate(50)
        while self.stalled and not rospy.is_shutdown():  # a hung controller: accepted, nothing happens
            if self.server.is_preempt_requested():
                self.server.set_preempted(res)
                return
            r.sleep()
        with self.lock:
            self.t, self.q, self.v, self.t0, self.linear = t, q, v, time.monotonic(), linear
        fb = FollowJointTrajectoryFeedback(joint_names=self.names)
        while not rospy.is_shutdown():
            if self.dropped:
                self._stop()
                return  # (its server is gone: nobody hears a result)
            if self.server.is_preempt_requested():
                self._stop()
                self.server.set_preempted(res)
                return
            s = time.monotonic() - self.t0
            if s >= t[-1]:
                break
            fb.actual.time_from_start = rospy.Duration.from_sec(s)
            self.server.publish_feedback(fb)
            r.sleep()
        with self.lock:
            self.t = None
            self.hold[:] = q[-1]
        self.server.set_succeeded(res)

    def _on_stall(self, req):
        self.stalled = bool(req.data)
        return SetBoolResponse(True, "trajectory controller " + ("stalled" if self.stalled else "running"))

    def _on_drop(self, req):
        """The action server leaves the graph (as a crashed controller manager's would)."""
        if req.data and not self.dropped:
            self.dropped = True
            srv = self.server.action_server
            for x in (srv.status_pub, srv.result_pub, srv.feedback_pub, srv.goal_sub, srv.cancel_sub):
                x.unregister()
            srv.status_timer.shutdown()
        return SetBoolResponse(True, "trajectory action " + ("dropped" if self.dropped else "up"))


def main() -> None:
    raise_priority()  # (it stands in for an arm's controller with a CPU of its own; its threads inherit it)
    init_node("fake_ros_control")
    try:
        FakeRosControl()
    except (ValueError, RuntimeError) as e:
        rospy.logfatal(str(e))
        raise SystemExit(1)
    rospy.spin()
