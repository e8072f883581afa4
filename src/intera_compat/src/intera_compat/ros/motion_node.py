"""``motion_controller`` node: the Intera 5.2 motion controller on ``/motion/motion_command``.

It plans (``motion.planner``), hands the whole trajectory to the realtime loop once (the loop's
ExecuteTrajectory action, with keep-alives), monitors it and always answers with a result. One goal
is served at a time by a worker thread: a new goal (``start``, ``stop`` or ``generate``) or a
cancel interrupts the running one, which stops smoothly on its path and ends with
``result=False`` before the new goal is served from where the arm stopped.
"""
from __future__ import annotations

import threading
import time

import actionlib
import numpy as np
import rospy
from geometry_msgs.msg import Pose
from intera_core_msgs.msg import RobotAssemblyState, SEAJointState
from intera_motion_msgs.msg import (InterpolatedPath, MotionCommandAction, MotionCommandFeedback, MotionCommandGoal,
                                    MotionCommandResult, MotionStatus, TrajectoryAnalysis, WaypointSimple)
from sensor_msgs.msg import JointState
from std_msgs.msg import Empty

from ..config import load_config
from ..control.interaction import InteractionLimits
from ..data import codes as T
from ..motion import errors as E
from ..motion.analysis import Analysis, Tracking, planned
from ..motion.errors import MotionError
from ..motion.planner import MotionPlanner
from ..motion.request import TrajectoryRequest, WaypointRequest, validate
from .conversions import pose_msg
from .interaction import pack_message
from .loop_trajectory import LoopTrajectory
from .node_init import init_node
from .urdf_fragments import UrdfFragmentWatcher

HAVE_NOT_REACHED_FIRST_WAYPOINT = MotionCommandResult.HAVE_NOT_REACHED_FIRST_WAYPOINT
GENERAL_TRAJECTORY_FAILURE = MotionCommandResult.GENERAL_TRAJECTORY_FAILURE
# MotionCommandGoal.MOTION_GENERATE is "generate  # Generate path, but do not run" (a string constant keeps its
# comment on the wire); clients send "generate"
GENERATE = ("generate", MotionCommandGoal.MOTION_GENERATE)
STATE_TIMEOUT = 0.5  # s: no arm state (gravity_compensation_torques, a fixed 100 Hz) for this long: not running
REST_SPEED = 1e-3  # rad/s: the loop's setpoint counts as at rest below this on every joint
REST_WAIT = 2.0  # s: how long a start waits for the arm to come to rest before refusing
ANSWER_AFTER = 0.05  # s: no result goes out sooner than this after its goal arrived (see _answer)
LOOP_SILENCE = 1.0  # s without feedback about a running trajectory: the realtime loop is gone
TRACKING_SLOWDOWN = (0.02, 0.1)  # rad of tracking error: full speed below, the minimum time rate above


def request_from_msg(tr) -> TrajectoryRequest:
    """intera_motion_msgs/Trajectory → plain data (field for field)."""
    opt, tro = tr.trajectory_options, tr.trajectory_options.tracking_options
    wps = []
    for w in tr.waypoints:
        o, p = w.options, w.pose.pose
        wps.append(WaypointRequest(
            list(w.joint_positions), w.active_endpoint, w.pose.header.frame_id,
            (p.position.x, p.position.y, p.position.z),
            (p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w),
            o.label, o.max_joint_speed_ratio, list(o.joint_tolerances), list(o.max_joint_accel), o.max_linear_speed,
            o.max_linear_accel, o.max_rotational_speed, o.max_rotational_accel, o.corner_distance))
    return TrajectoryRequest(tr.label, list(tr.joint_names), wps, opt.interpolation_type, opt.interaction_control,
                             tro.use_min_time_rate, tro.min_time_rate, tro.use_max_time_rate, tro.max_time_rate,
                             list(tro.goal_joint_tolerance), tro.use_settling_time_at_goal, tro.settling_time_at_goal,
                             opt.path_interpolation_step)


def analysis_msg(an: Analysis | None) -> TrajectoryAnalysis:
    if an is None:
        return TrajectoryAnalysis()
    return TrajectoryAnalysis(
        planned_duration=an.planned_duration, measured_duration=an.measured_duration,
        min_angle_command=an.min_angle_command.tolist(), max_angle_command=an.max_angle_command.tolist(),
        peak_speed_command=an.peak_speed_command.tolist(), peak_accel_command=an.peak_accel_command.tolist(),
        peak_jerk_command=an.peak_jerk_command.tolist(), min_time_rate=an.min_time_rate,
        max_time_rate=an.max_time_rate, max_position_error=an.max_position_error.tolist(),
        max_velocity_error=an.max_velocity_error.tolist())


class _Outcome(Exception):
    """Ends serving a goal: the result to answer with."""

    def __init__(self, ok: bool, error_id: str = "", message: str = "", preempted: bool = False):
        super().__init__(message)
        self.ok, self.error_id, self.message, self.preempted = ok, error_id, message, preempted


class MotionControllerNode:
    def __init__(self):
        self.cfg = cfg = load_config(rospy.get_param("~config", None) or None)
        self.seed = int(rospy.get_param("~ik_seed", 0))
        self.planner = MotionPlanner(cfg, seed=self.seed)
        self.rm = self.planner.rm
        self._next_model = None  # (planner, model) with the URDF fragments, for the next goal
        self.arm = list(cfg.joint_names)
        self.n = len(self.arm)
        self.all_joints = cfg.all_joints
        L = f"/robot/limb/{cfg.limb}"
        keepalive = float(rospy.get_param("~keepalive_timeout", cfg.control.get("trajectory_keepalive_timeout", 0.5)))
        self.loop = LoopTrajectory(L, keepalive_timeout=keepalive)
        self.interaction_limits = InteractionLimits.from_config(cfg.control.get("interaction"))
        self.lock = threading.Condition()
        UrdfFragmentWatcher(cfg, self._on_model, log=False)  # (a fragment's links: tips of Cartesian motions)
        self.pending = None  # the next goal handle to serve
        self.current = None  # the goal handle being served
        self.interrupt = False  # the current goal must stop (new goal or cancel)
        self.requests = 0
        self.arrived: dict[str, float] = {}  # goal id → time.monotonic() it arrived, until it is answered
        self.q = None  # latest full configuration (config order) from joint_states: the joints beside the arm
        self.sea = None  # latest arm state (setpoint and measured) and its arrival time
        self.sea_time = 0.0
        self.robot_state = None
        # suppress_collision_avoidance counts while it arrives faster than 1/suppress_timeout (5 Hz), on the loop's
        # clock (rospy time: the loop's time under use_sim_time) and by the loop's rule (safety/suppression.py)
        self.suppress_period = float(cfg.control.get("suppress_timeout", 0.2))
        self.suppress_times = [-1e9, -1e9]
        self.tracking: Tracking | None = None
        self.status = MotionStatus(motion_status=MotionStatus.MOTION_IDLE)
        rospy.Subscriber("/robot/joint_states", JointState, self._on_joint_states, queue_size=1, tcp_nodelay=True)
        rospy.Subscriber("/robot/state", RobotAssemblyState, self._on_robot_state, queue_size=1)
        rospy.Subscriber(f"{L}/gravity_compensation_torques", SEAJointState, self._on_sea, queue_size=1,
                         tcp_nodelay=True)
        rospy.Subscriber(f"{L}/suppress_collision_avoidance", Empty, self._on_suppress, queue_size=1)
        self.pub_path = rospy.Publisher("/motion/interpolated_path", InterpolatedPath, queue_size=1, latch=True)
        if not self.loop.wait_for_server(60.0):
            raise RuntimeError(f"the realtime loop's {L}/execute_trajectory action did not come up")
        self.server = actionlib.ActionServer("/motion/motion_command", MotionCommandAction, self._on_goal,
                                             self._on_cancel, auto_start=False)
        self.server.start()
        threading.Thread(target=self._worker, daemon=True).start()
        rospy.loginfo("motion controller ready on /motion/motion_command")

    # ---- subscribers (store only) ------------------------------------------------------------
    def _on_model(self, rm, _links) -> None:
        """A URDF fragment came: a planner on the model with its links, taken by the worker before its next goal
        (a goal is checked and planned on one model)."""
        planner = MotionPlanner(self.cfg, rm, seed=self.seed)
        with self.lock:
            self._next_model = (planner, rm)

    def _on_joint_states(self, msg: JointState) -> None:
        try:
            self.q = np.array([msg.position[msg.name.index(j)] for j in self.all_joints])
        except (ValueError, IndexError):
            pass

    def _on_robot_state(self, msg: RobotAssemblyState) -> None:
        self.robot_state = msg

    def _on_sea(self, msg: SEAJointState) -> None:
        if len(msg.commanded_position) != self.n or len(msg.actual_position) != self.n \
                or len(msg.commanded_velocity) != self.n or len(msg.actual_velocity) != self.n:
            return
        self.sea, self.sea_time = msg, time.monotonic()
        tr = self.tracking
        if tr is not None:
            tr.sample(msg.commanded_position, msg.actual_position, msg.commanded_velocity, msg.actual_velocity)

    def _on_suppress(self, _msg) -> None:
        self.suppress_times = [self.suppress_times[1], rospy.get_time()]

    def collision_check_suppressed(self) -> bool:
        a, b = self.suppress_times
        return b - a < self.suppress_period and rospy.get_time() - b < self.suppress_period

    # ---- action server callbacks ---------------------------------------------------------------
    def _on_goal(self, gh) -> None:
        self.arrived[gh.get_goal_id().id] = time.monotonic()
        gh.set_accepted()
        plan_only = gh.get_goal().command in GENERATE
        with self.lock:
            older, self.pending = self.pending, gh
            if self.current is not None and not plan_only:  # generate waits: it never stops a motion
                self.interrupt = True
            self.lock.notify_all()
        if older is not None:  # never served: replaced by a newer goal before its turn
            self._answer(older, _Outcome(False, message="replaced by a newer goal", preempted=True), None, -1)

    # actionlib hands each callback a new ServerGoalHandle wrapper: compare with ==, not ``is``
    def _on_cancel(self, gh) -> None:
        with self.lock:
            if self.pending is not None and gh == self.pending:
                self.pending = None
            elif self.current is not None and gh == self.current:
                self.interrupt = True
                return
            else:
                return
        self._answer(gh, _Outcome(False, message="cancelled before it started", preempted=True), None, -1)

    # ---- the worker ----------------------------------------------------------------------------
    def _worker(self) -> None:
        while not rospy.is_shutdown():
            with self.lock:
                while self.pending is None and not rospy.is_shutdown():
                    self.lock.wait(0.1)
                gh, self.pending = self.pending, None
                self.current, self.interrupt = gh, False
                if self._next_model is not None:
                    (self.planner, self.rm), self._next_model = self._next_model, None
            if gh is None:
                return
            try:
                self._serve(gh)
            except Exception as e:  # never leave a goal without a result
                rospy.logerr(f"motion controller: unexpected failure: {e!r}")
                self._answer(gh, _Outcome(False, E.CONTROLLER_NOT_FOLLOWING, str(e)), None,
                             GENERAL_TRAJECTORY_FAILURE)
            finally:
                with self.lock:
                    self.current = None

    def _serve(self, gh) -> None:
        goal: MotionCommandGoal = gh.get_goal()
        self.requests += 1
        label = goal.trajectory.label
        if goal.command == MotionCommandGoal.MOTION_STOP:
            self.loop.cancel()  # whatever this client still has running in the loop stops too
            self.loop.wait(5.0)
            self._status(MotionStatus.MOTION_IDLE, label, 0)
            self._answer(gh, _Outcome(True, message="stopped"), None, HAVE_NOT_REACHED_FIRST_WAYPOINT)
            return
        try:
            start = goal.command == MotionCommandGoal.MOTION_START
            if not start and goal.command not in GENERATE:
                raise MotionError(E.INVALID_TRAJECTORY_MESSAGE, f"command is {goal.command!r}: start, stop or generate")
            self._status(MotionStatus.MOTION_PENDING, label, 0)
            q_now = self._start_configuration(wait_for_rest=start)
            motion = validate(request_from_msg(goal.trajectory), self.arm, self.cfg.limits.accel[:self.n],
                              self.cfg.tips, self.rm.has_frame, lambda f: self.rm.fk(q_now, f))
            for w in motion.warnings:
                rospy.logwarn(f"motion request {label!r}: {w}")
            opts = goal.trajectory.trajectory_options
            interaction = opts.interaction_params if opts.interaction_control else None
            if interaction is not None:
                try:  # (the loop's own check, early: a refused field is the request's fault)
                    pack_message(interaction, self.n, self.cfg.tips[0], self.interaction_limits)
                except ValueError as e:
                    raise MotionError(E.INVALID_TRAJECTORY_MESSAGE,
                                      f"trajectory_options.interaction_params: {e}") from None
            if start:
                self._require_enabled()
            suppressed = self.collision_check_suppressed()
            if suppressed:
                rospy.logwarn("motion controller: suppress_collision_avoidance is being received: "
                              "the planned path is not checked for self-collisions")
            plan = self.planner.plan(motion, q_now, check_collision=not suppressed)
        except MotionError as e:
            rospy.logerr(f"motion request {label!r} refused: {e}")
            self._status(MotionStatus.MOTION_ERROR, label, 0)
            self._answer(gh, _Outcome(False, e.error_id, e.detail), None, GENERAL_TRAJECTORY_FAILURE)
            return
        analysis = planned(plan)
        if not start:
            if motion.path_interpolation_step > 0.0:
                self._publish_path(label, motion, plan)
            self._status(MotionStatus.MOTION_DONE, label, 0)
            self._answer(gh, _Outcome(True, message="generated"), analysis, HAVE_NOT_REACHED_FIRST_WAYPOINT)
            return
        if self.interrupt:  # a newer goal arrived while planning
            self._answer(gh, _Outcome(False, message="replaced by a newer goal", preempted=True), analysis,
                         HAVE_NOT_REACHED_FIRST_WAYPOINT)
            return
        self._execute(gh, label, motion, plan, analysis, interaction)

    def _arm_state(self) -> SEAJointState:
        sea = self.sea
        if sea is None or time.monotonic() - self.sea_time > STATE_TIMEOUT:
            raise MotionError(E.CONTROLLER_NOT_FOLLOWING, "no recent gravity_compensation_torques (the arm's "
                                                          "state): is the robot running?")
        return sea

    def _measured(self) -> np.ndarray:
        return np.array(self._arm_state().actual_position)

    def _start_configuration(self, wait_for_rest: bool) -> np.ndarray:
        """Where a plan starts: the loop's setpoint (a trajectory handed to the loop must begin exactly there).
        A motion starts from rest: wait up to REST_WAIT for a recent arm state and for the setpoint to stop (a
        stopping motion, another command source), then refuse — a plan from a moving arm would leave the path it was checked on."""
        end = time.monotonic() + REST_WAIT
        while True:
            try:
                sea = self._arm_state()
                if self.q is None:  # (subscribed a moment ago: the joint states come with the arm's state)
                    raise MotionError(E.CONTROLLER_NOT_FOLLOWING, "no /robot/joint_states: is the robot running?")
            except MotionError:  # (a node just started, or a loaded machine's stall: wait for it as for rest)
                if time.monotonic() > end:
                    raise
                time.sleep(0.01)
                continue
            if not wait_for_rest or max(map(abs, sea.commanded_velocity)) < REST_SPEED or self.interrupt:
                break
            if time.monotonic() > end:
                j = int(np.argmax(np.abs(sea.commanded_velocity)))
                raise MotionError(E.CONTROLLER_NOT_FOLLOWING,
                                  f"the arm is still moving ({self.arm[j]} at {sea.commanded_velocity[j]:.3g} rad/s "
                                  f"{REST_WAIT:.0f} s after the request): another command source is driving it?")
            time.sleep(0.01)
        q = self.q.copy()
        q[:self.n] = sea.commanded_position
        return q

    def _require_enabled(self) -> None:
        end = time.monotonic() + REST_WAIT
        while self.robot_state is None and time.monotonic() < end:  # (subscribed a moment ago: it comes at 100 Hz)
            time.sleep(0.01)
        rs = self.robot_state
        if rs is None or not rs.enabled or rs.stopped or rs.error:
            why = "silent (no /robot/state)" if rs is None else ("stopped" if rs.stopped else "in error" if rs.error
                                                         else "not enabled")
            raise MotionError(E.CONTROLLER_NOT_FOLLOWING, f"the robot is {why}: enable it first")

    # ---- execution and monitoring -------------------------------------------------------------
    def _execute(self, gh, label, motion, plan, analysis: Analysis, interaction=None) -> None:
        """Run ``plan`` in the loop. With ``interaction`` (trajectory_options.interaction_params of a trajectory
        with interaction_control) the loop takes those parameters first and the plan is the interaction
        controller's moving reference: the arm may then be held off it on purpose (contact, force axes), so
        neither the tracking slow-down nor the final-pose check applies."""
        W = len(motion.waypoints)
        tracking = Tracking(analysis)
        self.tracking = tracking
        started = rospy.get_time()
        compliant = interaction is not None and interaction.interaction_control_active
        self.loop.send(self.arm, plan.t, plan.q, plan.v, scaling=motion.max_time_rate, interaction=interaction)
        self._status(MotionStatus.MOTION_RUNNING, label, 0)
        outcome = None
        k = 0
        while not self.loop.wait(0.01):
            if self.interrupt:
                self.loop.cancel()  # first: publishing the status may wait on actionlib's lock
                self._status(MotionStatus.MOTION_STOPPING, label, min(self._passed(plan) + 1, W - 1))
                self.loop.wait(5.0)
                outcome = _Outcome(False, message="stopped by a newer goal or a cancel", preempted=True)
                break
            fb = self.loop.feedback
            if fb is not None and fb.state == T.TRAJ_RUNNING:
                tracking.rate(fb.scaling)
                if motion.min_time_rate < motion.max_time_rate and not compliant:
                    self.loop.set_scaling(self._time_rate(motion, fb.error))
            if self.loop.silent_for() > LOOP_SILENCE:
                self.loop.cancel()
                outcome = _Outcome(False, E.CONTROLLER_NOT_FOLLOWING,
                                   f"the realtime loop said nothing about the trajectory for {LOOP_SILENCE:.0f} s")
                break
            k += 1
            if k % 10 == 0:
                self._status(MotionStatus.MOTION_RUNNING, label, min(self._passed(plan) + 1, W - 1))
            if rospy.is_shutdown():
                self.loop.cancel()
                outcome = _Outcome(False, E.CONTROLLER_NOT_FOLLOWING, "the motion controller is shutting down")
                break
        self.tracking = None
        analysis.measured_duration = rospy.get_time() - started
        last = self._passed(plan)
        if outcome is None:
            outcome = self._loop_outcome(self.loop.result)
            if outcome is None and compliant:
                outcome = _Outcome(True)  # (the reference reached its goal; the arm is where the interaction has it)
            elif outcome is None:  # the loop ran it to its end: did the arm settle on the goal?
                try:
                    outcome = self._settle(plan, motion)
                except MotionError as e:  # the arm's state stopped arriving
                    outcome = _Outcome(False, e.error_id, e.detail)
                last = W - 1  # the loop passed every waypoint
        self._status(MotionStatus.MOTION_DONE if outcome.ok else
                     MotionStatus.MOTION_PREEMPTED if outcome.preempted else MotionStatus.MOTION_ERROR,
                     label, max(last, 0))
        if not outcome.ok:
            (rospy.logwarn if outcome.preempted else rospy.logerr)(
                f"motion {label!r}: {outcome.error_id or 'preempted'}: {outcome.message}")
        self._answer(gh, outcome, analysis, last)

    def _passed(self, plan) -> int:
        """Index of the last waypoint passed (-1: none) by the loop's trajectory time."""
        fb = self.loop.feedback
        t = fb.time if fb is not None else 0.0
        return int(np.searchsorted(plan.point_times[1:], t + 1e-6, side="right")) - 1

    @staticmethod
    def _time_rate(motion, error: float) -> float:
        lo, hi = TRACKING_SLOWDOWN
        x = min(max((error - lo) / (hi - lo), 0.0), 1.0)
        return motion.max_time_rate - x * (motion.max_time_rate - motion.min_time_rate)

    def _loop_outcome(self, res) -> _Outcome | None:
        """The loop's result → None (ran to its end) or the failure."""
        if res is None:
            return _Outcome(False, E.CONTROLLER_NOT_FOLLOWING, "the realtime loop gave no result")
        if res.status == T.SUCCEEDED:
            return None
        if res.reason == T.R_START_DEVIATION:  # planned from the setpoint at rest: something else moved the arm
            return _Outcome(False, E.CONTROLLER_NOT_FOLLOWING, f"the arm moved before the motion started: {res.message}")
        if res.reason == T.R_INVALID and res.message.startswith("interaction:"):  # the request's, not the plan's
            return _Outcome(False, E.INVALID_TRAJECTORY_MESSAGE, f"trajectory_options.interaction_params refused by "
                                                                 f"the realtime loop: {res.message}")
        if res.reason in (T.R_INVALID, T.R_TOO_LONG, T.R_LIMITS):
            return _Outcome(False, E.FAILED_TO_PARAMETERIZE, f"the realtime loop refused the trajectory: {res.message}")
        if res.reason == T.R_ZERO_G:
            return _Outcome(False, E.ZERO_G_ACTIVATED_DURING_TRAJECTORY, f"the trajectory was stopped: {res.message}")
        if res.reason == T.R_COLLISION:  # Sawyer: "stopped because the arm detected a collision or was disabled"
            return _Outcome(False, E.CONTROLLER_NOT_FOLLOWING, f"collision detected: {res.message}")
        return _Outcome(False, E.CONTROLLER_NOT_FOLLOWING, f"the realtime loop stopped the trajectory: {res.message}")

    def _settle(self, plan, motion) -> _Outcome:
        goal = plan.q[-1]
        tol = np.minimum(motion.goal_tolerance, motion.waypoints[-1].tolerance)
        end = time.monotonic() + motion.settling_time
        err = np.abs(self._measured() - goal)
        while np.any(err > tol):
            if self.interrupt:
                return _Outcome(False, message="stopped by a newer goal or a cancel while settling", preempted=True)
            if rospy.is_shutdown():
                return _Outcome(False, E.CONTROLLER_NOT_FOLLOWING, "the motion controller is shutting down")
            if time.monotonic() > end:
                j = int(np.argmax(err - tol))
                return _Outcome(False, E.FINAL_POSE_NOT_WITHIN_TOLERANCE,
                                f"{self.arm[j]} is {err[j]:.3g} rad from its goal (tolerance {tol[j]:.3g} rad) "
                                f"{motion.settling_time:.2f} s after the planned end")
            time.sleep(0.01)
            err = np.abs(self._measured() - goal)
        return _Outcome(True)

    # ---- answers and feedback ---------------------------------------------------------------
    def _status(self, status: str, label: str, waypoint: int) -> None:
        s = self.status
        s.header.stamp = rospy.Time.now()
        s.motion_status, s.current_trajectory, s.current_waypoint, s.motion_request = status, label, waypoint, \
            self.requests
        gh = self.current
        if gh is not None:
            gh.publish_feedback(MotionCommandFeedback(status=s))

    def _answer(self, gh, outcome: _Outcome, analysis: Analysis | None, last: int) -> None:
        res = MotionCommandResult(result=outcome.ok, errorId=outcome.error_id, trajectory_analysis=analysis_msg(analysis),
                                  last_successful_waypoint=last)
        text = outcome.message or outcome.error_id
        # SimpleActionClient (the SDK's MotionControllerActionClient) drops every transition that arrives
        # before send_goal() has stored its goal handle: a result sent within a few ms of the goal (a request
        # refused at once) can be lost while a loaded client thread is preempted, and the script then waits
        # forever. Results wait until ANSWER_AFTER after their goal arrived.
        wait = self.arrived.pop(gh.get_goal_id().id, 0.0) + ANSWER_AFTER - time.monotonic()
        if wait > 0.0:
            time.sleep(wait)
        if outcome.ok:
            gh.set_succeeded(res, text)
        elif outcome.preempted:
            gh.set_canceled(res, text)
        else:
            gh.set_aborted(res, text)

    def _publish_path(self, label, motion, plan) -> None:
        q_full = self.q.copy()
        msg = InterpolatedPath(label=label, joint_names=self.arm)
        msg.header.stamp = rospy.Time.now()
        msg.header.frame_id = self.cfg.base_frame
        for p in self.planner.interpolated_path(plan, motion.path_interpolation_step):
            q_full[:self.n] = p.q
            msg.interpolated_path.append(WaypointSimple(joint_positions=p.q.tolist(), active_endpoint=motion.tip,
                                                        pose=pose_msg(self.rm.fk(q_full, motion.tip)) if
                                                        self.rm.has_frame(motion.tip) else Pose(),
                                                        segment_index=p.segment, time=p.t))
        self.pub_path.publish(msg)


def main():
    init_node("motion_controller")
    MotionControllerNode()
    rospy.spin()
