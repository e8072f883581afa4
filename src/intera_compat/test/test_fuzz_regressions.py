"""Counterexamples the invariant fuzz suite (test_invariants_fuzz) found, shrunk and written out as plain
``OfflineLoop`` steps: each test is the behaviour the counterexample broke. The issue-32 item each one pins is in
its docstring, with the invariant that caught it."""
import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.control.interaction import InteractionLimits, pack
from intera_compat.data import codes as T
from intera_compat.data.codes import POSITION_MODE, TORQUE_MODE, TRAJECTORY_MODE, VELOCITY_MODE
from intera_compat.hardware.sim import SimBackend, fault_words
from intera_compat.loop.layouts import (MSG_CUFF, MSG_ENABLE, MSG_HEAD, MSG_INTERACTION, MSG_RESET, MSG_SAFETY_ESTOP,
                                        MSG_SIM_FAULT, MSG_STOP)
from intera_compat.loop.offline import OfflineLoop
from intera_compat.model.robot_model import RobotModel

CFG = load_config()
ARM = CFG.joint_names
ILIM = InteractionLimits.from_config(CFG.control.get("interaction"))
TABLE = CFG.scene_obstacles("table")
HEAD = len(CFG.all_joints) - 1


def started(obstacles=None) -> OfflineLoop:
    L = OfflineLoop(CFG, backend=SimBackend(RobotModel(CFG), CFG.full_pose("neutral"), obstacles=obstacles))
    L.step()
    return L


def interaction_words(modes=(1,) * 6, force=(0.0,) * 6, K=(1300.0, 1300.0, 1300.0, 30.0, 30.0, 30.0)):
    w, _ = pack(True, list(modes), list(K), [False] * 6, [], [5.0, 10.0, 5.0, 10.0, 5.0, 10.0, 5.0], list(force),
                (0, 0, 0), (0, 0, 0, 1), "right_hand", False, False, False, False, CFG.n_arm, "right_hand", ILIM)
    return w


def peak_speed(L, seconds, joints=slice(0, 7)) -> float:
    peak = 0.0
    for _ in range(int(round(seconds / L.dt))):
        L.step()
        peak = max(peak, float(np.abs(L.state.local.velocity[joints]).max()))
    return peak


# ---- issue 32 (1): a whole trajectory sent while an override holds the arm ----------------------------------------
@pytest.mark.parametrize("hold, release, reason", [((MSG_SAFETY_ESTOP, 1), (MSG_SAFETY_ESTOP, 0), T.R_SAFETY_STOP),
                                                   ((MSG_CUFF, 1), (MSG_CUFF, 0), T.R_ZERO_G)],
                         ids=["estop_latch", "cuff_zero_g"])
def test_a_trajectory_sent_under_an_override_is_refused_and_never_runs_when_it_ends(hold, release, reason):
    """Fuzz invariant ``goal`` (shrunk: latch, execute, release). The goal must end at once with a result naming
    the override; after the release the arm stays where it is."""
    L = started()
    L.event(*hold)
    L.run(0.1)
    q = L.arm_q
    tid = L.trajectories.execute([1.0], [q + 0.2])
    L.run(0.2)
    res = L.trajectories.results.get(tid)
    assert res is not None and res.status == T.REJECTED and res.reason == reason, res
    here = L.arm_q
    L.event(*release)
    L.run(0.1)
    for _ in range(1500):
        L.step()
        assert L.state.local.traj_state[0] != T.TRAJ_RUNNING
    assert np.abs(L.arm_q - here).max() < 5e-3


# ---- issue 32 (2): a TRAJECTORY_MODE stream that stops on a braking point -----------------------------------------
def stream_then_stop(L, joint, phases):
    """Stream TRAJECTORY_MODE points at 100 Hz along constant-acceleration ``phases`` [(v0, a, seconds), …] of
    ``joint`` (a consistent path from the current reference), then stop sending; the reference of ``joint`` over
    the next 0.8 s and where the path's last point would come to rest."""
    p = L.state.local.cmd_position[:7].copy()
    for v0, a0, seconds in phases:
        v, a = np.zeros(7), np.zeros(7)
        v[joint], a[joint] = v0, a0
        t0, p0 = L.cycle.now, p.copy()

        def point():
            t = L.cycle.now - t0
            L.send(TRAJECTORY_MODE, ARM, position=p0 + (v + 0.5 * a * t) * t, velocity=v + a * t, acceleration=a)

        L.run(seconds, point)
        t = seconds
        p = p0 + (v + 0.5 * a * t) * t
    ref = []
    for _ in range(800):
        L.step()
        ref.append(L.state.local.cmd_position[joint])
    return np.array(ref)


def run_back(ref: np.ndarray, sign: float) -> float:
    x = sign * ref
    return float(np.max(np.maximum.accumulate(x) - x))


@pytest.mark.parametrize("joint, v, a", [(5, 0.5, -10.0), (0, 0.3, -5.0), (3, -0.6, 6.0)])
def test_a_stream_that_stops_on_a_braking_point_never_runs_back(joint, v, a):
    """Fuzz invariant ``reversal``: a client accelerates within the limits, sends braking points (velocity and
    acceleration of opposite signs), then stops. The extrapolation ends where the velocity reaches zero: the
    reference never runs back against the last direction of motion."""
    L = started()
    L.run(0.1)
    ramp = abs(v) / 4.0  # (up to speed at 4 rad/s²: nothing for joint_limits to shape)
    ref = stream_then_stop(L, joint, [(0.0, 4.0 * np.sign(v), ramp), (v, a, 0.02)])
    back = run_back(ref, np.sign(v))
    assert back < 1e-3, f"the reference ran back {back:.4f} rad"
    assert L.state.local.error[0] == 0.0


@pytest.mark.parametrize("joint, sign", [(1, 1.0), (4, -1.0)], ids=["right_j1_up", "right_j4_down"])
def test_a_stream_that_ends_at_rest_with_its_braking_acceleration_set_never_runs_back(joint, sign):
    """The review's M1 (the fuzz suite took a joint at rest at the last command for one without a direction, so its
    reversal invariant could not see it): 100 Hz TRAJECTORY_MODE points on right_j1 accelerate at 4 rad/s² to
    0.4 rad/s, cruise 0.2 s, brake at -4 rad/s², and the last point — a trapezoid's or ruckig's end instant — is at
    rest, v = 0, with the braking acceleration a = -4 still set; then nothing. The extrapolation took v·a = 0 for
    no braking and accelerated the reference back: it ran 0.217 rad back. It must rest where the profile ended
    (and the same mirrored, on right_j4 moving down)."""
    L = started()
    L.run(0.1)
    q0 = L.state.local.cmd_position[joint]
    a = 4.0 * sign
    ref = stream_then_stop(L, joint, [(0.0, a, 0.1), (0.1 * a, 0.0, 0.2), (0.1 * a, -a, 0.1), (0.0, -a, 0.01)])
    back = run_back(ref, sign)
    assert back < 1e-3, f"the reference ran {back:.4f} rad back"
    assert ref[-1] == pytest.approx(q0 + sign * 0.12, abs=1e-3)  # (where the profile ends: 0.02 + 0.08 + 0.02)
    assert L.state.local.error[0] == 0.0


def test_a_stream_that_ends_at_rest_as_the_client_computes_it_never_runs_back():
    """The same profile as the review's M1, sampled as a client computes it — each phase in its own time, so the
    end instant's velocity is 0.4 - 4 × (0.4 - 0.3) = -1.1e-16 rad/s, not 0 (the fuzz suite's ``brake_to_rest``
    ends on such points: found while writing it, on a1d79bf). The extrapolation takes the sign of that rounding for
    the joint's direction of motion, so the braking acceleration -4 is along it: the reference ran 0.217 rad back
    (b6670a0 fixed it). A velocity of 1e-16 rad/s is at rest; the reference must rest where the profile ended."""
    L = started()
    L.run(0.1)
    p0 = L.state.local.cmd_position[:7].copy()

    def client(t):  # (the trapezoid: up at 4 rad/s² for 0.1 s, 0.2 s at 0.4 rad/s, down at 4 rad/s² for 0.1 s)
        if t < 0.1:
            return 2.0 * t * t, 4.0 * t, 4.0
        if t < 0.3:
            return 0.02 + 0.4 * (t - 0.1), 0.4, 0.0
        tb = t - 0.3
        return 0.1 + (0.4 - 2.0 * tb) * tb, 0.4 - 4.0 * tb, -4.0

    for k in range(41):
        p, v, a = client(k * 0.01)
        P, V, A = p0.copy(), np.zeros(7), np.zeros(7)
        P[1] += p
        V[1], A[1] = v, a
        assert L.send(TRAJECTORY_MODE, ARM, position=P, velocity=V, acceleration=A).ok
        L.run(0.01)
    assert -1e-15 < v < 0.0  # (the end instant, as the client's floating point gives it)
    ref = []
    for _ in range(800):
        L.step()
        ref.append(L.state.local.cmd_position[1])
    ref = np.array(ref)
    back = run_back(ref, 1.0)
    assert back < 1e-3, f"the reference ran {back:.4f} rad back"
    assert ref[-1] == pytest.approx(p0[1] + 0.12, abs=1e-3)


def test_a_stream_starting_at_full_speed_is_shaped_onto_it_without_overshoot():
    """Found while writing the test above (the fuzz suite's reversal bound, a jerk-limited stop's, is wider): a stream
    that starts at -0.6 rad/s from rest on right_j3 and brakes at 6 rad/s² (5 points, then nothing).
    docs/architecture.md: joint_limits shapes a stream starting at full speed "converging on the source without
    overshoot"; the shaped reference passed the stream's resting point by 6 mrad and came back."""
    L = started()
    L.run(0.1)
    q0 = L.state.local.cmd_position[3]
    ref = stream_then_stop(L, 3, [(-0.6, 6.0, 0.05)])
    rest = q0 + (-0.6 + 0.5 * 6.0 * 0.1) * 0.1  # where the braking stream's extrapolation comes to rest
    assert ref[-1] == pytest.approx(rest, abs=1e-3)
    assert ref.min() > rest - 1e-3, f"the shaped reference overshot the stream by {rest - ref.min():.4f} rad"


@pytest.mark.parametrize("first", ["velocity", "position"])
def test_a_stream_that_begins_while_a_joint_it_does_not_name_moves_never_pulls_that_joint_back(first):
    """Fuzz invariant ``reversal`` (bench/fuzz_long.py on e3d3738, shrunk by hand: the example streamed right_j4 from
    rest with a = -3.8 rad/s² while right_j0-only points kept its stream alive, then began a new right_j0-only
    TRAJECTORY_MODE stream while the command timeout's hold had right_j4 at -1.66 rad/s; it ran 0.083 rad back).
    right_j4 moves down (VELOCITY_MODE at -1.5 rad/s, or a POSITION_MODE target 1 rad below, -0.9 rad/s) and a
    single TRAJECTORY_MODE point naming only right_j0 comes: the stream source starts every joint it does not name
    at rest where the reference is (StreamSource.activate: v = a = 0), so joint_limits brakes right_j4 at
    12 rad/s² past that point (88 mm from -1.5 rad/s) and pulls it back; at the stream's timeout the hold's stop
    ramp takes over the returning reference (+1 rad/s) and carries it on: 0.374 rad back against its motion,
    ending 0.286 rad behind where it was when the point came (31 mm back after the POSITION target; 39 mm after a
    whole trajectory). A joint the stream does not name must not be pulled back against its motion."""
    L = started()
    L.run(0.1)
    s = L.state.local
    if first == "velocity":
        v = np.zeros(7)
        v[4] = -1.5
        L.run(0.3, lambda: L.send(VELOCITY_MODE, ARM, velocity=v))
    else:
        target = s.cmd_position[:7].copy()
        target[4] -= 1.0
        L.send(POSITION_MODE, ARM, position=target)
        L.run(0.3)
    assert s.cmd_velocity[4] < -0.5  # (right_j4 moving down)
    assert L.send(TRAJECTORY_MODE, ["right_j0"], position=[s.cmd_position[0]], velocity=[0.0],
                  acceleration=[0.0]).ok
    ref = []
    for _ in range(1500):
        L.step()
        ref.append(s.cmd_position[4])
    back = run_back(np.array(ref), -1.0)
    assert back < 1e-3, f"right_j4's reference ran {back:.4f} rad back"


# ---- issue 32 (3): impedance around a reference that runs on against an obstacle --------------------------------
def test_a_velocity_stream_under_impedance_into_the_table_does_not_wind_up_the_reference():
    """Fuzz invariant ``interaction``: interaction control (impedance) on, a VELOCITY stream lowers the hand onto the
    table and keeps going. The reference stays within ``interaction.reference_window`` of the arm and every effort
    within its limit."""
    L = started(TABLE)
    L.event(MSG_INTERACTION, *interaction_words())
    L.run(0.3)
    window = getattr(ILIM, "reference_window", 0.1)
    worst = 0.0
    for k in range(2500):
        if k % 10 == 0:
            L.send(VELOCITY_MODE, ARM, velocity=[0, 0.4, 0, 0, 0, 0, 0])
        L.step()
        s = L.state.local
        assert np.all(np.abs(L.cycle.adapter.command.effort) <= np.asarray(CFG.limits.effort) + 1e-9)
        if s.interaction_engaged[0] == 1.0:
            worst = max(worst, float(np.abs(s.cmd_position[:7] - s.position[:7]).max()))
    assert L.backend.scene_contact() is not None  # it did reach the table
    assert worst <= window + 1e-9, f"the reference ran {worst:.3f} rad from the arm"


# ---- issue 32 (4): interaction control across a stop, a disable, a fault ---------------------------------------------
@pytest.mark.parametrize("end", ["stop", "disable", "fault"])
def test_a_stop_disable_or_fault_ends_interaction_and_nothing_moves_after_reenabling(end):
    """Fuzz invariant ``rest`` (shrunk: a force-mode interaction command, a stop, reset, enable). Interaction control
    must end with the stop; once enabled again the arm stays at rest until a new command."""
    L = started()
    L.event(MSG_INTERACTION, *interaction_words(modes=(1, 1, 2, 1, 1, 1), force=(0, 0, 10.0, 0, 0, 0)))
    L.run(0.2)
    assert L.state.local.interaction_on[0] == 1.0
    if end == "stop":
        L.event(MSG_STOP)
    elif end == "disable":
        L.event(MSG_ENABLE, 0)
    else:
        L.event(MSG_SIM_FAULT, *fault_words("protective_stop", 0.1))
    L.run(0.3)
    L.event(MSG_RESET)
    L.event(MSG_ENABLE, 1)
    L.run(1.5)  # (settled)
    s = L.state.local
    assert s.enabled[0] == 1.0 and s.interaction_on[0] == 0.0
    here = L.q
    assert peak_speed(L, 1.0) < 0.01
    assert np.abs(L.q - here).max() < 5e-3


# ---- issue 32 (5): the head under the safety E-stop latch -----------------------------------------------------------
def test_the_head_stops_and_takes_no_command_under_the_estop_latch():
    """Fuzz invariant ``rest`` (shrunk: a head command, the latch). The head stops dead where it is, as the arm does,
    and a head command during the latch does not turn it."""
    L = started()
    L.event(MSG_HEAD, -2.0, 0.5, 1)
    L.run(0.2)
    assert abs(L.state.local.velocity[HEAD]) > 0.3  # turning
    L.event(MSG_SAFETY_ESTOP, 1)
    L.run(0.02)
    stopped_at = L.q[HEAD]
    L.run(1.5)  # (the head's law takes out its speed: SETTLE of the fuzz suite)
    here = L.q[HEAD]
    assert abs(here - stopped_at) < 0.1  # a dead stop, not a turn on to the target
    assert peak_speed(L, 0.5, slice(HEAD, HEAD + 1)) < 0.01
    L.event(MSG_HEAD, 0.5, 1.0, 1)
    assert peak_speed(L, 1.0, slice(HEAD, HEAD + 1)) < 0.01
    assert abs(L.q[HEAD] - here) < 5e-3


def test_a_cuff_squeeze_does_not_stop_a_head_move():
    """Fuzz invariant ``rest`` (12-min run on adae5bb: a slow head move, a squeeze and release of the cuff): the rig
    wrongly expected the head at rest after the release. The cuff's zero-G is the arm's: a head move under way goes
    on to its target, as on a Sawyer (the head pan is not part of the arm's zero-G)."""
    L = started()
    L.event(MSG_HEAD, -1.0, 0.2, 1)
    L.run(0.3)
    assert L.state.local.velocity[HEAD] < -0.3  # turning
    L.event(MSG_CUFF, 1)
    L.run(0.3)
    L.event(MSG_CUFF, 0)
    L.run(0.3)
    assert L.state.local.velocity[HEAD] < -0.3  # still turning
    L.run(5.0)
    assert abs(L.q[HEAD] - (-1.0)) < 0.01


# ---- found by the fuzz suite on the fixed loop ----------------------------------------------------------------------
def test_a_huge_raw_stream_acceleration_overflows_nothing_in_the_cycle():
    """The fuzz suite's ``raw_command`` (a TRAJECTORY_MODE point posted past the validator with a 1e300 rad/s²
    acceleration on right_j0, as test_loop_safety's defence-in-depth test does) made joint_limits' braking test
    (v·a, then ·v) overflow to inf: a RuntimeWarning from the hot path, and inf/NaN in a decision the cycle takes.
    Every stage must stay finite on it (the output was: the guard clamps it)."""
    import warnings
    L = started()
    n = L.cycle.n
    mask = np.zeros(n, bool)
    mask[:7] = True
    acc = np.zeros(n)
    acc[0] = 1e300
    pos = np.r_[L.arm_q, 0.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for _ in range(5):
            L.channel.post_command(TRAJECTORY_MODE, mask,
                                   {"position": pos, "velocity": np.zeros(n), "acceleration": acc})
            L.run(0.01)
    assert np.isfinite(L.state.local.cmd_effort).all()


def test_a_trajectory_stream_into_a_position_limit_is_braked_onto_it():
    """Fuzz invariant ``limits`` (shrunk from a TRAJECTORY_MODE stream that accelerated right_j5 into its upper limit
    after a stop, reset and enable): a stream running at 2 rad/s into the limit. joint_limits clamped the reference
    at the limit from full speed (a 1900 rad/s² step) and the arm ran 24 mrad past it; it must brake the reference
    onto the limit within the acceleration limit (as VELOCITY_MODE does), and the arm stop there."""
    L = started()
    lim = CFG.limits
    p0 = L.state.local.cmd_position[:7].copy()
    v = np.zeros(7)
    v[5] = 2.0
    t0 = L.cycle.now

    def stream():
        L.send(TRAJECTORY_MODE, ARM, position=p0 + v * (L.cycle.now - t0), velocity=v, acceleration=np.zeros(7))

    peak, ref = -np.inf, []
    for k in range(2000):
        if k % 10 == 0:
            stream()
        L.step()
        peak = max(peak, L.state.local.position[5])
        ref.append(L.state.local.cmd_position[5])
    acc = np.abs(np.diff(np.array(ref), 2)).max() / L.dt ** 2
    assert acc <= lim.accel[5] * 1.15, f"the reference stopped at {acc:.0f} rad/s²"
    assert peak < lim.upper[5] + 2e-3, f"the arm ran {peak - lim.upper[5]:.4f} rad past its limit"


def test_a_stream_that_asks_a_fast_joint_to_rest_behind_it_brakes_and_comes_back_to_that_point_not_past_it():
    """Fuzz invariant ``reversal`` (bench/fuzz_long.py on 697c846, 14-min run): right_j6 at 4.5 rad/s
    (VELOCITY_MODE), then a client streams TRAJECTORY_MODE points at rest (v = a = 0) at the position right_j6 had
    when it began. The joint cannot stop there: it brakes at its acceleration limit, passes the point by its
    stopping distance and comes back to it — what the client asked for (the rig now allows a return to a point at
    rest the stream commanded). It must come back to that point and not past it, and not overshoot by more than a
    stop from that speed takes."""
    L = started()
    L.run(0.1)
    s = L.state.local
    v = np.zeros(7)
    v[6] = 4.5
    L.run(0.3, lambda: L.send(VELOCITY_MODE, ARM, velocity=v))
    speed = s.cmd_velocity[6]
    assert speed > 3.0
    p = s.cmd_position[[3, 6]].copy()
    ref = []
    for k in range(1200):
        if k % 10 == 0 and k < 1000:
            assert L.send(TRAJECTORY_MODE, ["right_j3", "right_j6"], position=p, velocity=[0.0, 0.0],
                          acceleration=[0.0, 0.0]).ok
        L.step()
        ref.append(s.cmd_position[6])
    ref = np.array(ref)
    overshoot = ref.max() - p[1]
    amax, ramp = 12.0, 0.1  # (right_j6's acceleration limit; the jerk limit's ramp to it, amax / (10 amax))
    assert ref[-1] == pytest.approx(p[1], abs=1e-4)
    assert ref.min() > p[1] - 1e-4, f"right_j6 came back {p[1] - ref.min():.4f} rad past the commanded point"
    assert 0.0 < overshoot < speed ** 2 / (2.0 * amax) + speed * ramp, f"overshoot {overshoot:.4f} rad"


@pytest.mark.parametrize("stop", ["stop", "safety_estop"])
@pytest.mark.parametrize("joint, speed", [(4, 3.5), (6, -4.0)])
def test_brakes_that_take_a_moving_joint_bite_where_it_stopped_and_it_does_not_creep_back(joint, speed, stop):
    """springback (30-min run on d50275f: a fault braked right_j4 at 3.5 rad/s; it ran 0.6 mrad past the stop's
    end, where the brakes held the reference, and was pulled back 1.0 mrad through the plant's stick-slip). The
    brakes bite where the arm is when their stop ends: it comes back a third of a mrad at most (1.2-1.35 mrad on
    the wrist before)."""
    L = started()
    s = L.state.local
    v = np.zeros(7)
    v[joint] = speed
    L.run(0.25, lambda: L.send(VELOCITY_MODE, ARM, velocity=v))
    assert abs(s.velocity[joint]) > 0.5 * abs(speed)
    L.event(*((MSG_STOP,) if stop == "stop" else (MSG_SAFETY_ESTOP, 1.0)))
    d, far, back = np.sign(speed), -np.inf, 0.0
    for _ in range(2000):  # 2 s
        L.step()
        x = s.position[joint] * d
        far = max(far, x)
        back = max(back, far - x)
    assert back < 5e-4, f"right_j{joint} came back {back * 1e3:.2f} mrad from the furthest point of its stop"
    assert abs(s.velocity[joint]) < 1e-3 and abs(s.cmd_position[joint] - s.position[joint]) < 5e-4


def test_the_safety_estop_latch_on_a_standing_arm_with_an_unmodelled_load_keeps_it_where_it_stands():
    """The brakes' bite keeps the law's integral: it holds what the model does not know (here 0.5 kg on the
    flange). Restarted at the bite, the wrist sagged 4.5 mrad under the latch (a review's find)."""
    rm = RobotModel(CFG)
    backend = SimBackend(rm, CFG.full_pose("neutral"))
    L = OfflineLoop(CFG, backend=backend)
    L.step()
    backend.apply_wrench("right_l6", [0.0, 0.0, -9.81 * 0.5, 0.0, 0.0, 0.0], 100.0)
    s = L.state.local
    L.run(1.0)  # (the integral takes the load)
    q0 = s.position[:7].copy()
    L.event(MSG_SAFETY_ESTOP, 1.0)
    worst = 0.0
    for _ in range(2000):
        L.step()
        worst = max(worst, float(np.abs(s.position[:7] - q0).max()))
    assert L.cycle.estop_hold.on and worst < 1.5e-3, f"the arm moved {worst * 1e3:.2f} mrad under the latch"


def test_a_reference_that_ran_ahead_of_a_braking_stream_waits_for_it_and_does_not_step_back():
    """reversal (30-min run on 90c6ae6): a TRAJECTORY_MODE stream starts right_j2 at -1.03 rad/s from rest, braking
    at 4.5 rad/s²; the shaped reference, catching up at the acceleration limit, ran ahead of the braking stream,
    stepped back 0.11 mrad to meet it and then on to its resting point. It waits for the stream now."""
    L = started()
    s = L.state.local
    p0, v0, a0 = s.cmd_position[:3].copy(), np.array([0.0, 0.0, -1.027425]), np.array([0.0, 0.0, 4.53125])
    t0 = L.cycle.now
    names = ["right_j0", "right_j1", "right_j2"]

    def send():
        t = L.cycle.now - t0
        assert L.send(TRAJECTORY_MODE, names, position=p0 + (v0 + 0.5 * a0 * t) * t, velocity=v0 + a0 * t,
                      acceleration=a0).ok
    ref = []
    for k in range(600):
        if k < 177 and k % 10 == 0:
            send()
        L.step()
        ref.append(s.cmd_position[2])
    ref = np.array(ref)
    back = float(np.max(ref - np.minimum.accumulate(ref)))  # (moving down: how far it came back up)
    assert back < 1e-5, f"right_j2's reference came back {back * 1e3:.3f} mrad"


def test_a_reference_past_a_stream_point_at_rest_with_its_braking_acceleration_comes_back_to_it():
    """A stream's last point held at rest (v -1e-16: a profile's end in floating point) with its braking acceleration
    still set, behind a reference that ran past it: the reference comes back to it and settles (a review's find:
    forbidden to step back, it stuck 22 mrad away with the stream at 1 kHz, and buzzed at 500 Hz)."""
    L = started()
    s = L.state.local
    names = ["right_j0", "right_j1", "right_j2"]
    p, v0 = s.cmd_position[:3].copy(), np.array([0.0, 0.0, -0.6])
    t0 = L.cycle.now
    for k in range(300):
        if k % 10 == 0:
            t = L.cycle.now - t0
            assert L.send(TRAJECTORY_MODE, names, position=p + v0 * t, velocity=v0, acceleration=np.zeros(3)).ok
        L.step()
    q_end = p + v0 * (L.cycle.now - t0 - 0.01)  # (where it was 10 ms ago)
    for _ in range(1500):
        assert L.send(TRAJECTORY_MODE, names, position=q_end, velocity=np.array([0.0, 0.0, -1e-16]),
                      acceleration=np.array([0.0, 0.0, 4.5])).ok
        L.step()
    assert abs(s.cmd_position[2] - q_end[2]) < 1e-5 and abs(s.cmd_velocity[2]) < 1e-6


def test_a_stream_that_ends_in_the_avoidance_zone_is_pushed_out_by_the_hold_and_its_reference_follows_the_arm():
    """A TRAJECTORY_MODE stream (no collision avoidance, as the contract says) brings j4 toward the table; its timeout
    hands the arm to position mode's hold, where avoidance applies: the repulsion pushes the arm out, back against
    the stream's direction, and the following-error window pulls the reference after it (30-min run on ad5f607:
    ``reversal``, the reference 0.2 mrad back — the arm's motion, not the source's: the rig's check now tells them
    apart; every other invariant holds through it)."""
    from fuzz_rig import ARM as RIG_ARM, WINDOW, FuzzRig
    rig = FuzzRig(table=True)
    rig.enable(False)
    rig.step(196)
    rig.reset()
    rig.enable(True)
    rig.profile([-0.014088, -0.016018, 0.008312, 0.015557, 0.0, 0.0, 0.0], 0, 0, 1,
                [-1.408822, -1.601799, 0.831191, 1.555749, 0.0, 0.0, 0.0], True, 1, RIG_ARM)
    rig.run(0.02)
    rig.step(166)
    rig.profile([-0.266278], 25, 20, 25, [1.065111], True, 1, ["right_j0"])
    rig.run(0.71)
    rig.step(166)
    rig.scale(1.0)
    rig.step(108)
    rig.scale(0.3)
    rig.step(1)
    rig.cancel(0)
    rig.step(265)
    rig.profile([0.0, -0.064, 0.076795, 0.065631, -0.001605, -0.091602, 0.0], 0, 20, 1, [0.0] * 7, False, 3,
                RIG_ARM)
    rig.run(0.24)
    rig.step(290)
    q_stream = rig.s.position[4]
    rig.run(3.0)  # (raises the Violation an invariant finds)
    assert rig.s.position[4] - q_stream > 0.03  # pushed out, against the stream's direction
    assert abs(rig.s.cmd_position[4] - rig.s.position[4]) <= WINDOW + 1e-9  # the reference came along


def test_brakes_that_stop_a_fast_wrist_at_its_limit_leave_no_wound_up_integral_to_pull_it_back():
    """The safety E-stop latch takes right_j6 spinning at 2.8 rad/s under a torque stream; its brakes stop it at its
    limit. The arm ran on ahead of the stop by up to 9 mrad, and the law's integral learnt that as a model error
    (−3.9 rad/s² in 0.15 s) and pulled the stopped wrist back 1.0 mrad (30-min run on ef7cb0c: ``springback``). The
    integral now keeps its value while the brakes' stop is under way."""
    from fuzz_rig import FuzzRig
    rig = FuzzRig(table=True)
    rig.estop(True)
    rig.step(231)
    rig.estop(False)
    rig.run(0.3)
    for n in (1, 118, 128):
        rig.cancel(0)
        rig.step(n)
    rig.start_stream(TORQUE_MODE, [0.0, 0.0, -5.865662, 0.0, 2.7], None,
                     ["right_j0", "right_j1", "right_j2", "right_j3", "right_j6"])
    rig.step(36)
    rig.head(0.0, 0.1, 1)
    rig.step(243)
    rig.command(POSITION_MODE, ["right_j0"], position=[0.160836])
    rig.step(1)
    assert rig.s.velocity[6] > 2.0  # (spinning as the latch comes)
    rig.estop(True)
    rig.step(252)
    rig.run(3.0)  # (raises the Violation an invariant finds: springback among them)
    assert abs(rig.s.velocity[6]) < 1e-3


def test_a_collision_hold_that_stops_a_fast_elbow_does_not_push_a_wrist_at_its_limit_past_it():
    """A TRAJECTORY_MODE stream drove right_j4 onto its upper limit (the reference held there) while right_j3 turned
    at 2 rad/s; the collision hold then stopped right_j3 dead: 65 Nm asked of its 40, clipped alone, and the coupling
    torques it no longer took, with the avoidance's repulsion pushing outward, drove right_j4 35 mrad past its limit
    (30-min run on ef7cb0c: ``limits``). Now a saturated joint leaves the others the torques for its real motion
    (InverseDynamicsLaw) and the repulsion never pushes a joint on past a limit it is at."""
    from fuzz_rig import FuzzRig
    rig = FuzzRig(table=False)
    rig.start_stream(TRAJECTORY_MODE, [0.0, 0.0, 0.31365, -0.16362], [0.0, -0.875413, 0.931671, -1.823047],
                     ["right_j0", "right_j3", "right_j4", "right_j6"])
    rig.step(299)
    rig.command(POSITION_MODE, ARM, position=[float("nan"), -1.18, 1.470357, 0.870573, 0.884836, 0.762167, 3.571344])
    rig.step(160)
    rig.estop(True)
    rig.step(499)
    rig.estop(False)
    rig.run(2.0)
    rig.reset()
    rig.step(1)
    rig.run(1.0)  # (raises the Violation an invariant finds: limits among them)
    assert rig.s.position[4] <= CFG.limits.upper[4]


def test_a_transient_that_throws_a_wrist_off_its_reference_winds_no_integral_to_pull_it_back_after_the_brakes():
    """A VELOCITY stream spinning right_j2, right_j5 and right_j6 up threw right_j4 (asked to stand) 47 mrad off its
    reference through the coupling; the law's integral, learning that transient as a model error, sat at its clamp
    (-5 rad/s²) when the safety E-stop latch came, and held through the brakes it pulled the stopped wrist back
    3.3 mrad (30-min run on cf153bb: ``springback``). The integral learns now only errors within its own authority
    (|kp e| ≤ integral_limit) on joints not at their torque limit."""
    from fuzz_rig import ARM as RIG_ARM, FuzzRig
    rig = FuzzRig(table=True)
    rig.command(POSITION_MODE, ["right_j0"], position=[0.0])
    rig.step(1)
    rig.start_stream(VELOCITY_MODE, [0.0, 0.0, -1.577118, 0.0, 0.0, 1.517557, -2.406383], None, RIG_ARM)
    rig.step(213)
    rig.command(POSITION_MODE, ["right_j0"], position=[-0.27875])
    rig.step(203)
    rig.speed_ratio(0.05)
    rig.step(268)
    rig.start_stream(VELOCITY_MODE, [0.0, -0.1992, 0.0, 0.0, 0.0, -0.964789, 0.0], None, RIG_ARM)
    rig.step(45)
    rig.start_stream(POSITION_MODE, [-2e-06, -1.185991], None, ["right_j0", "right_j1"])
    rig.step(1)
    rig.execute([1.642531], [[-2e-06]], None, None, ["right_j0"], 1.0, 0, None)
    rig.step(1)
    law = rig.c.law
    assert abs(rig.s.cmd_position[4] - rig.s.position[4]) > 0.03  # (thrown off its reference as the latch comes)
    assert abs(law.integral[4]) < 0.5 * law.ilim[4]
    rig.estop(True)
    rig.step(257)
    rig.run(3.0)  # (raises the Violation an invariant finds: springback among them)
    assert abs(rig.s.velocity[4]) < 1e-3


def test_a_command_timeout_on_the_way_back_to_a_streams_resting_point_stops_the_joint_there_and_no_further():
    """A VELOCITY stream turns right_j2 at -1.29 rad/s; a TRAJECTORY_MODE client then asks it to rest where the
    reference was a moment ago and stops sending. The shaping brakes, turns and brings it back; the command timeout
    strikes at 0.8 rad/s on the way, and the hold's stop takes it 5.6 mrad past the point (30-min run on 18b2d83:
    ``reversal``, the rig's rule: the timeout's stop is the arm's own motion then). It comes to rest once and stays."""
    from fuzz_rig import FuzzRig
    rig = FuzzRig(table=False)
    rig.start_stream(VELOCITY_MODE, [0.0, -1.28805], None, ["right_j0", "right_j2"])
    rig.step(157)
    timeouts = rig.c.counts["timeouts"]
    rig.profile([0.0], 0, 0, 1, [-0.0], False, 3, ["right_j2"])
    ref = []
    for _ in range(600):
        rig.step(1)
        ref.append(rig.s.cmd_position[2])
    assert rig.c.counts["timeouts"] == timeouts + 1  # (the hold took over from the stream)
    ref = np.array(ref)
    turn = int(np.argmin(ref))
    assert np.all(np.diff(ref[turn:]) >= -1e-9)  # (one way back, then at rest: no second turn)
    rig.run(1.0)  # (raises the Violation an invariant finds: reversal among them)
    assert abs(rig.s.velocity[2]) < 1e-3


def test_the_integral_learns_nothing_from_a_torque_driven_joints_coupling_for_the_brakes_to_spring_back():
    """A TORQUE_MODE stream drives right_j3 alone; the law took it to stand still (a = 0), so its real motion's
    coupling threw right_j4 6 mrad off its moving reference, the integral learnt that to its clamp, and held through
    the E-stop latch's brakes it pulled the stopped wrist back 3.3 mrad (the suite's fuzz, on 18b2d83:
    ``springback``). The integral learns nothing while a joint is torque-driven (a review found that working the
    tracked joints' torques out for the motion the client's torque alone would give — the torque guard shapes it
    after the law — pushed them 384 mrad off)."""
    from fuzz_rig import FuzzRig
    rig = FuzzRig(table=True)
    rig.start_stream(TORQUE_MODE, [2.272579], None, ["right_j3"])
    rig.step(214)
    rig.scale(1.0)
    rig.step(176)
    rig.reset()
    rig.step(50)
    rig.run(0.05)
    rig.cancel(0)
    rig.step(155)
    rig.raw(POSITION_MODE, [0.0, -1.18, 0.0, 2.731633, 0.0, 0.57, 3.3161], None, None, None)
    rig.step(79)
    rig.head(0.0, 1.0, 1)
    rig.step(236)
    rig.interaction(True, (1, 1, 2, 1, 1, 1), [1300.0, 1300.0, 1300.0, 30.0, 30.0, 30.0],
                    [0.0, 0.0, 10.002, 0.0, 0.0, 0.0], [], [5.0, 10.0, 5.0, 10.0, 5.0, 10.0, 5.0], False)
    rig.step(100)
    assert abs(rig.s.velocity[4]) > 0.3 and abs(rig.c.law.integral[4]) < 0.5 * rig.c.law.ilim[4]
    rig.estop(True)
    rig.step(243)
    rig.estop(False)
    rig.run(2.0)  # (raises the Violation an invariant finds: springback among them)


def test_the_avoidance_resuming_as_a_bypass_ends_pushes_a_resting_arm_out_of_its_zone_and_no_further():
    """A bypass let the arm rest inside the self-collision avoidance's zone; when it ended, the repulsion pushed the
    arm out at 0.09 rad/s (30-min run on 9cda3ea: ``rest`` — the rig now takes the repulsion for a push from outside,
    as the reversal rule did). The push is small, ends at rest, and nothing else moves."""
    from fuzz_rig import FuzzRig
    rig = FuzzRig(table=False)
    rig.start_stream(POSITION_MODE, [-0.399797, -1.262767, 3.212963, 0.135697, 0.57, 3.3161], None,
                     ["right_j0", "right_j1", "right_j3", "right_j4", "right_j5", "right_j6"])
    rig.step(25)
    rig.estop(True)
    rig.step(158)
    rig.estop(False)
    rig.run(1.0)
    rig.scale(0.0)
    rig.step(256)
    rig.bypass(60.0)
    rig.step(202)
    rig.profile([-0.015219, -0.0, -0.007265], 0, 0, 1, [1.521902, 0.0, 0.726469], False, 1,
                ["right_j0", "right_j1", "right_j2"])
    rig.run(0.02)
    rig.step(19)
    rig.run(2.0)
    rig.reset()
    rig.step(1)
    q0 = rig.s.position[:7].copy()
    rig.bypass(0.0)
    rig.step(2)
    rig.run(3.0)  # (raises the Violation an invariant finds)
    assert rig.c.avoidance.repelling > 0  # (pushed: still in the zone's margin, held there against the law)
    assert np.abs(rig.s.position[:7] - q0).max() < 0.05 and np.abs(rig.s.velocity[:7]).max() < 1e-3  # (35 mrad)
