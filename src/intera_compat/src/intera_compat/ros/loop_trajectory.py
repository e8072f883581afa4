"""Client side of the loop's ``ExecuteTrajectory`` action (motion controller, JTAS).

One trajectory at a time: ``send`` hands it to the loop, a wall-clock thread sends the goal's
keep-alive (with the current time scaling) every ``period`` while it runs, and the loop's result
and latest feedback are kept. If this process dies, the keep-alives stop and the loop stops the
arm on its path within ``keepalive_timeout``.
"""
from __future__ import annotations

import threading
import time

import actionlib
import numpy as np
import rospy
from actionlib_msgs.msg import GoalStatus
from intera_compat.msg import ExecuteTrajectoryAction, ExecuteTrajectoryGoal, TrajectoryKeepAlive
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

TERMINAL = (GoalStatus.SUCCEEDED, GoalStatus.ABORTED, GoalStatus.REJECTED, GoalStatus.PREEMPTED,
            GoalStatus.RECALLED, GoalStatus.LOST)


def joint_trajectory(names, t, q, v=None, a=None) -> JointTrajectory:
    jt = JointTrajectory(joint_names=list(names))
    for i in range(len(t)):
        p = JointTrajectoryPoint(positions=list(q[i]), time_from_start=rospy.Duration.from_sec(float(t[i])))
        if v is not None:
            p.velocities = list(v[i])
        if a is not None:
            p.accelerations = list(a[i])
        jt.points.append(p)
    return jt


class LoopTrajectory:
    def __init__(self, ns: str, keepalive_timeout: float = 0.5, period: float = 0.005):
        self.client = actionlib.ActionClient(f"{ns}/execute_trajectory", ExecuteTrajectoryAction)
        self.pub = rospy.Publisher(f"{ns}/execute_trajectory_keepalive", TrajectoryKeepAlive, queue_size=1,
                                   tcp_nodelay=True)
        self.keepalive_timeout = keepalive_timeout
        self.period = period
        self.scaling = 1.0
        self.gh = None
        self._goal_id = ""
        self.result = None  # ExecuteTrajectoryResult of the last goal once it ended
        self.feedback = None  # its latest ExecuteTrajectoryFeedback
        self.heard = 0.0  # time.monotonic() of the last word (sent, feedback, transition) about it
        self.lock = threading.Lock()  # the goal handle is assigned before its callbacks look at it
        self.done = threading.Event()
        self.done.set()
        threading.Thread(target=self._keepalive_loop, daemon=True).start()

    def wait_for_server(self, timeout: float) -> bool:
        """Wait ``timeout`` wall-clock seconds (actionlib's own wait is on ROS time, which under
        use_sim_time with an unlimited speed-up can run out in a fraction of that)."""
        end = time.monotonic() + timeout
        # and the keep-alive subscriber too: the watchdog must hear us from the first cycle
        while not (self.client.wait_for_server(rospy.Duration(0.05)) and self.pub.get_num_connections() > 0):
            if time.monotonic() > end or rospy.is_shutdown():
                return False
            time.sleep(0.01)
        return True

    def send(self, names, t, q, v=None, a=None, scaling: float = 1.0, tracking: int = 0, kp=(),
             interaction=None, due: float = 0.0) -> None:
        """Start a trajectory (a running one of this client is replaced by the loop); ``tracking``, ``kp`` and
        ``interaction`` (an InteractionControlCommand): ExecuteTrajectory's TRACK_*, velocity_kp, interaction;
        ``due``: the robot time its time 0 was due (0: on arrival)."""
        jt = joint_trajectory(names, t, q, v, a)
        if due > 0.0:
            jt.header.stamp = rospy.Time.from_sec(due)
        goal = ExecuteTrajectoryGoal(trajectory=jt, time_scaling=scaling,
                                     keepalive_timeout=self.keepalive_timeout, tracking=tracking,
                                     velocity_kp=list(kp))
        if interaction is not None:
            goal.interaction = interaction
        with self.lock:  # a fast answer (a rejection) waits in its callback until gh is known
            self.result, self.feedback = None, None
            self.scaling = scaling
            self.heard = time.monotonic()
            self.done.clear()
            self.gh = self.client.send_goal(goal, self._on_transition, self._on_feedback)
            self._goal_id = self.gh.comm_state_machine.action_goal.goal_id.id

    def cancel(self) -> None:
        with self.lock:
            gh = self.gh
        if gh is not None and not self.done.is_set():
            gh.cancel()

    def set_scaling(self, s: float) -> None:
        self.scaling = float(np.clip(s, 0.0, 1.0))

    def wait(self, timeout: float | None = None) -> bool:
        return self.done.wait(timeout)

    def silent_for(self) -> float:
        """Seconds since the loop last said anything about the running goal (feedback comes at 100 Hz)."""
        return time.monotonic() - self.heard

    # ---- callbacks ---------------------------------------------------------------------------
    # actionlib hands each callback a new ClientGoalHandle wrapper: compare with ==, not ``is``
    def _on_transition(self, gh) -> None:
        with self.lock:
            if gh != self.gh:
                return
            self.heard = time.monotonic()
            if gh.get_comm_state() == actionlib.CommState.DONE:
                self.result = gh.get_result()
                self.done.set()

    def _on_feedback(self, gh, fb) -> None:
        with self.lock:
            if gh == self.gh:
                self.feedback = fb
                self.heard = time.monotonic()

    def _keepalive_loop(self) -> None:
        msg = TrajectoryKeepAlive()
        while not rospy.is_shutdown():
            if not self.done.is_set():
                msg.goal_id, msg.time_scaling = self._goal_id, self.scaling
                try:
                    self.pub.publish(msg)
                except rospy.ROSException:
                    return
            time.sleep(self.period)
