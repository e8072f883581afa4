"""Interaction control: the command's validation (pack) and the controller on the loop's cycle with the MuJoCo
Sawyer (``OfflineLoop``, sim time): stiffness per axis, force on a surface, force and motion limits,
constrained zero-G, the rotational wall, reference resetting, deactivation, zero-G override."""
import numpy as np
import pinocchio as pin
import pytest

from intera_compat.config import load_config
from intera_compat.control.interaction import (FORCE, FORCE_WITH_MOTION_LIMIT, IMPEDANCE, IMPEDANCE_WITH_FORCE_LIMIT,
                                               CartesianAdmittance, CartesianImpedance, InteractionLimits,
                                               InteractionParams, freedrive_axes, pack)
from intera_compat.data.codes import POSITION_MODE
from intera_compat.data.state import Capability
from intera_compat.hardware.sim import SimBackend, SimPositionBackend
from intera_compat.loop.layouts import MSG_CUFF, MSG_INTERACTION
from intera_compat.loop.offline import OfflineLoop
from intera_compat.model.robot_model import RobotModel

CFG = load_config()
ARM = CFG.joint_names
LIM = InteractionLimits.from_config(CFG.control.get("interaction"))
# a bench 3 cm below the wrist at the neutral pose (top at z = 0.15)
BENCH = {"name": "bench", "type": "box", "size": [0.3, 0.5, 0.05], "pos": [0.65, 0.16, 0.10]}
SDK_NULLSPACE = [5.0, 10.0, 5.0, 10.0, 5.0, 10.0, 5.0]


def words(active=True, modes=(IMPEDANCE,) * 6, K=(1300, 1300, 1300, 30, 30, 30), max_k=(False,) * 6, D=(),
          K_ns=SDK_NULLSPACE, force=(0.0,) * 6, position=(0, 0, 0), orientation=(0, 0, 0, 1), endpoint="right_hand",
          in_endpoint=False, no_damping=False, no_reset=False, rotations_cz=False):
    w, _ = pack(active, modes, K, max_k, D, K_ns, force, position, orientation, endpoint, in_endpoint, no_damping,
                no_reset, rotations_cz, 7, "right_hand", LIM)
    return w


@pytest.fixture(scope="module")
def rm():
    return RobotModel(CFG)


def started(obstacles=()):
    L = OfflineLoop(backend=SimBackend(RobotModel(CFG), CFG.full_pose("neutral"), obstacles=obstacles))
    L.run(0.1)
    return L


def interact(L, **kw):
    L.event(MSG_INTERACTION, *words(**kw))
    L.run(0.3)


def hand(L, rm) -> np.ndarray:
    return rm.fk(L.q, "right_hand").translation.copy()


# ---- the command --------------------------------------------------------------------------------------
@pytest.mark.parametrize("field, kw, message", [
    ("interaction_control_mode", dict(modes=(1, 1, 5, 1, 1, 1)), "interaction_control_mode[2] is 5"),
    ("interaction_control_mode", dict(modes=(1, 1)), "interaction_control_mode has 2 values"),
    ("K_impedance", dict(K=(100, -1, 0, 0, 0, 0)), "K_impedance[1] is -1"),
    ("K_impedance", dict(K=(100, 0, np.nan, 0, 0, 0)), "K_impedance[2] is nan"),
    ("D_impedance", dict(D=(1, 2, 3)), "D_impedance has 3 values"),
    ("K_nullspace", dict(K_ns=(1.0,) * 6), "K_nullspace has 6 values, expected 7"),
    ("force_command", dict(force=(0, 0, np.inf, 0, 0, 0)), "force_command[2] is inf"),
    ("max_impedance", dict(max_k=(True,) * 5), "max_impedance has 5 values"),
    ("endpoint_name", dict(endpoint="right_l3"), "endpoint_name 'right_l3'"),
    ("interaction_frame", dict(orientation=(0, 0, 0.5, 0.5)), "not a unit quaternion"),
    ("K_impedance", dict(K=()), "K_impedance is empty"),
    ("force_command", dict(modes=(IMPEDANCE_WITH_FORCE_LIMIT,) * 6, force=()), "force_command is empty"),
])
def test_a_bad_command_is_refused_naming_the_field(field, kw, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        words(**kw)


def test_values_beyond_the_documented_limits_are_capped_with_a_note():
    w, notes = pack(True, [FORCE] * 6, [5000, 10, 10, 100, 1, 1], [False] * 6, [], [20.0] * 7,
                    [-80, 10, 10, 9, 0, 0], (0, 0, 0), (0, 0, 0, 0), "", False, False, False, False, 7, "right_hand",
                    LIM)
    p = InteractionParams(w, 7)
    assert p.K.tolist() == [1300, 10, 10, 30, 1, 1] and p.K_ns.tolist() == [10.0] * 7
    assert p.force.tolist() == [-50, 10, 10, 5, 0, 0]
    assert np.allclose(p.frame_rotation, np.eye(3)) and not p.d_given  # an unset Pose's zero quaternion
    assert len(notes) == 2 + 7 + 2 + 1 and any("K_impedance[0] 5000 capped to 1300" in n for n in notes)


def test_damping_beyond_what_the_loop_can_carry_is_capped_with_a_note():
    w, notes = pack(True, [], [100, 100, 100, 10, 10, 10], [False] * 6, [5e4, 10, 10, 50, 1, 1], [], [], (0, 0, 0), (0, 0, 0, 1), "",
                    False, False, False, False, 7, "right_hand", LIM)
    p = InteractionParams(w, 7)
    assert p.d_given and p.D.tolist() == [1000, 10, 10, 10, 1, 1]
    assert notes == ["D_impedance[0] 50000 capped to 1000", "D_impedance[3] 50 capped to 10"]


def test_an_inactive_command_ignores_the_rest():
    w = words(active=False, K=(-1,) * 6)  # (the SDK's exit message: defaults, whatever they are)
    assert not InteractionParams(w, 7).active


# ---- the law on its own ---------------------------------------------------------------------------------
def test_the_rotational_wall_pushes_back_beyond_82_5_degrees_unless_constrained_zero_g(rm):
    q = CFG.full_pose("neutral").astype(float)
    q_ref = q.copy()
    q_ref[6] += np.radians(95.0)  # the reference 95° away about the hand's axis
    zero = np.zeros_like(q)
    out = {}
    for free in (False, True):
        imp = CartesianImpedance(rm, "right_hand", slice(0, 7), LIM, 0.001)
        imp.set(InteractionParams(words(K=(1300, 1300, 1300, 0, 0, 0), K_ns=(0,) * 7, rotations_cz=free), 7))
        imp.start()
        for _ in range(200):  # (the slew limit)
            assert imp.compute(q, zero, q_ref, zero)
        out[free] = imp.tau.copy()
    assert abs(out[False][6]) > 20.0  # the wall: (95 − 82.5)° at 300 Nm/rad, saturated at 30 Nm about the hand
    assert abs(out[False][6]) < LIM.rotation_wall_torque + 1.0
    assert np.abs(out[True]).max() < 1e-6  # zero rotational stiffness, no wall, no nullspace stiffness


def test_the_interaction_torque_is_slew_limited(rm):
    q = CFG.full_pose("neutral").astype(float)
    q_ref = q.copy()
    q_ref[1] += 0.2
    imp = CartesianImpedance(rm, "right_hand", slice(0, 7), LIM, 0.001)
    imp.set(InteractionParams(words(), 7))
    imp.start()
    assert imp.compute(q, np.zeros_like(q), q_ref, np.zeros_like(q))
    assert np.abs(imp.tau).max() <= LIM.torque_rate * 0.001 + 1e-12


# ---- on the arm ------------------------------------------------------------------------------------------
def pose_of(L, rm, axis, x0) -> float:
    """The hand's displacement from ``x0`` along / about base axis ``axis``."""
    x = rm.fk(L.q, "right_hand")
    return float((x.translation - x0.translation)[axis] if axis < 3 else pin.log3(x.rotation @ x0.rotation.T)[axis - 3])


@pytest.mark.parametrize("axis, k, push", [(0, 500.0, 10.0), (1, 800.0, 10.0), (2, 1300.0, -15.0),
                                           (3, 20.0, 2.0), (4, 10.0, 1.0), (5, 30.0, 2.0)])
def test_impedance_stiffness_per_axis_is_within_10_percent(rm, axis, k, push):
    # the slope between two loads in the same direction, as a stiffness is measured on a real arm: the joints' dry
    # friction (sim.frictionloss, up to 0.3 Nm) holds the same way at both and drops out
    L = started()
    K = [1300.0, 1300.0, 1300.0, 30.0, 30.0, 30.0]
    K[axis] = k
    interact(L, K=K, D=[60.0, 60.0, 60.0, 2.0, 2.0, 2.0])
    moved = []
    x0 = rm.fk(L.q, "right_hand")
    for load in (0.5 * push, push):
        w = np.zeros(6)
        w[axis] = load
        L.backend.apply_wrench("right_hand", w, 3.0)
        L.run(2.0)
        moved.append(pose_of(L, rm, axis, x0))
    assert 0.5 * push / (moved[1] - moved[0]) == pytest.approx(k, rel=0.10)
    assert L.cycle.interaction_engaged and L.cycle.detection.count == 0  # a hand pushing: not a collision


@pytest.mark.parametrize("newtons", [10.0, 30.0])
def test_force_mode_presses_a_surface_with_the_commanded_force(rm, newtons):
    L = started([BENCH])
    # down through free space at F / D (a slow approach: no impact), onto the bench
    interact(L, modes=(IMPEDANCE, IMPEDANCE, FORCE, IMPEDANCE, IMPEDANCE, IMPEDANCE), force=(0, 0, -newtons, 0, 0, 0),
             D=(100, 100, 40 * newtons, 5, 5, 5))
    L.run(2.0)
    forces = []
    for _ in range(20):
        L.run(0.05)
        forces.append(L.backend.scene_force()[2])
    assert L.backend.scene_contact() is not None
    assert np.mean(forces) == pytest.approx(newtons, abs=1.0)
    assert L.cycle.detection.count == 0 and L.cycle.interaction_engaged  # pressing on purpose is no squish


def test_impedance_with_force_limit_never_pushes_harder_than_the_limit(rm):
    L = started([BENCH])
    f = 15.0
    interact(L, modes=(IMPEDANCE_WITH_FORCE_LIMIT,) * 6, force=(f, f, f, 5, 5, 5), D=(200, 200, 200, 5, 5, 5))
    L.set(speed_ratio=0.1)  # the reference sinks slowly 6 cm into the bench (a contact task: no impact)
    target = L.arm_q + np.array([0, 0.15, 0, 0, 0, 0, 0])
    press = []
    for _ in range(300):
        L.send(POSITION_MODE, ARM, position=target)
        L.run(0.01)
        press.append(L.backend.scene_force()[2])
        assert np.abs(L.cycle.impedance.F[:3]).max() <= f + 1e-9  # what the controller asks for
    assert L.backend.scene_contact() is not None and L.cycle.detection.count == 0
    assert 1300 * np.abs(L.cycle.impedance.e[:3]).max() > 2 * f  # the impedance alone would push far harder
    settled = np.mean(press[-50:])  # the reference at rest, the arm pressing
    assert 0.8 * f < settled <= 1.05 * f


def test_force_with_motion_limit_stops_0_12_m_from_the_reference(rm):
    L = started()
    interact(L, modes=(IMPEDANCE, IMPEDANCE, FORCE_WITH_MOTION_LIMIT, IMPEDANCE, IMPEDANCE, IMPEDANCE),
             force=(0, 0, -10.0, 0, 0, 0))
    z0 = hand(L, rm)[2] + L.cycle.impedance.e[2]  # the reference (e: reference − actual)
    L.run(4.0)
    drop = z0 - hand(L, rm)[2]
    assert drop == pytest.approx(0.12, abs=0.01)
    assert np.abs(L.state.local.velocity[:7]).max() < 0.01  # stopped there


def test_constrained_zero_g_lets_the_free_axes_move_and_holds_the_others(rm):
    L = started()
    # constrained_zeroG.py: x, y free (K 0, max_impedance False), z and rotations at max impedance
    interact(L, K=(0, 0, 1300, 30, 30, 30), max_k=(False, False, True, True, True, True),
             K_ns=(10, 10, 7, 0, 0, 0, 0), rotations_cz=True)
    x0 = hand(L, rm)
    L.backend.apply_wrench("right_hand", [0, 8.0, -8.0, 0, 0, 0], 1.0)
    L.run(1.0)
    moved = hand(L, rm) - x0
    assert abs(moved[1]) > 0.05  # free: it goes with the push
    assert abs(moved[2]) < 8.0 / 1300 * 1.5 + 0.002  # held at max impedance (≥ 1300 N/m)
    assert L.state.local.interaction_k[2] >= 1300 and L.state.local.interaction_k[0] == 0


def test_reference_resetting_on_a_parameter_change_and_its_opt_out(rm):
    for no_reset in (False, True):
        L = started()
        interact(L, K=(200, 200, 200, 30, 30, 30), no_reset=no_reset)
        x0 = hand(L, rm)
        L.backend.apply_wrench("right_hand", [10.0, 0, 0, 0, 0, 0], 1.5)
        L.run(1.0)  # pushed 5 cm along x, still pushed
        interact(L, K=(150, 200, 200, 30, 30, 30), no_reset=no_reset)  # a parameter changes
        L.run(1.5)  # the push ends: the arm goes back to the reference
        back = hand(L, rm)[0] - x0[0]
        if no_reset:
            assert abs(back) < 0.01  # back where it started
        else:
            assert back > 0.03  # the reference was reset where the push had it


def test_deactivation_holds_where_the_arm_is_and_repeats_change_nothing(rm):
    L = started()
    interact(L, K=(200, 200, 200, 30, 30, 30))
    x0 = hand(L, rm)
    L.backend.apply_wrench("right_hand", [10.0, 0, 0, 0, 0, 0], 1.5)
    L.run(1.0)
    interact(L, K=(200, 200, 200, 30, 30, 30))  # the SDK's 10 Hz re-send: no reset, nothing changes
    assert L.cycle.interaction_engaged
    L.run(0.19)  # (the push ends 10 ms after the switch)
    here = hand(L, rm)
    assert here[0] - x0[0] > 0.04  # pushed away from the interaction reference
    L.event(MSG_INTERACTION, *words(active=False))
    L.run(1.5)
    assert not L.cycle.interaction_engaged and L.cycle.arbiter.active is L.cycle.hold
    assert np.abs(hand(L, rm) - here).max() < 0.005  # position control holds there: no spring back


def test_the_cuff_overrides_interaction_and_release_returns_to_it(rm):
    L = started()
    interact(L, K=(0, 0, 1300, 30, 30, 30), max_k=(False, False, True, True, True, True), rotations_cz=True)
    L.event(MSG_CUFF, 1)
    L.run(0.1)
    assert L.cycle.arbiter.active is L.cycle.zero_g and not L.cycle.interaction_engaged
    L.event(MSG_CUFF, 0)
    L.run(0.5)
    assert L.cycle.interaction_engaged  # latched: no new message needed
    x0 = hand(L, rm)
    L.backend.apply_wrench("right_hand", [0, 8.0, 0, 0, 0, 0], 1.0)
    L.run(1.0)
    assert abs(hand(L, rm)[1] - x0[1]) > 0.05  # constrained zero-G again


# ---- a position-only arm (admittance) --------------------------------------------------------------------
def position_arm(obstacles=()):
    L = OfflineLoop(CFG, backend=SimPositionBackend(RobotModel(CFG), CFG.full_pose("neutral"),
                                                    obstacles=list(obstacles)))
    L.run(0.1)
    assert L.cycle.admittance is not None and L.cycle.impedance is None
    return L


@pytest.mark.parametrize("axis, k, push", [(0, 500.0, 10.0), (2, 1300.0, -15.0), (3, 20.0, 2.0)])
def test_admittance_stiffness_on_a_position_arm_is_within_10_percent(rm, axis, k, push):
    L = position_arm()
    K = [1300.0, 1300.0, 1300.0, 30.0, 30.0, 30.0]
    K[axis] = k
    interact(L, K=K)
    x0 = rm.fk(L.q, "right_hand")
    w = np.zeros(6)
    w[axis] = push
    L.backend.apply_wrench("right_hand", w, 3.0)
    L.run(2.5)
    assert push / pose_of(L, rm, axis, x0) == pytest.approx(k, rel=0.10)
    L.run(1.5)  # the push ends: back to the reference (no drift, no oscillation)
    assert abs(pose_of(L, rm, axis, x0)) < 0.1 * abs(push / k)
    assert np.abs(L.state.local.velocity[:7]).max() < 0.01


def test_admittance_force_mode_presses_a_surface_on_a_position_arm(rm):
    L = position_arm([BENCH])
    interact(L, modes=(IMPEDANCE, IMPEDANCE, FORCE, IMPEDANCE, IMPEDANCE, IMPEDANCE), force=(0, 0, -10.0, 0, 0, 0))
    L.run(1.5)
    fz = []
    for _ in range(50):
        L.run(0.01)
        fz.append(L.backend.scene_force()[2])
    assert np.mean(fz) == pytest.approx(10.0, abs=1.0) and np.std(fz) < 0.5  # steady, not chattering
    L.event(MSG_INTERACTION, *words(active=False))  # off: position hold where it is, no more pushing down
    L.run(0.5)
    assert not L.cycle.interaction_engaged and L.backend.scene_force()[2] < 10.5


def test_limits_that_would_divide_by_zero_are_refused():
    with pytest.raises(ValueError, match="admittance_mass"):
        InteractionLimits(admittance_mass=(0.0, 1.0))
    with pytest.raises(ValueError, match="k_cap"):
        InteractionLimits.from_config({"k_cap": [1300.0, float("nan")]})
    for bad in ([1300.0], 1300.0, "stiff"):  # a pair needs two numbers: refused at load, not in the cycle
        with pytest.raises(ValueError, match="two numbers"):
            InteractionLimits.from_config({"k_cap": bad})
    with pytest.raises(ValueError, match="admittance_damping_ratio"):
        InteractionLimits(admittance_damping_ratio=0.0)


def test_force_axes_are_damped_by_default_even_with_zero_stiffness(rm):
    L = started()
    interact(L, modes=(FORCE,) * 3 + (IMPEDANCE,) * 3, K=(0, 0, 0, 30, 30, 30))
    assert L.cycle.interaction_engaged
    assert L.cycle.impedance.D[:3] == pytest.approx(LIM.d_default[0])  # not 0 (√0 · 8)


def test_a_tool_point_in_the_endpoint_frame_is_where_the_rotational_stiffness_acts(rm):
    """With interaction_frame.position 15 cm along the hand's z (in_endpoint_frame), a torque turns the tool about
    that point: it stays put while the hand swings; without the offset the hand stays put."""
    moved = {}
    for off in (0.0, 0.15):
        L = started()
        interact(L, K=(1300, 1300, 1300, 10, 10, 10), position=(0, 0, off), in_endpoint=True)
        x0 = rm.fk(L.q, "right_hand")
        point0 = x0.translation + x0.rotation @ np.array([0, 0, 0.15])
        L.backend.apply_wrench("right_hand", [0, 0, 0, 1.5, 0, 0], 2.0)
        L.run(1.5)
        x = rm.fk(L.q, "right_hand")
        assert abs(pin.log3(x.rotation @ x0.rotation.T)[0]) > 0.08  # it turned
        moved[off] = (np.linalg.norm(x.translation - x0.translation),
                      np.linalg.norm(x.translation + x.rotation @ np.array([0, 0, 0.15]) - point0))
    assert moved[0.0][0] < 0.005 < 0.012 < moved[0.0][1]  # about the hand: the hand stays
    assert moved[0.15][1] < 0.005 < 0.012 < moved[0.15][0]  # about the tool point: the point stays


def test_admittance_parameter_change_resets_the_reference_without_a_jump(rm):
    L = position_arm()
    interact(L, K=(200, 200, 200, 30, 30, 30))
    L.backend.apply_wrench("right_hand", [10.0, 0, 0, 0, 0, 0], 1.6)
    L.run(1.0)  # pushed ~5 cm along x, still pushed
    before = hand(L, rm)
    L.event(MSG_INTERACTION, *words(K=(150, 200, 200, 30, 30, 30)))
    track = []
    for _ in range(10):
        L.run(0.005)
        track.append(hand(L, rm))
    assert np.abs(np.array(track) - before).max() < 0.005  # the reference came to the arm: no step of δ
    for _ in range(30):  # the push goes on (10 N / 150 N/m from there), ends; the arm settles at the reset reference
        L.run(0.05)
        assert np.linalg.norm(hand(L, rm) - before) < 0.075
    assert np.linalg.norm(hand(L, rm) - before) < 0.005


def test_admittance_does_not_wind_up_against_a_blocked_arm_or_take_a_bad_wrench(rm):
    """The arm is held (the measured joints never move) while a push drives the admittance for 2 s: the command
    leads the measured joints by at most admittance_max_lag, at most the joints' speed; a reversed push moves the
    command back at once. A NaN wrench changes nothing."""
    q = CFG.full_pose("neutral").astype(float)
    ad = CartesianAdmittance(rm, "right_hand", slice(0, 7), LIM, 0.001)
    ad.set(InteractionParams(words(K=(0, 1300, 1300, 30, 30, 30)), 7))
    ad.start(q[:7])
    vmax = np.asarray(rm.model.velocityLimit)[rm.perm[:7]]
    push = np.array([20.0, 0, 0, 0, 0, 0])
    for _ in range(2000):
        assert ad.compute(q, push, q)
        assert (np.abs(ad.v_cmd) <= vmax * 1.0001).all()
    lead = ad.q_cmd - q[:7]
    assert np.abs(lead).max() <= LIM.admittance_max_lag + 1e-9
    x_far = rm.fk(np.r_[ad.q_cmd, q[7:]], "right_hand").translation[0]
    for _ in range(100):
        assert ad.compute(q, -push, q)
    x_back = rm.fk(np.r_[ad.q_cmd, q[7:]], "right_hand").translation[0]
    assert x_back < x_far - 0.002  # 0.1 s after the reversal it is already coming back (nothing to unwind)
    state = (ad.q_cmd.copy(), ad.delta.copy())
    assert not ad.compute(q, np.array([np.nan, 0, 0, 0, 0, 0]), q)
    assert np.array_equal(ad.q_cmd, state[0]) and np.array_equal(ad.delta, state[1])
    assert np.isfinite(ad.delta_v).all()


def test_force_axes_are_not_braked_by_the_stiffness_the_sdk_sends_there(rm):
    """InteractionOptions sends K = 1300 on every axis, FORCE ones too: their damping stays the force-mode default
    (8 Ns/m), not a damping ratio of an unused spring (~160 Ns/m: 10 N would move the hand at 6 cm/s)."""
    for L in (started(), position_arm()):
        interact(L, modes=(IMPEDANCE, FORCE, IMPEDANCE, IMPEDANCE, IMPEDANCE, IMPEDANCE), force=(0, 8.0, 0, 0, 0, 0))
        law = L.cycle.impedance or L.cycle.admittance
        floor = 0.0 if law is L.cycle.impedance else 0.2 * LIM.admittance_damping_ratio * np.sqrt(
            LIM.k_cap[0] * LIM.admittance_mass[0])  # (a position arm's least damping on any axis)
        assert law.D[1] == pytest.approx(max(LIM.d_default[0], floor)) and law.D[0] > law.D[1]
        y0 = hand(L, rm)[1]
        L.run(0.4)
        assert hand(L, rm)[1] - y0 > 0.04


def test_a_push_at_the_tool_point_does_not_turn_the_tool_on_a_position_arm(rm):
    """The wrist sensor measures at the hand; with a tool point 20 cm out, a force through that point has a moment
    about the hand but none about the point: the admittance moves the point, it does not turn it."""
    L = position_arm()
    interact(L, K=(200, 200, 1300, 30, 30, 30), position=(0, 0, 0.2), in_endpoint=True)
    x0 = rm.fk(L.q, "right_hand")
    point = x0.translation + x0.rotation @ np.array([0, 0, 0.2])
    f = np.array([0.0, 8.0, 0.0])
    L.backend.apply_wrench("right_hand", np.r_[f, np.cross(point - x0.translation, f)], 2.0)
    L.run(1.5)
    x = rm.fk(L.q, "right_hand")
    assert np.linalg.norm(pin.log3(x.rotation @ x0.rotation.T)) < 0.02  # (without the shift: ~0.05 rad)
    assert (x.translation + x.rotation @ np.array([0, 0, 0.2]) - point)[1] > 0.025  # 8 N / 200 N/m = 4 cm


# ---- an arm whose own controller has force mode and freedrive (a UR): what the loop hands it ----------------
class ForceModeArm(SimPositionBackend):
    """The position arm, declaring force mode and freedrive (it does neither: what the loop asks is recorded)."""

    capabilities = SimPositionBackend.capabilities | {Capability.FORCE_MODE, Capability.FREEDRIVE}

    def write(self, command):
        self.asked = command.cartesian.copy()
        super().write(command)


def force_mode_arm():
    L = OfflineLoop(CFG, backend=ForceModeArm(RobotModel(CFG), CFG.full_pose("neutral")))
    L.run(0.1)
    return L


class SelfRegulatingArm(SimPositionBackend):
    """A UR's force mode as the emulator has it: along the compliant axes its own target moves at ``FORCE_GAIN``
    × (the wrench asked + the one the world exerts), the other axes follow the loop's command; and a loop that
    stalls: now and then the arm runs on for several periods between two of the loop's cycles."""

    capabilities = SimPositionBackend.capabilities | {Capability.FORCE_MODE}
    STALLS = (12, 3, 25, 7)  # periods the arm runs on, every ``EVERY`` cycles in turn

    def __init__(self, rm, q0, every=17):
        super().__init__(rm, q0)
        self.every, self.cycles, self.own = every, 0, None
        self.fid, self._qp = rm.frame_id(rm.cfg.tips[0]), np.zeros(rm.model.nq)

    def _pose(self, q):
        self.rm.to_pin(q, self._qp)
        pin.framesForwardKinematics(self.rm.model, self.rm.data, self._qp)
        return self.rm.data.oMf[self.fid].copy()

    def write(self, command):
        from intera_compat.emulator.ur_controller import FORCE_GAIN
        self.cycles += 1
        periods = 1 if self.cycles % self.every else 1 + self.STALLS[self.cycles // self.every % len(self.STALLS)]
        axes = command.force_axes > 0
        if not axes.any():
            self.own = None
            for _ in range(periods):
                super().write(command)
            return
        asked, v_asked = command.position.copy(), command.velocity.copy()
        command.velocity[:] = 0.0  # (servoJ: a target, no velocity)
        if self.own is None:
            self.own = self._qpos[self._qadr].copy()
        for _ in range(periods):
            x, xp = self._pose(self.own), self._pose(asked)
            step = np.r_[xp.translation - x.translation, pin.log3(xp.rotation @ x.rotation.T)]
            v = command.force_wrench + self.scene_force6()
            step[axes] = (v * np.repeat(FORCE_GAIN, 3))[axes] * self.period  # (the task frame: the base's axes)
            self._pose(self.own)
            J = pin.computeFrameJacobian(self.rm.model, self.rm.data, self._qp, self.fid,
                                         pin.LOCAL_WORLD_ALIGNED)[:, self.rm.perm]
            self.own += J.T @ np.linalg.solve(J @ J.T + 1e-4 * np.eye(6), step)
            command.position[:] = self.own
            super().write(command)
        command.position[:], command.velocity[:] = asked, v_asked

    def scene_force6(self) -> np.ndarray:
        w = np.zeros(6)
        self._sense(w)
        return w


def test_an_arm_that_regulates_the_force_itself_is_followed_through_loop_stalls_up_to_the_wall_and_held(rm):
    """A UR's FORCE_WITH_MOTION_LIMIT lifts the tool to the 0.12 m wall and holds it there whatever the load of the
    machine: a loop that stalls finds the arm further on, and its command (what the arm follows on the other axes,
    and where it holds once force mode ends) catches up without a step — the safety chain has nothing to cut, so
    the axis is never taken back, the command never trails the arm by the following window, and "off" holds the
    arm where it is. (Before: each stall's jump was a step the chain shaped, its cuts rebased the offsets, and the
    command oscillated about the arm out to the following window; a cut over FORCE_MODE_CUT took the axis back.)"""
    from intera_compat.emulator.ur_controller import default_config
    cfg = load_config(default_config())
    urm = RobotModel(cfg)
    lim = InteractionLimits.from_config(cfg.control.get("interaction"))
    L = OfflineLoop(cfg, backend=SelfRegulatingArm(urm, cfg.full_pose("neutral")))
    L.run(0.1)
    x0 = urm.fk(L.q, "right_hand")
    w, _ = pack(True, (IMPEDANCE, IMPEDANCE, FORCE_WITH_MOTION_LIMIT, IMPEDANCE, IMPEDANCE, IMPEDANCE),
                (1300.0,) * 3 + (30.0,) * 3, (True,) * 6, (), (), (0, 0, 25.0, 0, 0, 0), (0, 0, 0), (0, 0, 0, 1),
                "right_hand", False, False, False, False, 6, "right_hand", lim)
    L.event(MSG_INTERACTION, *w)
    chain0 = L.state.local.limit_interventions[0], L.state.local.following_interventions[0]
    trail = 0.0
    for _ in range(int(1.2 / L.dt)):
        L.step()
        trail = max(trail, float(np.abs(L.cycle.sp.q[:6] - L.q[:6]).max()))
    assert L.backend.cycles > 60 and L.cycle.admittance.delegated.tolist() == [0, 0, 1, 0, 0, 0]  # (stalls came)
    assert (L.state.local.limit_interventions[0], L.state.local.following_interventions[0]) == chain0
    assert trail < 0.03  # (a stall's jump, caught up; the following window is 0.05 rad)
    x1 = urm.fk(L.q, "right_hand")
    assert x1.translation[2] - x0.translation[2] == pytest.approx(0.12, abs=0.001)  # at the wall
    assert np.abs(x1.translation[:2] - x0.translation[:2]).max() < 0.001  # x, y and the orientation kept
    assert np.linalg.norm(pin.log3(x1.rotation @ x0.rotation.T)) < 0.002
    off, _ = pack(False, (), (), (), (), (), (), (0, 0, 0), (0, 0, 0, 1), "", False, False, False, False, 6, "", lim)
    L.event(MSG_INTERACTION, *off)  # off: a hold where the arm is
    L.run(0.5)
    assert L.backend.own is None and np.abs(urm.fk(L.q, "right_hand").translation - x1.translation).max() < 0.0005


def test_force_mode_stops_at_a_joint_limit_the_config_tightens():
    """A lab's config narrows right_j1 to 0.3 rad above the start (the URDF's is 2π): force mode lifting the tool
    drives that joint there and the loop takes the axes back at it — the range checked was the URDF's, and the arm
    went 0.5 rad past the configured limit."""
    from intera_compat.emulator.ur_controller import default_config
    cfg = load_config(default_config())
    cfg.limits.upper[1] = cfg.full_pose("neutral")[1] + 0.3
    urm = RobotModel(cfg)
    lim = InteractionLimits.from_config(cfg.control.get("interaction"))
    L = OfflineLoop(cfg, backend=SelfRegulatingArm(urm, cfg.full_pose("neutral"), every=10 ** 9))
    L.run(0.1)
    w, _ = pack(True, (IMPEDANCE, IMPEDANCE, FORCE, IMPEDANCE, IMPEDANCE, IMPEDANCE), (1300.0,) * 3 + (30.0,) * 3,
                (True,) * 6, (), (), (0, 0, 25.0, 0, 0, 0), (0, 0, 0), (0, 0, 0, 1), "right_hand", False, False,
                False, False, 6, "right_hand", lim)
    L.event(MSG_INTERACTION, *w)
    beyond, delegated = 0.0, False
    for _ in range(int(3.0 / L.dt)):
        L.step()
        beyond = max(beyond, L.q[1] - cfg.limits.upper[1])
        delegated |= bool(L.cycle.admittance.delegated.any())
    assert delegated and not L.cycle.admittance.delegated.any()  # (the arm moved itself; then the loop took over)
    assert L.q[1] > cfg.limits.upper[1] - 0.01 and beyond < 0.01  # (driven there, and held at it)


def test_the_force_axes_go_to_an_arm_with_force_mode_and_the_loop_leaves_them_to_it(rm):
    L = force_mode_arm()
    x0 = hand(L, rm)
    interact(L, modes=(IMPEDANCE, IMPEDANCE, FORCE, IMPEDANCE, IMPEDANCE, IMPEDANCE), force=(0, 0, -10.0, 0, 0, 0))
    L.run(1.0)
    axes, wrench, frame, free, _ = L.backend.asked
    assert axes.tolist() == [0, 0, 1, 0, 0, 0] and wrench.tolist() == [0, 0, -10.0, 0, 0, 0]
    assert frame[:3] == pytest.approx(x0, abs=0.01) and frame[3:] == pytest.approx(np.zeros(3))  # the base's axes
    assert not free.any()
    # this arm does not regulate the force: the loop's command along z follows the arm, it does not push on (the
    # admittance alone would have driven the hand 8 cm down in this second, as the next arm shows)
    assert hand(L, rm) == pytest.approx(x0, abs=0.002)
    P = position_arm()
    interact(P, modes=(IMPEDANCE, IMPEDANCE, FORCE, IMPEDANCE, IMPEDANCE, IMPEDANCE), force=(0, 0, -10.0, 0, 0, 0))
    P.run(1.0)
    assert hand(P, rm)[2] < x0[2] - 0.05
    L.event(MSG_INTERACTION, *words(active=False))
    L.run(0.1)
    assert not L.backend.asked.any()  # off: nothing asked of the arm's controller
    assert hand(L, rm) == pytest.approx(x0, abs=0.002)


def test_a_constrained_zero_g_goes_to_an_arm_with_freedrive_and_the_setpoint_follows_the_arm(rm):
    L = force_mode_arm()
    q = np.sqrt(0.5)
    interact(L, K=(0, 0, 0, 0, 0, 0), max_k=(False, False, True, True, True, True), rotations_cz=True,
             orientation=(0, 0, q, q))  # the frame turned 90° about z
    L.run(0.2)
    axes, _, _, free, frame = L.backend.asked
    assert free.tolist() == [1, 1, 0, 0, 0, 0] and not axes.any()
    assert frame[3:] == pytest.approx([0, 0, np.pi / 2]) and frame[:3] == pytest.approx(np.zeros(3))
    x0 = hand(L, rm)
    L.backend.apply_wrench("right_hand", [10.0, 0, 0, 0, 0, 0], 1.0)  # along a free axis
    L.run(0.8)
    # the setpoint is where the arm is, whatever moves it (this arm's servo, given its own position, yields: it
    # is no freedrive, which would hold z): no admittance of the loop's own, no spring pulling it back
    assert L.cycle.sp.q[:7] == pytest.approx(L.q[:7], abs=0.003)
    assert np.linalg.norm(hand(L, rm)[:2] - x0[:2]) > 0.02
    L.event(MSG_INTERACTION, *words(active=False))
    L.run(0.1)
    assert not L.backend.asked.any()


@pytest.mark.parametrize("kw, free", [
    (dict(K=(0, 0, 0, 0, 0, 0), max_k=(False, False, True, True, True, True), rotations_cz=True), [1, 1, 0, 0, 0, 0]),
    (dict(K=(0, 1300, 0, 30, 30, 30)), [1, 0, 1, 0, 0, 0]),  # K at the cap counts as held
    (dict(K=(0, 0, 0, 0, 0, 0), rotations_cz=True), [1] * 6),
    (dict(K=(0, 0, 0, 0, 0, 0)), None),  # free rotations would lose the ±82.5° wall
    (dict(K=(0, 500, 1300, 30, 30, 30)), None),  # a spring freedrive has not
    (dict(K=(0, 1300, 1300, 30, 30, 30), in_endpoint=True), None),  # the feature frame would not follow the tool
    (dict(modes=(FORCE,) + (IMPEDANCE,) * 5, K=(0, 1300, 1300, 30, 30, 30)), None),
    (dict(K=(1300, 1300, 1300, 30, 30, 30)), None),  # nothing free
])
def test_which_commands_freedrive_carries_out_exactly(kw, free):
    p = InteractionParams(words(**kw), 7)
    got = freedrive_axes(p, np.repeat(LIM.k_cap, 3))
    assert (got is None and free is None) or got.astype(int).tolist() == free


def test_a_sawyers_seven_nullspace_stiffnesses_are_ignored_on_a_six_joint_arm():
    w, notes = pack(True, [IMPEDANCE] * 6, [1300] * 3 + [30] * 3, [], [], SDK_NULLSPACE, [], (0, 0, 0), (0, 0, 0, 1),
                    "", False, False, False, False, 6, "right_hand", LIM)
    assert InteractionParams(w, 6).K_ns.tolist() == [0.0] * 6 and "ignored" in notes[0]
    with pytest.raises(ValueError, match="K_nullspace has 5 values"):
        pack(True, [IMPEDANCE] * 6, [1300] * 6, [], [], [1.0] * 5, [], (0, 0, 0), (0, 0, 0, 1), "", False, False,
             False, False, 6, "right_hand", LIM)


def test_the_walls_are_forces_handed_to_the_arms_force_mode(rm):
    """Beyond FORCE_WITH_MOTION_LIMIT's 0.12 m the outward push is dropped (fading across the last 10 %) and the wall
    pushes back (the stiffest impedance, within the 50 N cap); beyond ±82.5° the rotations likewise; within them,
    the force asked. Once held back (a limit or the safety chain cut the command) nothing is handed out until the
    parameters change."""
    ad = CartesianAdmittance(rm, "right_hand", slice(0, 7), LIM, 0.001)
    ad.set(InteractionParams(words(modes=(IMPEDANCE, IMPEDANCE, FORCE_WITH_MOTION_LIMIT, FORCE, IMPEDANCE, IMPEDANCE),
                                   force=(0, 0, 10.0, 1.0, 0, 0)), 7))
    axes, wrench, frame = np.zeros(6), np.zeros(6), np.zeros(6)
    for dz, fz in ((0.05, 10.0), (0.114, 5.0), (0.125, -LIM.k_top[0] * 0.005), (0.2, -LIM.f_cap[0]),
                   (-0.125, 10.0 + 15.0)):  # (0.114: half-way across the last 10 % before the wall: half the push)
        ad._da[:] = 0.0
        ad._da[2] = dz
        ad.hand_force(axes, wrench, frame)
        assert axes.tolist() == [0, 0, 1, 1, 0, 0] and wrench[2] == pytest.approx(fz), dz
    ad._da[3] = np.radians(85.0)  # 2.5° beyond the rotational wall, pushing further out with 1 Nm: dropped, pushed back
    ad.hand_force(axes, wrench, frame)
    assert wrench[3] == pytest.approx(-min(LIM.k_top[1] * np.radians(2.5), LIM.f_cap[1]))
    ad.hold_back()  # the safety chain cut the command: nothing handed out ...
    for _ in range(3):
        ad.hand_force(axes, wrench, frame)
        assert not axes.any() and not wrench.any()
    ad.set(ad.params)  # ... until the parameters change
    ad.hand_force(axes, wrench, frame)
    assert axes.tolist() == [0, 0, 1, 1, 0, 0]
