"""What the listener process and the loop process share: three "latest value" seqlock records
(``shm``) and two rings (``ring``) for everything that must not be lost or reordered."""
from __future__ import annotations

from ..data.shm import Layout

HIST_BINS = 1000  # 1 µs bins, the last one collects everything ≥ 999 µs

# tick flags the loop sends to the publishers (one byte per tick)
TICK_JOINT_STATES, TICK_STATE_100HZ, TICK_DIAGNOSTICS, TICK_SAFETY = 1, 2, 4, 8  # SAFETY: a detection began/ended

# ring messages, listener → loop (payloads in float64 words)
MSG_COMMAND = 1  # [mode, mask(n), position(n), velocity(n), acceleration(n), effort(n)]
MSG_ENABLE = 2  # [1 enable | 0 disable]
MSG_STOP = 3  # []
MSG_RESET = 4  # []
MSG_ESTOP = 5  # [1 pressed | 0 released]
MSG_SUPPRESS = 6  # [SUPPRESS_* index]
MSG_TRAJ_EXECUTE = 7  # [id, order, k, scaling, tracking, late (s), mask(n), kp(n), t(k), q(k·n), v(k·n), a(k·n)]
MSG_TRAJ_CANCEL = 8  # [id] (0: whatever runs)
MSG_TRAJ_SCALING = 9  # [traj_id (0: whatever runs), factor 0..1]
MSG_SAFETY_ESTOP = 10  # [1 latch | 0 release]: hold the measured position, ignore commands
MSG_BYPASS = 11  # [seconds (0: end now)]: collision avoidance off for that long
MSG_CUFF = 12  # [1 squeezed | 0 released]: zero-G while squeezed (unless suppress_cuff_interaction)
MSG_INTERACTION = 13  # control.interaction.pack: an InteractionControlCommand, validated (latched in the loop)
MSG_ARM_REQUEST = 14  # [request id, ARM_* code, args...]: a request to the arm's own controller (Backend.request)
MSG_HEAD = 15  # [target (rad), speed ratio 0..1, pan mode 0..3]: a validated HeadPanCommand (sources.head)
MSG_SIM_WRENCH = 16  # [link (index into model.mujoco_model.link_frames), duration (s), wrench (6)]: sim only
MSG_SIM_FAULT = 17  # [data.faults FAULT_* code, duration (s)]: sim only, the arm reports that fault for a while
# loop → listener
MSG_TRAJ_RESULT = 20  # [id, status, reason, joint]
MSG_FAULT = 21  # [code, joint, loop time]
MSG_ARM_RESULT = 22  # [request id, ARM_RESULT_*, value]
# arm requests (Backend.request): codes and their args
SUPPRESS_GRAVITY, SUPPRESS_COLLISION_AVOIDANCE, SUPPRESS_CONTACT_SAFETY, SUPPRESS_CUFF = range(4)
SUPPRESS_KEYS = ("gravity", "collision_avoidance", "contact_safety", "cuff")


def command_words(n: int) -> int:
    return 1 + 5 * n


def control_layout() -> Layout:
    """Settings (listener → loop), latest value wins."""
    return Layout((("speed_ratio", 1), ("command_timeout", 1), ("joint_state_hz", 1), ("shutdown", 1),
                   ("speed_override", 1),  # an operator's speed factor 0..1 on top of the backend's
                   ("published_time", 1)))  # loop time of the newest state the listener published (speedup 0)


def state_layout(n: int) -> Layout:
    """Measured and commanded state, robot flags, trajectory progress (loop → listener), every cycle."""
    return Layout((
        ("time", 1), ("cycle", 1), ("mode", 1), ("source", 1),
        ("position", n), ("velocity", n), ("effort", n),
        ("cmd_position", n), ("cmd_velocity", n), ("cmd_acceleration", n), ("cmd_effort", n),
        ("enabled", 1), ("stopped", 1), ("error", 1), ("estop_button", 1), ("estop_source", 1),
        ("ready", 1), ("homed", 1), ("gravity_suppressed", 1), ("speed_scaling", 1),
        ("fault_code", 1), ("fault_joint", 1), ("faults", 1),
        ("traj_id", 1), ("traj_state", 1), ("traj_time", 1), ("traj_duration", 1), ("traj_segment", 1),
        ("traj_error", 1), ("traj_scaling", 1),
        ("commands", 1), ("commands_superseded", 1), ("commands_ignored", 1), ("timeouts", 1),
        ("limit_interventions", 1), ("following_interventions", 1), ("torque_guard_interventions", 1),
        ("clamped_effort", 1),
        ("traj_position", n), ("traj_velocity", n), ("traj_acceleration", n),  # the trajectory's own sample
        # interaction control: latched on, engaged (driving the arm this cycle), the stiffness and damping in
        # effect, the commanded endpoint wrench (interaction-frame axes), reference − actual pose in those axes
        ("interaction_on", 1), ("interaction_engaged", 1), ("interaction_k", 6), ("interaction_d", 6),
        ("interaction_wrench", 6), ("interaction_error", 6),
        # the head pan (sources.head): where it is heading, its mode, a cancelled yaw out of its reach
        ("head_target", 1), ("head_mode", 1), ("head_blocked", 1),
    ))


def safety_layout(n: int, pairs: int) -> Layout:
    """The safety plugins' state (loop → listener, at 100 Hz and on every detection change)."""
    return Layout((
        ("time", 1),
        ("avoid_engaged", 1), ("min_distance", 1), ("min_pair", 1), ("distance_scale", 1), ("effective_scale", 1),
        ("worst_derivative", 1), ("pairs_in_zone", 1), ("repelling", 1), ("pair_active", pairs),
        ("detect_engaged", 1), ("collision_state", 1), ("collision_cause", 1), ("collision_joint", 1),
        ("collision_value", 1), ("collision_threshold", 1), ("collision_metric", 1), ("collisions", 1),
        ("residual", n), ("wrench", 6),
        ("estop", 1), ("bypass", 1), ("bypass_remaining", 1), ("zero_g", 1), ("cuff", 1),
    ))


def stats_layout() -> Layout:
    """Timing statistics of the realtime process (loop → listener, refreshed at 100 Hz)."""
    return Layout((
        ("stat_cycles", 1), ("stat_late", 1), ("stat_skipped", 1), ("stat_compute_sum_us", 1),
        ("stat_compute_max_us", 1), ("rt_fifo", 1), ("rt_cpu", 1), ("idle_poll", 1), ("realtime", 1), ("alive", 1),
        ("ring_full", 1), ("pace_given_up", 1),  # (speedup 0: times the listener was not waited for)
        ("jitter_hist", HIST_BINS), ("compute_hist", HIST_BINS),
    ))
