"""A clock backend's lost time (``Backend.lag``: a ros_control position arm's skipped samples) made up by the
trajectory under way, within the joints' limits, and dropped when none runs (loop/lag.py)."""
import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.data import codes as T
from intera_compat.hardware.sim import SimBackend
from intera_compat.loop.lag import PACE_MAX
from intera_compat.loop.offline import OfflineLoop
from intera_compat.model.robot_model import RobotModel

CFG = load_config()


class LaggingSim(SimBackend):
    lags = True


def started():
    L = OfflineLoop(CFG, backend=LaggingSim(RobotModel(CFG), CFG.full_pose("neutral")))
    L.step()
    return L


def run(L, lost: float, distance: float = 0.5, duration: float = 2.0, late: float = 0.0):
    """right_j3 ``distance`` rad in ``duration`` s (a quintic from rest to rest), sent ``late`` s behind its
    sender's schedule; ``lost`` s of the arm's time lost 0.5 s in. The loop time it took and the reference's
    velocities on the way."""
    q0 = L.arm_q
    v0 = np.zeros(7)
    q1 = q0 + np.array([0, 0, 0, distance, 0, 0, 0])
    tid = L.trajectories.execute([0.0, duration], [q0, q1], [v0, v0], [v0, v0], late=late)
    t0, vel = L.cycle.now, []

    def step():
        L.step()
        vel.append(L.state.local.cmd_velocity[3])
        if lost and abs(L.cycle.now - t0 - 0.5) < 0.5 * L.dt:
            L.backend.lag = lost
    res = L.trajectories.wait(tid, 2.0 * duration + 5.0, step=step)
    assert res is not None and res.status == T.SUCCEEDED
    return L.cycle.now - t0, np.array(vel)


def test_a_trajectory_makes_up_the_time_its_arm_lost_within_the_joints_limits():
    took, v = run(started(), 0.0)
    took_lagged, v_lagged = run(started(), 0.25)
    assert took == pytest.approx(2.0, abs=0.02)
    assert took_lagged == pytest.approx(took - 0.25, abs=0.02)  # back on the client's schedule
    L = started()
    src = L.cycle.trajectory
    assert np.abs(v_lagged).max() <= src.vmax[3] + 1e-9
    assert np.abs(v_lagged).max() <= PACE_MAX * np.abs(v).max() + 1e-9
    assert np.abs(np.diff(v_lagged)).max() / L.dt <= src.amax[3] * 1.01


def test_lost_time_with_no_trajectory_is_dropped_and_nothing_moves():
    L = started()
    q0 = L.arm_q
    L.backend.lag = 0.5
    L.run(0.2)
    assert L.backend.lag == 0.0 and np.abs(L.arm_q - q0).max() < 1e-4
    took, _ = run(L, 0.0)  # (a trajectory after it keeps its own time)
    assert took == pytest.approx(2.0, abs=0.02)


def test_a_path_near_the_limits_makes_up_only_what_keeps_it_within_them():
    """1 rad in 1.2 s: the path peaks at 0.8 of right_j3's velocity limit and 0.4 of its acceleration limit —
    made up at 1.125 × at most (0.9 of the velocity limit), not 1.5 × (the velocity limit passed by 11-13 % in a
    review's run, the accelerations grow with the factor's square)."""
    L = started()
    src = L.cycle.trajectory
    took, v = run(L, 0.25, distance=-1.0, duration=1.2)
    assert took < 1.2 - 0.05  # (some made up)
    assert np.abs(v).max() <= 0.91 * src.vmax[3]  # (0.9 of it, the path's peak sampled at 200 points)
    assert np.abs(np.diff(v)).max() / L.dt <= src.amax[3]


@pytest.mark.parametrize("override", [0.5, 0.0])
def test_time_lost_while_the_operator_slows_the_trajectory_is_not_made_up(override):
    """The speed override below 1 (or a pause): no schedule is kept, the lag is dropped — made up, it ran the
    arm at 1.5 × what the operator set (a review's find)."""
    L = started()
    q0 = L.arm_q
    v0 = np.zeros(7)
    tid = L.trajectories.execute([0.0, 2.0], [q0, q0 + np.array([0, 0, 0, 0.5, 0, 0, 0])], [v0, v0], [v0, v0])
    L.run(0.5)
    L.set(speed_override=override)
    L.run(0.1)
    L.backend.lag = 0.25
    L.run(0.2)
    assert L.backend.lag == 0.0 and L.cycle.trajectory.applied_scaling <= override + 1e-9
    L.set(speed_override=1.0)
    res = L.trajectories.wait(tid, 10.0, step=L.step)
    assert res is not None and res.status == T.SUCCEEDED


def test_a_new_trajectory_starts_on_its_own_schedule():
    """Lag left from the trajectory before (or lost while it was prepared) is not the new one's: it starts at 1."""
    L = started()
    took, _ = run(L, 0.25)
    L.backend.lag = 0.25  # (lost after the last one ended, then nothing dropped it)
    took2, _ = run(L, 0.0, distance=-0.5)
    assert took2 == pytest.approx(2.0, abs=0.02)


def test_a_path_of_many_segments_keeps_its_acceleration_within_the_limit_while_it_makes_up_time():
    """Rest-to-rest quintic segments of 0.6 s (0.8 of right_j3's velocity and acceleration limits inside each, zero
    at every knot), 0.1 s lost every 0.5 s: made up no faster than the segments' peaks allow (a review's run, with
    the path sampled at 40 points that all fell on knots: 1.46 × the acceleration limit)."""
    L = started()
    src = L.cycle.trajectory
    vmax, amax = src.vmax[3], src.amax[3]
    h, n = 0.6, 7
    dq = 0.8 * vmax / 1.875 * h
    q0 = L.arm_q
    Q = np.array([q0 + np.eye(7)[3] * dq * (i % 2) for i in range(n + 1)])
    Z = np.zeros_like(Q)
    tid = L.trajectories.execute(np.arange(n + 1) * h, Q, Z, Z)
    t0, ref, s = L.cycle.now, [], L.state.local

    def step():
        L.step()
        ref.append(s.cmd_position[3])
        el = L.cycle.now - t0
        if el > 0.2 and el % 0.5 < 0.5 * L.dt:
            L.backend.lag = 0.1
    res = L.trajectories.wait(tid, 20.0, step=step)
    assert res is not None and res.status == T.SUCCEEDED
    ref = np.array(ref)
    assert L.cycle.now - t0 < n * h - 0.05  # (some made up: the peaks allow 1.07 ×)
    assert np.abs(np.diff(ref)).max() / L.dt <= 0.91 * vmax
    assert np.abs(np.diff(ref, 2)).max() / L.dt ** 2 <= amax


def test_a_simulated_arm_on_the_wall_clock_counts_the_ticks_its_scheduler_skipped():
    """(c8: the SDK's joint_trajectory_client on the simulated arm, beside a loaded machine, was cancelled on its
    schedule 0.05 rad short: ticks the loop process skipped had stood the simulated world still.)"""
    from intera_compat.loop.lag import SKIPPED_MOST, count_skipped, wall_clock_lags
    on_sim_time = SimBackend(RobotModel(CFG), CFG.full_pose("neutral"))
    wall_clock_lags(on_sim_time, realtime=False)  # (its clients read the simulation's own clock: nothing is late)
    count_skipped(on_sim_time, 100)
    assert not on_sim_time.lags and on_sim_time.lag == 0.0
    b = SimBackend(RobotModel(CFG), CFG.full_pose("neutral"))
    wall_clock_lags(b, realtime=True)
    assert b.lags
    count_skipped(b, 0)
    assert b.lag == 0.0
    count_skipped(b, 30)  # 30 ticks skipped at 1 kHz (a stall of 30–31 ms)
    assert b.lag == pytest.approx(30 * b.period)
    count_skipped(b, 10 ** 6)  # (a stall of minutes is no schedule to keep)
    assert b.lag == SKIPPED_MOST
    L = OfflineLoop(CFG, backend=b)
    L.step()
    assert L.cycle.trajectory.speed_max == PACE_MAX  # (the loop built on it makes the time up)


@pytest.mark.parametrize("late, made_up", [(0.25, 0.25), (0.5, 0.5), (2.0, 0.0), (-1.0, 0.0), (float("nan"), 0.0)])
def test_a_trajectory_that_came_late_makes_up_what_its_sender_says_up_to_half_a_second(late, made_up):
    """The JTAS stamps its ExecuteTrajectory goal with the time its time 0 was due (its planning and the hop to the
    loop come after: in the suite the SDK's joint_trajectory_client was cancelled 0.03 rad short, 0.27 s behind).
    Later than half a second is a clock mismatch (a review's find: any stale stamp ran 0.5 s fast): on arrival."""
    took, v = run(started(), 0.0, late=late)
    assert took == pytest.approx(2.0 - made_up, abs=0.02)
    src = started().cycle.trajectory
    assert np.abs(v).max() <= src.vmax[3] + 1e-9 and np.abs(np.diff(v)).max() / src.dt <= src.amax[3] * 1.01
    L = OfflineLoop(CFG, backend=SimBackend(RobotModel(CFG), CFG.full_pose("neutral")))
    L.step()
    on_time, _ = run(L, 0.0, late=late)  # (an arm that loses no time: nothing to make up)
    assert on_time == pytest.approx(2.0, abs=0.02)


class SampledLag(LaggingSim):
    """A clock backend that counts each sample's time on (as ros_control's and the UR's do), at most a link timeout."""

    def read(self, state):
        super().read(state)
        self.add_lag(self.period, self.period, 0.1)


def test_a_late_start_is_not_cut_to_the_link_timeout_by_the_samples_that_follow():
    """(A review's find: the per-sample count capped a late start's lag at the link timeout, 0.1 s on a real ros_control
    arm, 0.05 s on a UR.)"""
    L = OfflineLoop(CFG, backend=SampledLag(RobotModel(CFG), CFG.full_pose("neutral")))
    L.step()
    took, _ = run(L, 0.0, late=0.3)
    assert took == pytest.approx(1.7, abs=0.02)


def test_a_trajectory_that_starts_slowed_makes_nothing_up_when_it_speeds_up():
    """(A review's find: its lateness was taken when the pause ended, and the arm ran 1.5x the planned speed.)"""
    L = started()
    q0, v0 = L.arm_q, np.zeros(7)
    q1 = q0 + np.array([0, 0, 0, 0.5, 0, 0, 0])
    tid = L.trajectories.execute([0.0, 2.0], [q0, q1], [v0, v0], [v0, v0], scaling=0.5, late=0.5)
    L.run(0.5)
    L.trajectories.set_scaling(1.0, tid)
    t0, peak = L.cycle.now, []
    res = L.trajectories.wait(tid, 10.0, step=lambda: (L.step(), peak.append(abs(L.state.local.cmd_velocity[3]))))
    assert res is not None and res.status == T.SUCCEEDED
    assert max(peak) <= 15.0 / 8.0 * 0.5 / 2.0 * 1.001  # (a quintic's peak, 15/8 of the mean: never faster)


def test_a_late_trajectory_that_starts_with_a_hold_skips_into_it_and_moves_as_planned():
    """The SDK's joint_trajectory_client holds its start for 1 s first; its server samples at now − stamp, so the
    lateness comes off the hold — here too, nothing sped up (a review's find: the hold's ramp took 17 ms of it)."""
    L = started()
    q0, v0 = L.arm_q, np.zeros(7)
    q1 = q0 + np.array([0, 0, 0, 0.5, 0, 0, 0])
    tid = L.trajectories.execute([0.0, 0.4, 2.4], [q0, q0, q1], [v0] * 3, [v0] * 3, late=0.3)
    t0, peak = L.cycle.now, []
    res = L.trajectories.wait(tid, 10.0, step=lambda: (L.step(), peak.append(abs(L.state.local.cmd_velocity[3]))))
    assert res is not None and res.status == T.SUCCEEDED
    assert L.cycle.now - t0 == pytest.approx(2.1, abs=0.02)
    assert max(peak) <= 15.0 / 8.0 * 0.5 / 2.0 * 1.001
