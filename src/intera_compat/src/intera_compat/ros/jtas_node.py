"""Robot-side joint trajectory action server: control_msgs/FollowJointTrajectory on
``/robot/limb/right/follow_joint_trajectory`` (contract §1.8, §2.7), executed by the realtime loop.

A goal is checked and completed by ``trajectory.follow.prepare`` (error codes and messages naming
the field), then handed to the loop once as an ``ExecuteTrajectory`` goal: the loop samples it
every cycle on its speed-scaled time base (a slowed or paused arm is not a path error; a pause
freezes the trajectory's time), keeps the arm on it, and stops it on collision, disable, cuff
zero-G or E-stop. This node watches the loop's feedback (desired and measured, the same cycle)
against the path tolerance, answers every goal with a result whose ``error_code`` and
``error_string`` say why, and after the trajectory's end checks the goal tolerance for up to
``goal_time`` seconds. A new goal or a cancel stops the running one smoothly on its path first.

Options as the SDK's server: ``-l/--limb`` (right), ``-r/--rate`` (Hz of joint states and of this
node's feedback, published once on /robot/joint_state_publish_rate), ``-m/--mode``
(position_w_id | position | velocity: how the loop tracks the trajectory). Tolerances and gains
are private parameters named as the SDK's dynamic reconfigure (``~goal_time``,
``~stopped_velocity_tolerance``, ``~right_jN_goal``, ``~right_jN_trajectory``, ``~right_jN_kp``),
set to the mode's defaults at start and read again for every goal.
"""
from __future__ import annotations

import argparse
import math
import threading
import time

import actionlib
import numpy as np
import rospy
from control_msgs.msg import FollowJointTrajectoryAction, FollowJointTrajectoryFeedback, FollowJointTrajectoryResult
from intera_compat.msg import ExecuteTrajectoryResult
from intera_core_msgs.msg import SEAJointState
from sensor_msgs.msg import JointState
from std_msgs.msg import UInt16

from ..config import load_config
from ..trajectory import follow as F
from .loop_trajectory import LoopTrajectory
from .node_init import init_node

LOOP_SILENCE = 1.0  # s without word from the loop about a running goal: it is gone (at least 3 feedback periods)
STOP_WAIT = 5.0  # s to wait for the arm to stop on its path after a cancel
JOINT_STATE_WAIT = 1.0  # s: joint states older than this do not tell where the arm is (at least 3 periods)
REST_SPEED = 0.01  # rad/s: the loop's setpoint counts as at rest below this on every joint — within the loop's start
# tolerance (0.05 rad/s), above a TRACK_VELOCITY goal's held correction (kp (q_ref - q): 1.3e-3 rad/s seen at rest)
REST_WAIT = 5.0  # s of robot time a goal starting where the arm is waits for the arm to come to rest

# the loop's reasons that end a goal, as FollowJointTrajectory error codes
_INVALID = (ExecuteTrajectoryResult.R_START_DEVIATION, ExecuteTrajectoryResult.R_INVALID,
            ExecuteTrajectoryResult.R_TOO_LONG, ExecuteTrajectoryResult.R_LIMITS)


class JointTrajectoryActionServer:
    def __init__(self, mode: str, rate: float, ns: str = "/robot/limb/right"):
        if mode not in F.MODES:
            raise ValueError(f"mode '{mode}': give one of {', '.join(F.MODES)}")
        if not (np.isfinite(rate) and 1.0 <= rate <= 1000.0):
            raise ValueError(f"rate {rate} Hz: give 1..1000")
        self.mode, self.rate = mode, rate
        # (the loop's feedback and the joint states come at this node's rate: a low -r stretches the waits)
        self.loop_silence = max(LOOP_SILENCE, 3.0 / rate)
        self.joint_state_wait = max(JOINT_STATE_WAIT, 3.0 / rate)
        self.cfg = cfg = load_config(rospy.get_param("~config", None) or None)
        self.joints = list(cfg.joint_names)
        self._index = {j: i for i, j in enumerate(self.joints)}
        for name, value in F.mode_parameters(mode, self.joints).items():
            if not rospy.has_param(f"~{name}"):
                rospy.set_param(f"~{name}", value)
        self._js_lock = threading.Lock()
        self._q = self._v = None
        self._js_time = 0.0  # when the last joint states came (robot time) ...
        self._js_stamp = 0.0  # ... and their header.stamp (the loop's state they carry)
        rospy.Subscriber("/robot/joint_states", JointState, self._on_joint_states, queue_size=1, tcp_nodelay=True)
        self._sp_v = None  # the loop's setpoint velocity (limb order) and when it came (robot time)
        self._sp_time = 0.0
        rospy.Subscriber(f"{ns}/gravity_compensation_torques", SEAJointState, self._on_arm_state, queue_size=1,
                         tcp_nodelay=True)
        keepalive = float(cfg.control.get("trajectory_keepalive_timeout", 0.5))
        self.loop = LoopTrajectory(ns, keepalive_timeout=keepalive)
        if not self.loop.wait_for_server(60.0):
            raise RuntimeError(f"no ExecuteTrajectory server on {ns}/execute_trajectory (is the realtime loop up?)")
        if not self._wait_for_joint_states(60.0):
            raise RuntimeError("no /robot/joint_states naming the limb's joints (is the realtime loop up?)")
        # as the SDK's server: joint states (and so the loop's feedback) at this node's rate (at the
        # robot's default rate nothing is sent: a later request by another node is not overridden)
        if int(round(rate)) != int(round(float(cfg.rates["joint_states_hz"]))):
            self.rate_pub = rospy.Publisher("/robot/joint_state_publish_rate", UInt16, queue_size=1, latch=True)
            self.rate_pub.publish(UInt16(int(round(rate))))
        self.server = actionlib.SimpleActionServer(f"{ns}/follow_joint_trajectory", FollowJointTrajectoryAction,
                                                   execute_cb=self._execute, auto_start=False)
        self.server.start()
        rospy.on_shutdown(self.loop.cancel)
        rospy.loginfo(f"joint trajectory action server ({mode}, {rate:g} Hz) on {ns}/follow_joint_trajectory")

    # ---- measured state --------------------------------------------------------------------
    def _on_joint_states(self, msg: JointState) -> None:
        q = np.full(len(self.joints), np.nan)
        v = np.zeros(len(self.joints))
        for k, name in enumerate(msg.name):
            i = self._index.get(name)
            if i is not None:
                q[i] = msg.position[k]
                if k < len(msg.velocity):
                    v[i] = msg.velocity[k]
        with self._js_lock:
            if self._q is not None and np.isnan(q).any():  # a partial message completes the last one
                q = np.where(np.isnan(q), self._q, q)
            self._q, self._v, self._js_time, self._js_stamp = q, v, rospy.get_time(), msg.header.stamp.to_sec()

    def _on_arm_state(self, msg: SEAJointState) -> None:
        v = np.asarray(msg.commanded_velocity, float)
        if len(v) == len(self.joints):
            self._sp_v, self._sp_time = v, msg.header.stamp.to_sec()

    def _wait_for_rest(self, goal) -> float:
        """A goal whose first point is at t = 0 starts where the arm is: the measured angles become that point, and
        the loop starts a trajectory only where its setpoint is, at rest. A client reads the angles as soon as its
        last motion is within its tolerance (Limb.move_to_joint_positions: 0.0087 rad), while the arm still brakes
        onto the target (0.2 rad/s there): wait up to REST_WAIT s of robot time for it to stop, as the motion
        controller does; an arm still moving then (another command source) is left to the loop's start check.
        Returns the robot seconds it waited."""
        pts = goal.trajectory.points
        arrived = rospy.get_time()
        if not pts or pts[0].time_from_start.to_sec() != 0.0:
            return 0.0
        cols = [self._index[n] for n in goal.trajectory.joint_names if n in self._index]
        if not cols:
            return 0.0
        self._rest_wait(cols, arrived)
        return max(rospy.get_time() - arrived, 0.0)

    def _rest_wait(self, cols: list, arrived: float) -> None:
        end, guard = arrived + REST_WAIT, time.monotonic() + 10.0 * REST_WAIT
        while not rospy.is_shutdown() and not self.server.is_preempt_requested():
            v, at = self._sp_v, self._sp_time
            if v is None or (at < arrived and time.monotonic() > guard):  # (no arm state: the loop decides)
                return
            if at >= arrived and np.max(np.abs(v[cols]), initial=0.0) < REST_SPEED:  # (a state from after the goal:
                with self._js_lock:                               # an older one queued here may predate the motion)
                    self._q = None  # the first point: joint states of the loop's state at rest or later (one
                self._wait_for_joint_states(self.joint_state_wait, since=at)  # queued from the move is not it)
                return
            if rospy.get_time() > end or time.monotonic() > guard:
                j = cols[int(np.argmax(np.abs(v[cols])))]
                rospy.logwarn(f"follow_joint_trajectory: the arm is still moving ({self.joints[j]} at {v[j]:.3g} "
                              f"rad/s {REST_WAIT:g} s after the goal, which starts where the arm is)")
                return
            time.sleep(0.002)

    def _wait_for_joint_states(self, timeout: float, since: float = 0.0) -> bool:
        """Until joint states stamped at ``since`` (robot time) or later have come; False after ``timeout`` s."""
        end = time.monotonic() + timeout
        while self._measured()[0] is None or self._js_stamp < since:
            if time.monotonic() > end or rospy.is_shutdown():
                return False
            time.sleep(0.01)
        return True

    def _measured(self):
        with self._js_lock:
            fresh = self._q is not None and rospy.get_time() - self._js_time <= self.joint_state_wait
            return (self._q, self._v) if fresh and np.isfinite(self._q).all() else (None, None)

    # ---- goals -----------------------------------------------------------------------------
    def _params(self) -> dict:
        """The tolerances and gains in force (read again for every goal); a value that is not a finite number
        refuses the goal (a NaN tolerance would silently pass every check)."""
        p = F.mode_parameters(self.mode, self.joints)
        for name in p:
            raw = rospy.get_param(f"~{name}", p[name])
            try:
                value = float(raw)
            except (TypeError, ValueError):
                value = math.nan
            nonneg = name == "goal_time" or name.endswith("_kp")
            if not math.isfinite(value) or (nonneg and value < 0.0):
                raise F.GoalError(F.INVALID_GOAL, f"parameter {rospy.get_name()}/{name} = {raw!r}: give a finite "
                                                  f"number{' >= 0' if nonneg else ''}")
            p[name] = value
        return p

    def _plan(self, goal, waited: float = 0.0) -> tuple[F.FollowPlan, float]:
        """The goal's plan from where the arm is, started now after ``waited`` s for the arm to rest, and its start
        time (``F.on_schedule``)."""
        traj = goal.trajectory
        if not self._wait_for_joint_states(self.joint_state_wait):
            raise F.GoalError(F.INVALID_GOAL, "no current joint states on /robot/joint_states: the arm's position "
                                              "is unknown")
        q, _ = self._measured()
        points = [F.Point(p.time_from_start.to_sec(), p.positions, p.velocities, p.accelerations)
                  for p in traj.points]
        start = np.array([q[self._index[n]] if n in self._index else np.nan for n in traj.joint_names])
        points, stamp = F.on_schedule(points, start, traj.header.stamp.to_sec(), waited, rospy.get_time())
        tols = [[F.Tolerance(t.name, t.position, t.velocity) for t in tl]
                for tl in (goal.path_tolerance, goal.goal_tolerance)]
        return F.prepare(traj.joint_names, points, self.joints, q, self.mode, self._params(), tols[0], tols[1],
                         goal.goal_time_tolerance.to_sec(), self.cfg.limits.accel[:len(self.joints)]), stamp

    def _execute(self, goal) -> None:
        try:
            try:
                waited = self._wait_for_rest(goal)
                if self.server.is_preempt_requested():
                    self._end(F.SUCCESSFUL, "cancelled before it started", preempted=True)
                    return
                plan, stamp = self._plan(goal, waited)
                later = stamp > rospy.get_time()
                if not self._wait_for_start(stamp, plan.duration):
                    return
                if later:  # checked again against where the arm is now (another client may have moved it)
                    plan, stamp = self._plan(goal)
                if self.server.is_preempt_requested():
                    self._end(F.SUCCESSFUL, "cancelled before it started", preempted=True)
                    return
                # (a stamped goal's time 0 was due at its stamp: what the planning and the hop to the loop took is
                # made up on the way where the loop counts lost time — its client keeps its own schedule; an
                # unstamped one starts when it comes, as the SDK's server starts it)
                self.loop.send(plan.names, plan.t, plan.q, plan.v, plan.a, tracking=plan.tracking, kp=plan.kp,
                               due=stamp)
            except F.GoalError as e:
                self._end(e.code, str(e))
                return
            if self._follow(plan):
                self._settle(plan)
        except Exception as e:  # never leave a goal without an error code (actionlib's own abort carries 0)
            self.loop.cancel()
            if self.server.is_active():
                self._end(F.INVALID_GOAL, f"internal error of the server: {type(e).__name__}: {e}")
            raise

    def _wait_for_start(self, stamp: float, duration: float) -> bool:
        """Until the trajectory's start time (header.stamp; 0 = now); False when the goal ended meanwhile."""
        now = rospy.get_time()
        if stamp <= 0.0 or stamp <= now:
            if stamp > 0.0 and stamp + duration < now:
                raise F.GoalError(F.OLD_HEADER_TIMESTAMP, f"trajectory.header.stamp {stamp:.3f} + its "
                                                          f"{duration:.3f} s ended before now ({now:.3f})")
            if stamp > 0.0 and now - stamp > 0.05:
                rospy.logwarn(f"trajectory starts {now - stamp:.3f} s after its header.stamp: it runs from now (up to "
                              f"0.5 s of it made up on the way where the loop counts lost time)")
            return True
        while rospy.get_time() < stamp:
            if self.server.is_preempt_requested():
                self._end(F.SUCCESSFUL, "cancelled before its start time", preempted=True)
                return False
            if rospy.is_shutdown():
                return False
            rospy.sleep(min(stamp - rospy.get_time(), 1.0 / self.rate))
        return True

    def _follow(self, plan: F.FollowPlan) -> bool:
        """While the loop runs the trajectory: feedback and path checks. True once it ended at its
        last point; otherwise the goal has been answered."""
        monitor = F.FollowMonitor(plan)
        seen = None
        while not self.loop.wait(0.5 / self.rate):
            if self.server.is_preempt_requested():
                return self._stop(F.SUCCESSFUL, "cancelled: stopped on its path", preempted=True)
            fb = self.loop.feedback
            if fb is not None and fb is not seen and len(fb.desired_positions) == len(plan.names):
                seen = fb
                self._feedback(plan, fb)
                why = monitor.path_violation(fb.desired_positions, fb.actual_positions, fb.desired_velocities,
                                             fb.actual_velocities)
                if why is not None:
                    return self._stop(F.PATH_TOLERANCE_VIOLATED, f"{why} at t = {fb.time:.3f} s: stopped on its path")
            if self.loop.silent_for() > self.loop_silence:
                return self._stop(F.PATH_TOLERANCE_VIOLATED, "the realtime loop stopped answering")
        res = self.loop.result
        if res is not None and res.status == ExecuteTrajectoryResult.SUCCEEDED:
            return True
        if res is None:
            self._end(F.PATH_TOLERANCE_VIOLATED, "the realtime loop lost the trajectory")
        elif res.status == ExecuteTrajectoryResult.REJECTED and (res.reason in _INVALID or not res.reason):
            self._end(F.INVALID_GOAL, f"the realtime loop refused it: {res.message}")
        else:  # collision, disabled, cuff zero-G, E-stop, fault, another command took the arm
            self._end(F.PATH_TOLERANCE_VIOLATED, f"{res.message} (at t = {res.time:.3f} s)")
        return False

    def _settle(self, plan: F.FollowPlan) -> None:
        """After the trajectory's end: the goal tolerance must hold within goal_time."""
        monitor = F.FollowMonitor(plan)
        deadline = rospy.get_time() + plan.goal_time
        while not rospy.is_shutdown():
            q, v = self._measured()
            why = "no current joint states" if q is None else monitor.goal_violation(q[plan.cols], v[plan.cols])
            if why is None:
                self._end(F.SUCCESSFUL, "")
                return
            if rospy.get_time() >= deadline:
                self._end(F.GOAL_TOLERANCE_VIOLATED, f"{why} {plan.goal_time:.3f} s after the trajectory's end")
                return
            if self.server.is_preempt_requested():
                self._end(F.SUCCESSFUL, "cancelled after the trajectory's end", preempted=True)
                return
            rospy.sleep(1.0 / self.rate)

    def _stop(self, code: int, message: str, preempted: bool = False) -> bool:
        """Stop the running trajectory smoothly on its path, then answer the goal."""
        self.loop.cancel()
        if not self.loop.wait(STOP_WAIT):
            message += f" (the loop did not confirm the stop within {STOP_WAIT:g} s)"
        self._end(code, message, preempted)
        return False

    def _end(self, code: int, message: str, preempted: bool = False) -> None:
        result = FollowJointTrajectoryResult(error_code=code, error_string=message)
        if preempted:
            self.server.set_preempted(result, message)
        elif code == F.SUCCESSFUL:
            self.server.set_succeeded(result, message)
        else:
            rospy.logerr(f"follow_joint_trajectory: {F.ERROR_NAMES[code]}: {message}")
            self.server.set_aborted(result, message)

    def _feedback(self, plan: F.FollowPlan, fb) -> None:
        out = FollowJointTrajectoryFeedback(joint_names=plan.names)
        out.header.stamp = rospy.Time.now()
        t = rospy.Duration.from_sec(fb.time)
        d, a, e = out.desired, out.actual, out.error
        d.positions, d.velocities, d.accelerations = fb.desired_positions, fb.desired_velocities, \
            fb.desired_accelerations
        a.positions, a.velocities = fb.actual_positions, fb.actual_velocities
        e.positions = (np.asarray(fb.desired_positions) - np.asarray(fb.actual_positions)).tolist()
        e.velocities = (np.asarray(fb.desired_velocities) - np.asarray(fb.actual_velocities)).tolist()
        d.time_from_start = a.time_from_start = e.time_from_start = t
        self.server.publish_feedback(out)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description="Robot-side joint trajectory action server (FollowJointTrajectory "
                                            "executed by the realtime loop)")
    p.add_argument("-l", "--limb", default="right", help="right (or all_limbs: the same, Sawyer has one limb)")
    p.add_argument("-r", "--rate", type=float, default=100.0, help="joint state and feedback rate [Hz]")
    p.add_argument("-m", "--mode", default="position_w_id", choices=list(F.MODES))
    args = p.parse_args(rospy.myargv(argv)[1:] if argv is None else argv)
    if args.limb not in ("right", "all_limbs"):
        p.error(f"limb '{args.limb}': this robot has the limb 'right'")
    init_node("joint_trajectory_action_server")
    try:
        JointTrajectoryActionServer(args.mode, args.rate)
    except (ValueError, RuntimeError) as e:
        rospy.logfatal(str(e))
        raise SystemExit(1)
    rospy.spin()
