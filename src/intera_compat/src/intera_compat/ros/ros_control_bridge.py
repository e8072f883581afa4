"""The ROS half of the ros_control backend (``hardware/ros_control.py`` is the loop's half), in the realtime_loop
node: ``/joint_states`` in (reordered to the config's joints, written to the loop's record, one poke per sample),
the loop's commands out as ``std_msgs/Float64MultiArray`` to the configured JointGroup*Controller, and the
optional speed-scaling topic (the UR driver's ``/speed_scaling_factor``). On a trajectory-only arm (``interface:
trajectory``) nothing is streamed: each trajectory the loop submits goes whole to the arm's FollowJointTrajectory
action, cancels cancel it, and its state comes back to the loop (``traj_state``); no server, a goal the arm
rejects or aborts, or a server gone silent (no status for ``STATUS_TIMEOUT``) is a failure: the loop faults.

A velocity or effort controller keeps its last command for ever: the bridge stops the arm when the loop ends —
its end of the command pipe closes (the loop process exited, or was killed: the bridge holds no copy of that
end once the loop runs), it falls silent for ``silence`` after a moving command (hung), or the node shuts down
(``close``: after the loop's own last word). A velocity arm gets zeros. An effort arm would fall on zeros: it is
held (``hold_stream.py``: gravity compensation and a damped spring at the pose where the commands stopped, one
torque per joint-state sample, zero effort only when the samples are stale or missing; after an orderly end from
the loop's last word on, not its EOF) until the loop's commands come back or the node shuts down; then, once the
arm rests, gravity compensation at its pose is the last word.
A position controller holds its last position: nothing is sent.

Callbacks only copy: the joint-name → index map is built once per distinct name list.
"""
from __future__ import annotations

import os
import select
import threading
import time

import numpy as np
import rospy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray, MultiArrayDimension

from ..data.faults import FAULT_CONTROLLER_ERROR
from ..data.shm import SeqlockRecord
from ..data.state import PROGRESS_ACTIVE, PROGRESS_DONE, PROGRESS_FAILED, PROGRESS_NONE
from ..hardware.ros_control import SEND_LAST, JointStateMap, RosControlSettings, in_layout, out_layout, traj_layout
from ..model.robot_model import RobotModel
from .hold_stream import HoldStream

STATUS_TIMEOUT = 1.0  # s without a status message from the arm's trajectory action while a goal runs: it is gone
# (actionlib servers publish their status at 5 Hz by default; a server set below 1 Hz needs this raised)
ACCEPT_TIMEOUT = 1.0  # s a goal may stay pending (not accepted by the arm's controller) before it fails
SERVER_WAIT = 0.5  # s a submission waits for the action server before it fails
CLOSE_WAIT = 1.0  # s close() waits for the send thread to pass on the loop's last word (it ends at the pipe's EOF)


class RosControlBridge:
    def __init__(self, cfg, interface: str = "", rate: float = 0.0, link_timeout: float = 0.0):
        self.s = s = RosControlSettings.from_config(cfg, interface, rate, link_timeout)
        self.interface, self.rate, self.link_timeout = interface, rate, link_timeout
        self.joints = list(s.joints)
        n = self.n = len(self.joints)
        self.hw_in = SeqlockRecord(in_layout(n), create=True)
        self.hw_out = SeqlockRecord(out_layout(n), create=True)
        self.hw_in.local.speed_scaling[0] = 1.0
        self.wake_r, self.wake_w = os.pipe()
        self.command_r, self.command_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        self._lock = threading.Lock()  # joint states and speed scaling write the same record (and close ends them)
        self._closed = False
        self._map = JointStateMap(self.joints)  # msg.name -> (their indices in config order, which of ours are missing)
        self._missing_logged = False
        self.samples = 0
        self.sent = 0
        self.stale = 0  # speed-scaling messages that were not finite numbers
        self._field = s.interface  # the out record's array that goes to the controller
        self.msg = Float64MultiArray()
        self.msg.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
        self.zeros = Float64MultiArray(layout=self.msg.layout, data=[0.0] * n)
        self.zeros_sent = 0  # stops the bridge sent by itself (the loop gone, hung or shut down)
        self._moving = False  # the last command sent to a velocity / effort controller was not all zeros
        self._stopped = False  # the loop's end closed and zeros went out (or there was nothing to stop)
        self.pub = None if s.command_topic is None else \
            rospy.Publisher(s.command_topic, Float64MultiArray, queue_size=1, tcp_nodelay=True)
        self.forwarder = TrajectoryForwarder(self, cfg.n_arm) if s.interface == "trajectory" else None
        # an effort arm's dead-man: a hold from its joint states (its own model: the node's serves another thread)
        self.hold = HoldStream(s.effort_hold(RobotModel(cfg)), self.pub, "ros_control", s.command_topic,
                               s.stale_after / 2.0) if s.interface == "effort" else None
        rospy.Subscriber(s.joint_states, JointState, self._on_joint_states, queue_size=1, tcp_nodelay=True)
        if s.speed_scaling:
            rospy.Subscriber(s.speed_scaling, Float64, self._on_scaling, queue_size=1, tcp_nodelay=True)
        self._sender = threading.Thread(target=self._send_loop, daemon=True)

    @property
    def link(self) -> dict:
        """What the loop process needs (pipe ends it inherits: ``pass_fds``)."""
        link = {"in": self.hw_in.name, "out": self.hw_out.name, "wake_fd": self.wake_r, "command_fd": self.command_w,
                "interface": self.interface, "rate": self.rate, "link_timeout": self.link_timeout}
        if self.forwarder is not None:
            link["traj"] = self.forwarder.rec.name
        return link

    @property
    def child_fds(self) -> tuple:
        return self.wake_r, self.command_w

    def start(self) -> None:
        """The loop process was started (it inherited ``child_fds``): from now its end of the command pipe is its
        alone, so its exit, however it comes, is an EOF here."""
        if self.command_w >= 0:
            os.close(self.command_w)
            self.command_w = -1
        self._sender.start()

    # ---- arm → loop -------------------------------------------------------------------------------
    def _on_joint_states(self, msg: JointState) -> None:
        idx, missing = self._map(msg.name)
        if len(missing) == len(idx):
            return  # another publisher's joints (a gripper's, say): not this arm's message
        o = self.hw_in.local
        with self._lock:
            if self._closed:
                return  # (the node shuts down: rospy may still deliver a message or two)
            if len(missing):
                o.fault[0], o.fault_joint[0] = FAULT_CONTROLLER_ERROR, missing[0]
                if not self._missing_logged:
                    self._missing_logged = True
                    rospy.logerr(f"ros_control: {self.s.joint_states} lacks {[self.joints[i] for i in missing]}: "
                                 f"the robot stops (controller error) until the arm reports every joint")
            else:
                o.fault[0] = 0.0
                try:
                    o.position[:] = np.take(msg.position, idx)
                    o.velocity[:] = np.take(msg.velocity, idx) if len(msg.velocity) else 0.0
                    o.effort[:] = np.take(msg.effort, idx) if len(msg.effort) else 0.0
                except IndexError:  # arrays shorter than name: a malformed message is not a sample
                    o.fault[0], o.fault_joint[0] = FAULT_CONTROLLER_ERROR, -1
            self.samples += 1
            o.sample[0] = self.samples
            stamp = msg.header.stamp.to_sec()
            o.stamp[0] = stamp if stamp > 0.0 else time.monotonic()  # (the arm's time: the loop's catch-up)
            self.hw_in.publish_local()
            try:
                os.write(self.wake_w, b"\x01")
            except BlockingIOError:
                pass  # the loop is behind: it reads the newest sample anyway
            if self.hold is not None and not o.fault[0]:
                self.hold.observe(stamp, o.position, o.velocity if len(msg.velocity) else None)

    def _on_scaling(self, msg: Float64) -> None:
        v = msg.data
        if not np.isfinite(v):
            self.stale += 1
            return
        with self._lock:
            if self._closed:
                return
            self.hw_in.local.speed_scaling[0] = min(max(v, 0.0), 1.0)
            self.hw_in.publish_local()

    # ---- loop → arm -------------------------------------------------------------------------------
    def _send_loop(self) -> None:
        out = self.hw_out
        arr = None if self.forwarder is not None else getattr(out.local, self._field)
        zeroed, silence = self.s.zeroed, self.s.silence
        last = 0.0
        while not rospy.is_shutdown():
            try:
                if zeroed and self._moving and not select.select((self.command_r,), (), (), silence)[0]:
                    self._stop_arm(f"no command from the realtime loop for {silence:g} s (hung?)")
                    continue
                if not os.read(self.command_r, 4096) or self._closed:
                    break  # the loop's end closed
            except (OSError, ValueError):  # (closed here: close() gave up waiting)
                break
            if self.forwarder is not None:
                self.forwarder.poll()
                continue
            if not out.read() or out.local.command[0] == last:
                continue
            last = out.local.command[0]
            self.msg.data = arr.tolist()
            if self.hold is not None:
                self.hold.mark()  # (where the arm is now: the pose to hold if this is the loop's last command)
            self.pub.publish(self.msg)
            self._moving = zeroed and any(self.msg.data)
            self.sent += 1
            if self.hold is not None and out.local.send[0] == SEND_LAST:
                # (an orderly end: gravity alone lets a moving arm coast on until the pipe's EOF is seen — under
                #  load, tens of ms: the hold starts from the pose of this last word at once)
                self._stop_arm("the realtime loop ends")
        if self.forwarder is None:  # (after an orderly end its last word was a stop already: said quietly)
            self._stop_arm("the realtime loop ended", warn=self._moving)
        else:
            self.forwarder.stop("the realtime loop ended")
        self._stopped = True

    def _stop_arm(self, why: str, warn: bool = True) -> None:
        """Zeros to a velocity controller, a hold to an effort one (either would keep its last command for ever)."""
        if not self.s.zeroed:
            return
        if self.hold is not None:
            self.hold.start(why)
            self._moving = False
            self.zeros_sent += 1
            return
        self.pub.publish(self.zeros)
        self._moving = False
        self.zeros_sent += 1
        (rospy.logwarn if warn else rospy.loginfo)(f"ros_control: {why}: zero {self.s.interface} sent to "
                                                    f"{self.s.command_topic}")

    def close(self) -> None:
        """After the loop process ended: its last word and then zeros reach the arm (the send thread passes them on
        at the pipe's EOF; if it cannot, zeros are sent from here), then the pipes and records are released."""
        if self._sender.is_alive() and self._sender is not threading.current_thread():
            self._sender.join(CLOSE_WAIT)
        if not self._stopped and self.forwarder is None and self.pub is not None:
            self._stop_arm("the realtime loop node shuts down")
        if self.hold is not None:  # (the joint states still come in: the hold goes on until the arm rests)
            self.hold.leave("the realtime loop node shuts down")
        with self._lock:  # (the callbacks see it closed, never a closed record)
            self._closed = True
            for fd in (self.wake_r, self.wake_w, self.command_r, self.command_w):
                if fd < 0:
                    continue
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.wake_r = self.wake_w = self.command_r = self.command_w = -1
            recs = (self.hw_in, self.hw_out) + ((self.forwarder.rec,) if self.forwarder is not None else ())
            for rec in recs:
                try:
                    rec.close()
                except (BufferError, FileNotFoundError):
                    pass


class TrajectoryForwarder:
    """The bridge's half of a trajectory-only arm: the loop's submissions → FollowJointTrajectory goals."""

    def __init__(self, bridge: RosControlBridge, m: int):
        import actionlib
        from actionlib_msgs.msg import GoalStatusArray
        from control_msgs.msg import FollowJointTrajectoryAction

        s = bridge.s
        self.bridge, self.m = bridge, m
        self.names = list(s.joints[:m])
        self.rec = SeqlockRecord(traj_layout(m, s.max_knots), create=True)
        self.client = actionlib.SimpleActionClient(s.trajectory_action, FollowJointTrajectoryAction)
        self.action = s.trajectory_action
        self.seq = self.cancelled = 0.0
        self.running = False
        self.last_status = self.sent_at = 0.0
        self.lock = threading.Lock()  # running / last_status / sent_at: the send thread, callbacks, the timer
        rospy.Subscriber(s.trajectory_action + "/status", GoalStatusArray, self._on_status, queue_size=1)
        rospy.Timer(rospy.Duration(0.1), self._watch)

    def _report(self, seq: float, state: int, t: float | None = None, why: str = "") -> None:
        b = self.bridge
        o = b.hw_in.local
        with b._lock:
            if b._closed:
                return
            ended = o.traj_seq[0] == seq and o.traj_state[0] in (PROGRESS_DONE, PROGRESS_FAILED)
            if ended and state == PROGRESS_ACTIVE:
                return  # a late feedback message after the end: the end stands
            o.traj_seq[0], o.traj_state[0] = seq, state
            if t is not None:
                o.traj_time[0] = t
            b.hw_in.publish_local()
        if state == PROGRESS_FAILED:
            rospy.logerr(f"ros_control: trajectory {seq:g} on {self.action} failed: {why}; the robot stops "
                         f"(controller error) until reset")

    def stop(self, why: str) -> None:
        """The loop is gone: a goal the arm still runs is cancelled (a joint_trajectory_controller then stops on
        its own, within its ``stop_trajectory_duration``), not left to run to its end unwatched."""
        with self.lock:
            running = self.running
        if running and self.cancelled != self.seq:
            self.cancelled = self.seq
            self.client.cancel_goal()
            rospy.logwarn(f"ros_control: {why}: trajectory {self.seq:g} on {self.action} cancelled")

    def poll(self) -> None:
        """The loop poked: a new submission or a cancel."""
        if not self.rec.read():
            return
        o = self.rec.local
        if o.seq[0] > self.seq:
            self._send(o)
        if o.cancel[0] == self.seq and self.cancelled != self.seq and self.running:
            self.cancelled = self.seq
            self.client.cancel_goal()

    def _send(self, o) -> None:
        from control_msgs.msg import FollowJointTrajectoryGoal
        from trajectory_msgs.msg import JointTrajectoryPoint

        self.seq, k, m = float(o.seq[0]), int(o.count[0]), self.m
        if not self.client.wait_for_server(rospy.Duration(SERVER_WAIT)):
            self._report(self.seq, PROGRESS_FAILED, why="no FollowJointTrajectory server (is the arm's trajectory "
                                                    "controller running?)")
            return
        goal = FollowJointTrajectoryGoal()
        goal.trajectory.joint_names = self.names
        q, v, a = (arr[:k * m].reshape(k, m) for arr in (o.q, o.v, o.a))
        order = int(o.order[0])  # the fields a joint_trajectory_controller picks its polynomial from
        for i in range(k):
            p = JointTrajectoryPoint(positions=q[i].tolist(), time_from_start=rospy.Duration.from_sec(float(o.t[i])))
            if order >= 3:
                p.velocities = v[i].tolist()
            if order >= 5:
                p.accelerations = a[i].tolist()
            goal.trajectory.points.append(p)
        goal.trajectory.header.stamp = rospy.Time(0)  # start on receipt (the loop's time base starts now too)
        seq = self.seq
        with self.lock:
            self.last_status = self.sent_at = rospy.get_time()
            self.running = True
        self._report(seq, PROGRESS_ACTIVE, 0.0)
        self.client.send_goal(goal, done_cb=lambda st, res: self._done(seq, st, res),
                              feedback_cb=lambda fb: self._feedback(seq, fb))

    def _feedback(self, seq: float, fb) -> None:
        if seq == self.seq:
            self._report(seq, PROGRESS_ACTIVE, fb.actual.time_from_start.to_sec())

    def _done(self, seq: float, status: int, result) -> None:
        from actionlib_msgs.msg import GoalStatus

        if seq != self.seq:
            return  # an older goal's end (replaced)
        with self.lock:
            self.running = False
        if status == GoalStatus.SUCCEEDED and (result is None or result.error_code == 0):
            self._report(seq, PROGRESS_DONE)
        elif status in (GoalStatus.PREEMPTED, GoalStatus.RECALLED) and self.cancelled == seq:
            self._report(seq, PROGRESS_NONE)  # we stopped it
        else:
            names = {GoalStatus.ABORTED: "aborted", GoalStatus.REJECTED: "rejected", GoalStatus.PREEMPTED: "preempted",
                     GoalStatus.RECALLED: "recalled", GoalStatus.LOST: "lost"}
            why = f"the goal was {names.get(status, f'ended with status {status}')}"
            if result is not None:
                why += f", error_code {result.error_code} {result.error_string!r}"
            self._report(seq, PROGRESS_FAILED, why=why)

    def _on_status(self, msg) -> None:
        with self.lock:
            self.last_status = rospy.get_time()

    def _watch(self, _event) -> None:
        """A goal whose server went silent, or that the arm's controller never took up, has failed."""
        from actionlib_msgs.msg import GoalStatus

        now = rospy.get_time()
        with self.lock:
            if not self.running:
                return
            silent = now - self.last_status > STATUS_TIMEOUT
            pending = now - self.sent_at > ACCEPT_TIMEOUT and self.client.get_state() == GoalStatus.PENDING
            if silent or pending:
                self.running = False
        if silent:
            self._report(self.seq, PROGRESS_FAILED, why=f"no status from the action for {STATUS_TIMEOUT:g} s (gone?)")
        elif pending:
            self._report(self.seq, PROGRESS_FAILED, why=f"the arm's controller did not take the goal up within "
                                                    f"{ACCEPT_TIMEOUT:g} s")
