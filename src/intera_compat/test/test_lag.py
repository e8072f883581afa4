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


def run(L, lost: float):
    """right_j3 +0.5 rad in 2 s; ``lost`` s of the arm's time lost 0.5 s in. The loop time it took and the
    reference's velocities on the way."""
    q0 = L.arm_q
    v0 = np.zeros(7)
    tid = L.trajectories.execute([0.0, 2.0], [q0, q0 + np.array([0, 0, 0, 0.5, 0, 0, 0])], [v0, v0], [v0, v0])
    t0, vel = L.cycle.now, []

    def step():
        L.step()
        vel.append(L.state.local.cmd_velocity[3])
        if lost and abs(L.cycle.now - t0 - 0.5) < 0.5 * L.dt:
            L.backend.lag = lost
    res = L.trajectories.wait(tid, 5.0, step=step)
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
