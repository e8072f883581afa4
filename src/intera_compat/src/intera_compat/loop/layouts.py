"""The three records the listener process and the loop process share (see ``shm``)."""
from __future__ import annotations

from .shm import Layout

HIST_BINS = 1000  # 1 µs bins, the last one collects everything ≥ 999 µs

# JointCommand modes (intera_core_msgs/JointCommand)
POSITION_MODE, VELOCITY_MODE, TORQUE_MODE, TRAJECTORY_MODE = 1, 2, 3, 4

# tick flags the loop sends to the publishers (one byte per tick)
TICK_JOINT_STATES, TICK_STATE_100HZ, TICK_DIAGNOSTICS = 1, 2, 4


def command_layout(n: int) -> Layout:
    """Latest accepted JointCommand (listener → loop). ``cmd_id`` increments per command."""
    return Layout((("cmd_id", 1), ("mode", 1), ("mask", n), ("position", n), ("velocity", n),
                   ("acceleration", n), ("effort", n)))


def control_layout() -> Layout:
    """Settings and requests (listener → loop). ``*_id`` fields count events; the loop acts on changes."""
    return Layout((("speed_ratio", 1), ("command_timeout", 1), ("enable_id", 1), ("enable_value", 1),
                   ("stop_id", 1), ("reset_id", 1), ("estop_id", 1), ("estop_pressed", 1),
                   ("suppress_gravity_id", 1), ("suppress_collision_avoidance_id", 1),
                   ("suppress_contact_safety_id", 1), ("suppress_cuff_id", 1),
                   ("joint_state_decimation", 1), ("shutdown", 1)))


def state_layout(n: int) -> Layout:
    """Measured and commanded state, robot flags and timing statistics (loop → listener)."""
    return Layout((
        ("time", 1), ("cycle", 1), ("consumed_cmd_id", 1), ("mode", 1),
        ("position", n), ("velocity", n), ("effort", n),
        ("cmd_position", n), ("cmd_velocity", n), ("cmd_acceleration", n), ("cmd_effort", n),
        ("enabled", 1), ("stopped", 1), ("error", 1), ("estop_button", 1), ("estop_source", 1),
        ("ready", 1), ("homed", 1), ("gravity_suppressed", 1),
        ("clamped_position", 1), ("clamped_velocity", 1), ("clamped_effort", 1), ("timeouts", 1),
        ("stat_cycles", 1), ("stat_late", 1), ("stat_skipped", 1), ("stat_compute_sum_us", 1),
        ("stat_compute_max_us", 1), ("rt_fifo", 1), ("rt_cpu", 1), ("realtime", 1), ("alive", 1),
        ("jitter_hist", HIST_BINS), ("compute_hist", HIST_BINS),
    ))
