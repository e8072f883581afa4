"""A trajectory-only arm that times its motion itself (``Backend.paced``: a Cobot's PLC): the loop's reference
follows the arm's progress along the path — it waits for an arm behind it and catches up with one ahead of it —
so the monitors (the JTAS's path tolerance) compare the arm with the same point of the path."""
import numpy as np

from intera_compat.config import load_config
from intera_compat.data import codes as T
from intera_compat.data.state import PROGRESS_ACTIVE, PROGRESS_DONE, PROGRESS_NONE, Capability
from intera_compat.hardware.sim import SimBackend
from intera_compat.loop.forwarding import PACE_MAX
from intera_compat.loop.offline import OfflineLoop
from intera_compat.model.robot_model import RobotModel

CFG = load_config()
STEP = PACE_MAX * 0.001 + 1e-9  # s: how far the reference's time may move in the cycle before it sees the arm's


class OwnTimingArm(SimBackend):
    """Runs each submitted trajectory at ``rate`` × its timing (a PLC honours no hold, nor the slow parts): its
    joints are where the path is at its own time (no physics: it takes no commands, as a PLC streams none)."""
    capabilities = frozenset({Capability.TRAJECTORY_ONLY})
    paced = True

    def __init__(self, rate: float, stuck: bool = False):
        super().__init__(RobotModel(CFG), CFG.full_pose("neutral"))
        self.rate, self.stuck, self.path, self.elapsed = rate, stuck, None, 0.0

    def submit(self, t, q, v, a, order: int = 5) -> bool:
        self.path, self.elapsed = (np.array(t, float), np.array(q, float), np.array(v, float)), 0.0
        return True

    def cancel(self) -> None:
        self.path = None

    def write(self, command) -> None:
        pass

    def read(self, state) -> None:
        super().read(state)
        if self.path is None:
            return
        self.elapsed += self.period
        t, q, v = self.path
        at = min(self.rate * self.elapsed, t[-1])
        for j in range(q.shape[1]):
            state.position[j] = np.interp(at, t, q[:, j])
            state.velocity[j] = self.rate * np.interp(at, t, v[:, j]) if at < t[-1] else 0.0

    def progress(self) -> tuple[int, float]:
        if self.path is None:
            return PROGRESS_NONE, 0.0
        arm_time, end = self.rate * self.elapsed, float(self.path[0][-1])
        if self.stuck:  # (a joint that never settles: the arm's time stays short of the end, as a Cobot's does)
            return PROGRESS_ACTIVE, min(arm_time, end - 0.01)
        return (PROGRESS_DONE, end) if arm_time >= end else (PROGRESS_ACTIVE, arm_time)


def run(rate: float, stuck: bool = False):
    """The SDK's joint_trajectory_client.py shape (the arm's angles held for 1 s, then 0.3 rad on right_j3 over
    3 s) on an arm at ``rate`` × the timing: (reference time, arm time) per cycle, and the result."""
    arm = OwnTimingArm(rate, stuck)
    L = OfflineLoop(CFG, backend=arm)
    L.step()
    q0 = L.arm_q
    q1 = q0.copy()
    q1[3] += 0.3
    tid = L.trajectories.execute([0.0, 1.0, 4.0], [q0, q0, q1])
    times = []
    for _ in range(int(round(4.0 / rate / L.dt)) + 2000):
        L.step()
        if L.cycle.trajectory.traj_id == tid and L.cycle.trajectory.state == T.TRAJ_RUNNING:
            times.append((L.cycle.trajectory.time, arm.progress()[1]))
    return np.array(times), L.trajectories.results.get(tid)


def test_the_reference_catches_up_with_an_arm_ahead_of_the_timing_and_never_passes_it():
    """Conformance on cobot_emulator.launch (joint_trajectory_client.py): the PLC moved off at once, the
    reference held the first point for the trajectory's 1 s — right_j3 0.2 rad apart, PATH_TOLERANCE_VIOLATED."""
    times, res = run(rate=2.0)
    ref, arm = times[:, 0], times[:, 1]
    assert res is not None and res.status == T.SUCCEEDED, res
    assert np.all(ref <= arm + STEP)  # never ahead of the arm (but for the cycle it takes to see it)
    settled = times[len(times) // 4:]  # (once caught up: within a few PACE_TAU of the arm, not 1× behind it)
    assert (settled[:, 1] - settled[:, 0]).max() < 0.3


def test_the_reference_waits_for_an_arm_behind_the_timing():
    times, res = run(rate=0.5)
    assert res is not None and res.status == T.SUCCEEDED, res
    # (it starts at full speed and slows within its ramp's limits: a few hundredths of a second ahead at first)
    assert np.all(times[:, 0] <= times[:, 1] + 0.05)
    assert np.all(times[len(times) // 10:, 0] <= times[len(times) // 10:, 1] + STEP)
    assert times[-1, 1] > 3.5  # (the arm's own time: it took twice as long)


def test_a_fast_catch_up_never_passes_an_arm_that_does_not_finish():
    """The catch-up's braking (the time base's rate and jerk limits) passed an arm stuck short of the end, and the
    trajectory SUCCEEDED while the Cobot's unsettled axis had not arrived (test_cobot_node's unsettled case)."""
    times, res = run(rate=2.0, stuck=True)
    assert res is None  # still running: the arm is not done
    assert np.all(times[:, 0] <= times[:, 1] + STEP) and times[-1, 0] <= 4.0 - 0.01 + 1e-9


def test_a_catch_up_keeps_the_reference_within_the_joints_velocity_limits():
    """An arm running 4× a 1.5 rad move's timing: the reference caught up at 5.8× and right_j3's ran at 2.89 rad/s
    against its 1.957 limit."""
    arm = OwnTimingArm(4.0)
    L = OfflineLoop(CFG, backend=arm)
    L.step()
    q0 = L.arm_q
    q1 = q0.copy()
    q1[3] -= 1.5
    tid = L.trajectories.execute([0.0, 1.0, 4.0], [q0, q0, q1])
    t, vmax, fastest = L.cycle.trajectory, CFG.limits.velocity[:7], 0.0
    for _ in range(3000):
        L.step()
        if t.traj_id == tid and t.state == T.TRAJ_RUNNING:
            fastest = max(fastest, float((np.abs(t.v) / vmax).max()))
    assert L.trajectories.results.get(tid) is not None
    assert 0.9 < fastest <= 1.0 + 1e-9  # (it does catch up, at the limit)


def test_a_replacement_starts_on_the_arms_new_time_not_the_old_pace():
    """A trajectory replacing one the reference was catching up on at 9× started at that pace, with the old arm's
    time as its cap, and stepped back when the arm's new time came."""
    arm = OwnTimingArm(3.0)
    L = OfflineLoop(CFG, backend=arm)
    L.step()
    q0 = L.arm_q
    q1 = q0.copy()
    q1[3] += 0.3
    L.trajectories.execute([0.0, 1.0, 4.0], [q0, q0, q1])
    for _ in range(600):
        L.step()
    t = L.cycle.trajectory
    assert L.cycle.forwarder.pace > 2.0  # (catching up)
    tid = L.trajectories.execute([0.5, 2.5], [L.cycle.sp.q[:7].copy(), q0])
    last = 0.0
    for _ in range(200):
        L.step()
        if t.traj_id == tid:
            assert last <= t.time <= arm.progress()[1] + STEP  # (it ran ahead at the old pace, then stepped back)
            last = t.time
    assert t.traj_id == tid and t.time > 0.0
