"""``/calibration_command`` (intera_core_msgs/CalibrationCommandAction, contract §1.2; calibrate_arm.py): the arm's
calibration, simulated — it visits ``POSES`` poses around neutral through the loop's ExecuteTrajectory action and
"measures" at each, with feedback (``currentState``, ``currentPoseNumber`` of ``numberOfPoses``).

* ``start``: refused with ``cannotCalibrateWithGripper`` while IO node end_effector reports a tool (as the robot
  does: the client checks too), with ``calibrationFailure`` while the robot is not enabled; ``Success`` at the end.
* ``stop`` (calibrate_arm.py's Ctrl-C) — or a cancel — stops a calibration under way: it ends ``Stopped`` (the arm
  stops on its path); the stop goal itself succeeds with ``Stopped``.
* A motion that fails (disabled, stopped, a collision) ends the calibration ``incomplete``, saying why; a straight
  path to the next pose that would make the arm collide with itself is not taken (``plannerFailure``).
* The simulated Sawyer's only (sawyer_sim.launch): on another arm there is no calibration to run.
"""
from __future__ import annotations

import time

import actionlib
import numpy as np
import rospy
from intera_compat.msg import ExecuteTrajectoryAction, ExecuteTrajectoryGoal, ExecuteTrajectoryResult
from intera_core_msgs.msg import (CalibrationCommandAction, CalibrationCommandFeedback, CalibrationCommandGoal,
                                  CalibrationCommandResult, IONodeStatus, RobotAssemblyState)
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..config import load_config
from ..model.robot_model import RobotModel
from .node_init import init_node

R = CalibrationCommandResult
# offsets from neutral (rad, arm joints in order; shorter rows pad with 0): the poses the arm visits
POSES = ((0.3, -0.2, 0.0, 0.3, 0.0, -0.3, 0.5), (-0.3, -0.2, 0.2, 0.2, 0.3, 0.0, -0.5),
         (0.0, 0.2, -0.2, -0.2, -0.3, 0.3, 0.0), (0.2, 0.0, 0.3, 0.0, 0.2, -0.2, 0.8),
         (-0.2, 0.1, -0.3, 0.3, -0.2, 0.2, -0.8), (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
SPEED_RATIO = 0.3  # of each joint's velocity limit
MEASURE = 0.5  # s the arm stands still at each pose
PATH_STEP = 0.02  # rad: the straight path to a pose is checked for self-collision at least this finely


def move_duration(dq: np.ndarray, vmax: np.ndarray, ratio: float = SPEED_RATIO) -> float:
    """A quintic's duration that keeps every joint within ``ratio`` of its limit (peak speed 1.875 dq / T)."""
    return max(1.0, float(np.max(1.875 * np.abs(dq) / (ratio * vmax))))


class CalibrationServer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.arm = list(cfg.joint_names)
        n = len(self.arm)
        self.neutral = cfg.named_pose(cfg.limb, "neutral")[:n]
        self.vmax = np.asarray(cfg.limits.velocity[:n], float)
        self.lower, self.upper = np.asarray(cfg.limits.lower[:n]), np.asarray(cfg.limits.upper[:n])
        self.poses = [np.clip(self.neutral + np.r_[p, np.zeros(n)][:n], self.lower, self.upper)
                      for p in POSES]
        self.rm = RobotModel(cfg)
        self.all = list(cfg.all_joints)
        self._js = self._state = self._ee = None
        rospy.Subscriber("/robot/joint_states", JointState, self._on_js, queue_size=1)
        rospy.Subscriber("/robot/state", RobotAssemblyState, lambda m: setattr(self, "_state", m), queue_size=1)
        rospy.Subscriber("/io/end_effector/state", IONodeStatus, lambda m: setattr(self, "_ee", m), queue_size=1)
        self.motion = actionlib.SimpleActionClient(f"/robot/limb/{cfg.limb}/execute_trajectory",
                                                   ExecuteTrajectoryAction)
        self.server = actionlib.SimpleActionServer("/calibration_command", CalibrationCommandAction, self._execute,
                                                   auto_start=False)
        self.server.start()

    def _on_js(self, msg: JointState) -> None:
        if all(j in msg.name for j in self.all):
            self._js = np.array([msg.position[msg.name.index(j)] for j in self.all])  # (config order, head too)

    def _stopped(self, seconds: float = 0.0) -> bool:
        """A stop / cancel (or a newer goal) asked for, waiting up to ``seconds`` for one."""
        end = time.monotonic() + seconds
        while True:
            if self.server.is_preempt_requested() or rospy.is_shutdown():
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.02)

    def _end(self, ok: bool, status: str, message: str = "") -> None:
        res = R(result=ok, statusId=status)
        if message:
            (rospy.loginfo if ok else rospy.logwarn)(f"calibration: {status}: {message}")
        if self.server.is_preempt_requested() or status == R.STOPPED and not ok:
            self.server.set_preempted(res, message or status)
        elif ok:
            self.server.set_succeeded(res, message or status)
        else:
            self.server.set_aborted(res, message or status)

    def _execute(self, goal: CalibrationCommandGoal) -> None:
        if goal.command == CalibrationCommandGoal.CALIBRATION_STOP:
            return self._end(True, R.STOPPED, "nothing more runs")
        if goal.command != CalibrationCommandGoal.CALIBRATION_START:
            return self._end(False, R.GENERIC_FAILURE, f"command is {goal.command!r} (start or stop)")
        if self._ee is not None and self._ee.devices:
            return self._end(False, R.GRIPPER_ON, f"remove {self._ee.devices[0].name} first (IO node end_effector)")
        st = self._state
        if st is None or not st.enabled or st.stopped or self._js is None:
            return self._end(False, R.GENERIC_FAILURE, "the robot is not enabled")
        if not self.motion.wait_for_server(rospy.Duration(5.0)):
            return self._end(False, R.GENERIC_FAILURE, "the realtime loop's execute_trajectory is not up")
        fb = CalibrationCommandFeedback(numberOfPoses=len(self.poses))
        for k, pose in enumerate(self.poses, 1):
            fb.currentPoseNumber, fb.currentState = k - 1, f"moving to pose {k}"
            self.server.publish_feedback(fb)
            failed = self._move(pose)
            if failed is not None:
                return failed
            fb.currentState = f"measuring at pose {k}"
            self.server.publish_feedback(fb)
            if self._stopped(MEASURE):
                return self._end(False, R.STOPPED, "stopped")
        fb.currentPoseNumber, fb.currentState = len(self.poses), "done"
        self.server.publish_feedback(fb)
        return self._end(True, R.SUCCESS, f"{len(self.poses)} poses measured")

    def _move(self, pose: np.ndarray):
        """To ``pose`` through the loop: None once there, or what ended the calibration (already answered)."""
        full = self._js.copy()
        q0 = full[:len(self.arm)]
        steps = max(2, int(np.ceil(np.abs(pose - q0).max() / PATH_STEP)) + 1)
        path = np.tile(full, (steps, 1))
        path[:, :len(self.arm)] = q0 + np.linspace(0.0, 1.0, steps)[:, None] * (pose - q0)
        if self._stopped():
            return self._end(False, R.STOPPED, "stopped")
        if self.rm.first_collision(path) >= 0:
            return self._end(False, R.PLANNER_FAILURE, "the straight path to the next pose would collide with the "
                                                       "arm itself (move it to neutral first)")
        T = move_duration(pose - q0, self.vmax)
        zero = [0.0] * len(self.arm)
        jt = JointTrajectory(joint_names=self.arm, points=[
            JointTrajectoryPoint(positions=list(q0), velocities=zero, accelerations=zero,
                                 time_from_start=rospy.Duration(0)),
            JointTrajectoryPoint(positions=list(pose), velocities=zero, accelerations=zero,
                                 time_from_start=rospy.Duration.from_sec(T))])
        self.motion.send_goal(ExecuteTrajectoryGoal(trajectory=jt, time_scaling=1.0))
        while not self.motion.wait_for_result(rospy.Duration(0.05)):
            if self._stopped():
                self.motion.cancel_goal()
                self.motion.wait_for_result(rospy.Duration(5.0))
                return self._end(False, R.STOPPED, "stopped")
        res = self.motion.get_result()
        if res is None or res.status != ExecuteTrajectoryResult.SUCCEEDED:
            return self._end(False, R.INCOMPLETE, f"the move to a pose failed: {res.message if res else 'no result'}")
        return None


def main() -> None:
    init_node("calibration_server")
    CalibrationServer(load_config(rospy.get_param("~config", None)))
    rospy.spin()
