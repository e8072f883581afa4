"""The motion controller's error ids (intera_motion_msgs/MotionCommandResult constants) and the
exception the planners raise with one of them. No ROS: the node copies ``error_id`` into the result."""
from __future__ import annotations

INVALID_TRAJECTORY_MESSAGE = "INVALID_TRAJECTORY_MESSAGE"
FAILED_TO_PARAMETERIZE = "FAILED_TO_PARAMETERIZE"
PLANNED_MOTION_COLLISION = "PLANNED_MOTION_COLLISION"
ENDPOINT_DOES_NOT_EXIST = "ENDPOINT_DOES_NOT_EXIST"
CARTESIAN_INTERPOLATION_FAILED = "CARTESIAN_INTERPOLATION_FAILED"
PLANNED_JOINT_ACCEL_LIMIT = "PLANNED_JOINT_ACCEL_LIMIT"
FINAL_POSE_NOT_WITHIN_TOLERANCE = "FINAL_POSE_NOT_WITHIN_TOLERANCE"
CONTROLLER_NOT_FOLLOWING = "CONTROLLER_NOT_FOLLOWING"
ZERO_G_ACTIVATED_DURING_TRAJECTORY = "ZERO_G_ACTIVATED_DURING_TRAJECTORY"

ERROR_IDS = (INVALID_TRAJECTORY_MESSAGE, FAILED_TO_PARAMETERIZE, PLANNED_MOTION_COLLISION, ENDPOINT_DOES_NOT_EXIST,
             CARTESIAN_INTERPOLATION_FAILED, PLANNED_JOINT_ACCEL_LIMIT, FINAL_POSE_NOT_WITHIN_TOLERANCE,
             CONTROLLER_NOT_FOLLOWING, ZERO_G_ACTIVATED_DURING_TRAJECTORY)


class MotionError(Exception):
    """A request the motion controller cannot carry out: ``error_id`` for the result, ``str`` for the log."""

    def __init__(self, error_id: str, message: str):
        if error_id not in ERROR_IDS:
            raise ValueError(f"unknown motion error id {error_id!r}")
        super().__init__(f"{error_id}: {message}")
        self.error_id = error_id
        self.detail = message
