"""The codes stages and the loop exchange: JointCommand modes, requests to the arm's own controller and their
results, and a whole trajectory's results, reasons and tracking (the numbers of intera_compat/ExecuteTrajectory)."""
from __future__ import annotations

# JointCommand modes (intera_core_msgs/JointCommand)
POSITION_MODE, VELOCITY_MODE, TORQUE_MODE, TRAJECTORY_MODE = 1, 2, 3, 4

# requests to the arm's own controller (Backend.request) and their results
ARM_ZERO_FT, ARM_SET_PAYLOAD, ARM_TOOL_CONTACT = 1, 2, 3  # [] | [mass, cog x, y, z] | [direction (6)]
ARM_COBOT_SETTINGS = 4  # [execution mode (0 single_point, 1 full_trajectory), resampling delta (rad)]
ARM_REQUESTS = {"zero_ft_sensor": ARM_ZERO_FT, "set_payload": ARM_SET_PAYLOAD, "tool_contact": ARM_TOOL_CONTACT,
                "cobot_settings": ARM_COBOT_SETTINGS}
ARM_RESULT_OK, ARM_RESULT_UNSUPPORTED, ARM_RESULT_FAILED, ARM_RESULT_ENABLED = 0, 1, 2, 3
ARM_WHILE_DISABLED = (ARM_ZERO_FT, ARM_SET_PAYLOAD)  # requests the controller takes time over: robot disabled only

# whole trajectories: a trajectory's progress in the loop, its result
TRAJ_IDLE, TRAJ_RUNNING, TRAJ_STOPPING, TRAJ_DONE = 0, 1, 2, 3
# result statuses
SUCCEEDED, CANCELLED, PREEMPTED, ABORTED, REJECTED = 1, 2, 3, 4, 5
# rejection / abort reasons (with a joint index where it applies)
# (the same numbers as the R_* constants of intera_compat/ExecuteTrajectory's result)
R_NONE, R_START_DEVIATION, R_INVALID, R_NOT_ENABLED, R_TOO_LONG, R_JOINT_COMMAND, R_NEWER_TRAJECTORY, \
    R_ROBOT_DISABLED, R_FAULT, R_LIMITS, R_CLIENT_LOST, R_COLLISION, R_ZERO_G, R_SAFETY_STOP = range(14)
# how the trajectory is tracked (ExecuteTrajectory's ``tracking``): its positions, velocities and
# accelerations (inverse-dynamics feed-forward); positions and velocities only; velocities
# v + kp·(q − measured) integrated into the setpoint
TRACK_FEEDFORWARD, TRACK_POSITION, TRACK_VELOCITY = 0, 1, 2
MAX_KP = 100.0  # 1/s: a velocity-tracking gain beyond this is refused (at 1 kHz it would oscillate)
END_SPEED = 1e-3  # rad/s: a trajectory's last point must be at rest (a stop along the path ends there)
END_ACCEL = 1e-2  # rad/s²
STATUS_NAMES = {SUCCEEDED: "SUCCEEDED", CANCELLED: "CANCELLED", PREEMPTED: "PREEMPTED", ABORTED: "ABORTED",
                REJECTED: "REJECTED"}
REASONS = {
    R_NONE: "", R_START_DEVIATION: "the first point is too far from the current position or velocity",
    R_INVALID: "the trajectory has non-finite values, times that do not increase, or a last point that still moves",
    R_NOT_ENABLED: "the robot is not enabled", R_TOO_LONG: "the trajectory has more knots than the loop holds",
    R_JOINT_COMMAND: "a JointCommand took over the arm", R_NEWER_TRAJECTORY: "replaced by a newer trajectory",
    R_ROBOT_DISABLED: "the robot was disabled or stopped", R_FAULT: "the loop faulted",
    R_LIMITS: "the trajectory (from where the arm is) exceeds the joint velocity or acceleration limits",
    R_CLIENT_LOST: "its sender stopped sending keep-alives (process gone?): stopped on the path",
    R_COLLISION: "a collision was detected: the arm stopped", R_ZERO_G: "zero-G was activated (cuff squeezed)",
    R_SAFETY_STOP: "the safety E-stop was engaged: the arm holds its position",
}
