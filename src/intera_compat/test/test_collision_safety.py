"""Collision avoidance, collision detection, the safety E-stop and bypass, zero-G, on the loop's cycle
(``OfflineLoop``: the realtime process's ``LoopCycle.step`` on the MuJoCo Sawyer, sim time)."""
import mujoco
import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.data import codes as T
from intera_compat.data.codes import POSITION_MODE, TRAJECTORY_MODE, VELOCITY_MODE
from intera_compat.hardware.sim import SimBackend, push_words, pushable_links
from intera_compat.loop.layouts import (MSG_BYPASS, MSG_CUFF, MSG_ENABLE, MSG_ESTOP, MSG_SAFETY_ESTOP, MSG_SIM_WRENCH,
                                        MSG_SUPPRESS, SUPPRESS_COLLISION_AVOIDANCE, SUPPRESS_CONTACT_SAFETY,
                                        SUPPRESS_CUFF, SUPPRESS_GRAVITY, SUPPRESS_KEYS)
from intera_compat.loop.offline import OfflineLoop
from intera_compat.model.robot_model import RobotModel
from intera_compat.safety.collision_avoidance import PairDistances
from intera_compat.safety.collision_detection import IMPACT, NONE, SQUISH

CFG = load_config()
ARM = CFG.joint_names
PADDING = CFG.control["collision_avoidance"]["padding"]
ELBOW_CONTACT = 2.814  # right_j3 from neutral: the forearm (right_l4_2/l6) meets right_l1 about here
TABLE = {"name": "table", "type": "box", "size": [0.3, 0.5, 0.05], "pos": [0.65, 0.16, 0.0]}  # top at z = 0.05


@pytest.fixture(scope="module")
def rm():
    return RobotModel(CFG)


def started(obstacles=()):
    L = OfflineLoop(backend=SimBackend(RobotModel(CFG), CFG.full_pose("neutral"), obstacles=obstacles))
    L.step()
    return L


def keep(L, kind, *values):
    """A sender that repeats one message every call (streams, suppressions)."""
    return lambda: L.event(kind, *values)


# ---- distances --------------------------------------------------------------------------
def test_distance_bound_holds_and_is_exact_near_the_zone(rm):
    pd = PairDistances(rm, rm.tight, 0.05, 0.05)
    rng = np.random.default_rng(4)
    lo, hi = CFG.limits.lower, CFG.limits.upper
    between = 0
    for _ in range(100):
        q = rng.uniform(lo, hi)
        pd.invalidate()
        pd.update(q)
        for _ in range(6):  # small steps: mostly between full passes (candidates only), some across
            q = q + rng.normal(0.0, rng.choice([0.002, 0.02]), len(q))
            passes = pd.full_passes
            below = pd.update(q)
            between += pd.full_passes == passes
            true = rm.distances(q)
            if pd.lazy:  # it claims nothing is near: true
                assert true.min() >= 0.05
            assert sorted(below) == list(np.flatnonzero(true < 0.05))  # exactly the pairs below ``near``
            pd.fill()
            assert np.all(pd.d <= true + 1e-5)  # a lower bound everywhere (GJK's tolerance grows with distance)
            near = true < 0.05
            assert np.all(pd.exact[near])  # and the exact value wherever it may matter
            assert pd.d[near] == pytest.approx(true[near], abs=1e-5)
    assert between > 200


def test_distance_gradient_matches_finite_differences(rm):
    pd = PairDistances(rm, rm.tight, 0.05, 0.05)
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(60):
        q = rng.uniform(CFG.limits.lower, CFG.limits.upper)
        pd.invalidate()
        pd.update(q)
        for k in np.flatnonzero((pd.d > 0.005) & (pd.d < 0.05))[:2]:
            g = pd.gradient(int(k), np.zeros(len(q)))
            h = 1e-4
            num = [(rm.distances(q + h * e)[k] - rm.distances(q - h * e)[k]) / (2 * h) for e in np.eye(len(q))]
            assert g == pytest.approx(num, abs=0.01)
            checked += 1
    assert checked > 20


# ---- avoidance ----------------------------------------------------------------------------
def fold_elbow(L, mode, seconds=3.0, target=3.0, suppress=False):
    """Drive right_j3 toward folding the forearm onto the upper arm; the smallest tight distance seen."""
    q = L.arm_q.copy()
    q[3] = target
    L.set(speed_ratio=1.0)
    dmin = np.inf
    for k in range(int(seconds / 0.01)):
        if mode == POSITION_MODE:
            L.send(POSITION_MODE, ARM, position=q)
        else:
            L.send(VELOCITY_MODE, ARM, velocity=[0, 0, 0, 1.0, 0, 0, 0])
        if suppress:
            L.event(MSG_SUPPRESS, SUPPRESS_COLLISION_AVOIDANCE)
        for _ in range(10):
            L.step()
            dmin = min(dmin, L.rm.distances(L.q).min())
    return dmin


@pytest.mark.parametrize("mode", [POSITION_MODE, VELOCITY_MODE])
def test_folding_the_elbow_stops_short_of_contact(mode):
    L = started()
    dmin = fold_elbow(L, mode)
    assert dmin > PADDING  # the tight shapes never came closer than the padding
    assert L.arm_q[3] < ELBOW_CONTACT - 0.02
    assert abs(L.state.local.velocity[3]) < 0.01  # stopped there, not crawling in
    assert L.cycle.avoidance.interventions > 0


def test_suppressed_avoidance_folds_the_elbow_into_contact():
    L = started()
    dmin = fold_elbow(L, POSITION_MODE, suppress=True)
    assert dmin < 0.002  # the links met (the plant's own contact stops them)


def test_trajectory_mode_is_not_altered():
    L = started()
    q0 = L.arm_q.copy()
    goal = 2.80  # inside the padding: POSITION mode stops short of it
    n = 200
    for k in range(n + 50):  # a 2 s cosine ramp streamed at 100 Hz
        s = min(k / n, 1.0)
        q = q0.copy()
        q[3] = q0[3] + (goal - q0[3]) * (1 - np.cos(np.pi * s)) / 2
        v = np.zeros(7)
        v[3] = (goal - q0[3]) * np.pi / 2 * np.sin(np.pi * s) / 2.0 if s < 1 else 0.0
        L.send(TRAJECTORY_MODE, ARM, position=q, velocity=v, acceleration=np.zeros(7))
        L.run(0.01)
    assert L.cycle.avoidance.interventions == 0
    assert L.arm_q[3] == pytest.approx(goal, abs=0.01)


def test_moving_away_from_a_close_pair_runs_at_full_speed():
    L = started()
    fold_elbow(L, POSITION_MODE, seconds=3.0)
    assert L.cycle.avoidance.tight.d.min() < CFG.control["collision_avoidance"]["safety_zone"]
    peak = 0.0
    for _ in range(40):
        L.send(VELOCITY_MODE, ARM, velocity=[0, 0, 0, -1.0, 0, 0, 0])
        L.run(0.01)
        peak = max(peak, -L.state.local.velocity[3])
    assert peak > 0.95  # 1 rad/s asked, away from the pair: not slowed


# ---- detection ----------------------------------------------------------------------------
def drive_down(L, speed, seconds, every=None):
    """Lower the arm onto the table with right_j1 in VELOCITY mode; (first contact time, first trip)."""
    det, contact, trip = L.cycle.detection, None, None
    for k in range(int(seconds / L.dt)):
        if k % 10 == 0:
            L.send(VELOCITY_MODE, ARM, velocity=[0, speed, 0, 0, 0, 0, 0])
            if every is not None:
                every()
        L.step()
        if contact is None and L.backend.contacts():
            contact = L.cycle.now
        if trip is None and det.tripped:
            trip = (L.cycle.now, det.state)
    return contact, trip


def test_driving_into_the_table_trips_impact_holds_and_resumes():
    L = started([TABLE])
    contact, trip = drive_down(L, 0.8, 0.8)
    assert contact is not None and trip is not None
    assert trip[1] == IMPACT and 0.0 <= trip[0] - contact <= 0.02
    det, hold = L.cycle.detection, L.cycle.collision_hold
    t_trip = trip[0]
    assert L.cycle.arbiter.active is hold
    # held: no motion although velocity commands keep coming, for the hold time
    while L.cycle.now < t_trip + 0.45:
        L.send(VELOCITY_MODE, ARM, velocity=[0, -0.3, 0, 0, 0, 0, 0])  # (upward: would be allowed)
        L.run(0.01)
        assert L.cycle.arbiter.active is hold
    assert np.abs(L.state.local.velocity[:7]).max() < 0.05
    # then the streaming command resumes (away from the table, nothing to detect)
    for _ in range(20):
        L.send(VELOCITY_MODE, ARM, velocity=[0, -0.3, 0, 0, 0, 0, 0])
        L.run(0.01)
    assert det.state == NONE and L.cycle.arbiter.active is L.cycle.velocity
    assert L.state.local.velocity[1] < -0.2


@pytest.mark.parametrize("event", [(MSG_SAFETY_ESTOP, 1), (MSG_ESTOP, 1), (MSG_ENABLE, 0)],
                         ids=["safety_estop", "estop", "disable"])
def test_brakes_right_after_a_collision_do_not_push_into_what_the_arm_hit(event):
    """The latch, the button or a disable 2 ms after a trip: the brakes stop dead as the collision hold does (braking
    on from the measured speed, into the table, pressed it with 56-63 N instead of the hold's 13)."""
    def pressing(L, seconds):
        for _ in range(int(seconds / L.dt)):
            L.step()
        return float(np.linalg.norm(L.backend.scene_force()))

    alone = started([TABLE])
    assert drive_down(alone, 0.8, 0.8)[1] is not None
    L = started([TABLE])
    det = L.cycle.detection
    for k in range(3000):
        if k % 10 == 0:
            L.send(VELOCITY_MODE, ARM, velocity=[0, 0.8, 0, 0, 0, 0, 0])
        L.step()
        if det.tripped:
            break
    assert det.tripped
    L.run(0.002)
    L.event(*event)
    pressed = pressing(L, 0.5)
    assert (L.state.local.enabled[0] == 0.0) == (event[0] != MSG_SAFETY_ESTOP)  # (it took)
    assert pressed < 2.0 * pressing(alone, 0.5) + 10.0  # (the collision hold alone: 6 N; braking on: 56 N)


def test_suppressed_contact_safety_does_not_trip():
    L = started([TABLE])
    contact, trip = drive_down(L, 0.8, 1.0, keep(L, MSG_SUPPRESS, SUPPRESS_CONTACT_SAFETY))
    assert contact is not None and trip is None and L.cycle.detection.count == 0


def test_pushing_on_the_table_is_a_squish_held_while_it_lasts():
    L = started([TABLE])
    # settle onto the table with contact safety off, then keep pushing with it on
    contact, trip = drive_down(L, 0.15, 2.5, keep(L, MSG_SUPPRESS, SUPPRESS_CONTACT_SAFETY))
    assert contact is not None and trip is None
    det = L.cycle.detection
    assert np.abs(det.residual / det.squish_thr).max() > 1.0  # pressing harder than the threshold
    _, trip = drive_down(L, 0.15, 0.3)  # (the suppression lapses 0.2 s after its last message)
    assert trip is not None and trip[1] == SQUISH
    assert det.joint in range(7) and abs(det.value) > det.threshold
    L.run(0.3)  # holding at the measured position relieves the push: the squish ends
    assert det.state == NONE


def test_no_false_detection_in_fast_free_motion():
    L = started()
    L.set(speed_ratio=1.0)
    rng = np.random.default_rng(8)
    lo, hi = CFG.limits.lower[:7] * 0.6, CFG.limits.upper[:7] * 0.6
    for _ in range(6):
        target = rng.uniform(lo, hi)
        for _ in range(100):
            L.send(POSITION_MODE, ARM, position=target)
            L.run(0.01)
    assert L.cycle.detection.count == 0


def test_a_collision_ends_a_whole_trajectory_with_its_reason():
    L = started([TABLE])
    q0 = L.arm_q
    q1 = q0 + np.array([0, 0.6, 0, 0, 0, 0, 0])  # down through the table
    v0 = np.zeros(7)
    tid = L.trajectories.execute([0.0, 2.0], [q0, q1], [v0, v0], [v0, v0])
    res = L.trajectories.wait(tid, 3.0, step=L.step)
    assert res is not None and res.status == T.ABORTED and res.reason == T.R_COLLISION


# ---- E-stop and bypass ------------------------------------------------------------------
def test_safety_estop_latches_a_hold_and_ignores_commands_until_released():
    L = started()
    target = L.arm_q + np.array([0.5, 0, 0, 0, 0, 0, 0])
    L.send(POSITION_MODE, ARM, position=target)
    L.run(0.3)
    L.event(MSG_SAFETY_ESTOP, 1)
    L.run(0.01)
    here = L.arm_q
    for _ in range(50):
        L.send(POSITION_MODE, ARM, position=target)
        L.run(0.01)
    assert np.abs(L.arm_q - here).max() < 0.02 and abs(L.state.local.velocity[0]) < 0.01
    L.event(MSG_SAFETY_ESTOP, 0)
    L.run(0.5)
    assert np.abs(L.arm_q - here).max() < 0.02  # released: holds until a new command
    for _ in range(300):
        L.send(POSITION_MODE, ARM, position=target)
        L.run(0.01)
    assert np.abs(L.arm_q - target).max() < 0.01


@pytest.mark.parametrize("end", ["request", "timeout"])
def test_bypass_widens_joint_limits_and_narrows_them_behind_the_arm_without_a_jump(end):
    L = started()
    lo, hi = CFG.limits.lower[6], CFG.limits.upper[6]
    tol = CFG.control["bypass_joint_limit_tolerance"] * (hi - lo)
    beyond = L.arm_q
    beyond[6] = hi + 2.0 * tol  # past the relaxed range too: clamped to it
    L.send(POSITION_MODE, ARM, position=beyond)
    L.run(2.0, every=lambda: L.send(POSITION_MODE, ARM, position=beyond))
    assert L.arm_q[6] < hi + 1e-3  # no bypass: the normal limit
    L.event(MSG_BYPASS, 2.0 if end == "timeout" else 60.0)
    L.run(1.5, every=lambda: L.send(POSITION_MODE, ARM, position=beyond))
    assert hi + 0.9 * tol < L.arm_q[6] < hi + tol + 1e-3  # out to the widened limit, no further
    if end == "request":
        L.event(MSG_BYPASS, 0.0)
    out = L.arm_q[6]
    L.run(1.0)  # the bypass ends with the arm beyond its limit: it stays there (the range ends where it is)
    assert not L.cycle.bypass
    assert L.arm_q[6] == pytest.approx(out, abs=2e-3) and L.cycle.upper[6] > hi + 0.9 * tol
    steps = []
    for k in range(1500):  # commands beyond the limit are clamped to it again: the arm comes back, no jump
        if k % 10 == 0:
            L.send(POSITION_MODE, ARM, position=beyond)
        before = L.cycle.sp.q[6]
        L.step()
        steps.append(L.cycle.sp.q[6] - before)
    assert np.abs(steps).max() <= CFG.limits.velocity[6] * L.dt * 1.06
    assert L.arm_q[6] == pytest.approx(hi, abs=2e-3)
    assert L.cycle.upper[6] == hi and not L.cycle.range.narrowing  # the range closed behind it
    inside = L.arm_q
    inside[6] = hi - 0.2
    L.run(1.0, every=lambda: L.send(POSITION_MODE, ARM, position=inside))
    L.run(1.0, every=lambda: L.send(POSITION_MODE, ARM, position=beyond))  # and out again: the normal limit
    assert L.arm_q[6] == pytest.approx(hi, abs=2e-3)


def test_bypass_turns_avoidance_off_and_ends_by_itself():
    L = started()
    L.event(MSG_BYPASS, 1.0)
    assert fold_elbow(L, POSITION_MODE, seconds=0.9) < PADDING  # no avoidance while bypassed
    assert L.cycle.bypass
    L.run(0.2)
    assert not L.cycle.bypass
    q = L.arm_q.copy()
    q[3] = 2.0
    for _ in range(150):  # back out, then in again: avoidance is back
        L.send(POSITION_MODE, ARM, position=q)
        L.run(0.01)
    assert fold_elbow(L, POSITION_MODE, seconds=3.0) > PADDING


# ---- zero-G (cuff) ------------------------------------------------------------------------
def push_hand(L, force, seconds, every=None):
    L.backend.apply_wrench("right_hand", [*force, 0, 0, 0], seconds)
    L.run(seconds, every)


def test_cuff_squeeze_floats_the_arm_and_release_holds_where_it_was_left():
    L = started()
    L.event(MSG_CUFF, 1)
    L.run(0.05)
    assert L.cycle.arbiter.active is L.cycle.zero_g
    q0 = L.arm_q
    L.run(0.5)
    assert np.abs(L.arm_q - q0).max() < 0.02  # gravity compensated: it floats, no sag
    push_hand(L, [0, 20.0, 0], 0.5)  # a hand pulls sideways
    moved = L.arm_q - q0
    assert np.abs(moved).max() > 0.1  # it gives way freely
    assert L.cycle.detection.count == 0  # a hand on the cuff is not a collision
    L.event(MSG_CUFF, 0)
    L.run(1.0)  # released while still drifting: it stops (at the acceleration limits) ...
    assert L.cycle.arbiter.active is L.cycle.hold
    here = L.arm_q
    L.run(0.5)
    assert np.abs(L.arm_q - here).max() < 5e-3 and np.abs(L.state.local.velocity[:7]).max() < 0.01
    assert np.abs(L.arm_q - q0).max() > 0.1  # ... and stays where it was left, no spring back


def test_a_push_through_the_loop_moves_a_floating_arm_for_its_duration_and_ends_early_on_zero():
    """/robot/sim/apply_wrench's path (MSG_SIM_WRENCH: the viewer's mouse, a test's fault injection)."""
    L = started()
    links, fixed = pushable_links(L.backend.rm)
    L.event(MSG_CUFF, 1)
    L.run(0.3)
    q0 = L.arm_q
    L.run(0.3)
    assert np.abs(L.arm_q - q0).max() < 2e-3  # floating, nothing pushes: it stays
    L.channel.post(MSG_SIM_WRENCH, push_words(links, "right_hand", [0, 25.0, 0, 0, 0, 0], 0.3))
    L.run(0.35)
    assert L.arm_q[0] - q0[0] > 0.05  # it gave way, the right way (+y at the hand turns j0 up)
    assert not L.backend.d.xfrc_applied.any()  # and the push is over after its 0.3 s
    L.channel.post(MSG_SIM_WRENCH, push_words(links, "right_hand", [0, 0, 30.0, 0, 0, 0], 60.0))
    L.channel.post(MSG_SIM_WRENCH, push_words(links, "right_l2", [0, 0, -10.0, 0, 0, 0], 60.0))
    L.run(0.05)
    hand, l2 = (L.backend.m.site_bodyid[L.backend.m.site(n).id] for n in ("right_hand", "right_l2"))
    assert L.backend.d.xfrc_applied[hand, 2] == 30.0 and L.backend.d.xfrc_applied[l2, 2] == -10.0  # one per body
    L.channel.post(MSG_SIM_WRENCH, push_words(links, "right_hand", [0] * 6, 0.0))  # duration 0: ends that one now
    L.run(0.002)
    assert not L.backend.d.xfrc_applied[hand].any() and L.backend.d.xfrc_applied[l2, 2] == -10.0
    assert "base" in fixed and "right_l0" not in fixed


@pytest.mark.parametrize("link, wrench, duration, field", [
    ("elbow", [0] * 6, 1.0, "link:"), ("right_hand", [0, float("nan"), 0, 0, 0, 0], 1.0, "wrench.force.y"),
    ("right_hand", [0, 0, 0, 0, 0, float("inf")], 1.0, "wrench.torque.z"),
    ("right_hand", [2000, 0, 0, 0, 0, 0], 1.0, "wrench.force"), ("right_hand", [0] * 6, -1.0, "duration"),
    ("right_hand", [0] * 6, float("nan"), "duration"), ("right_hand", [0] * 6, 1e4, "duration"),
    ("pedestal", [0, 0, 10, 0, 0, 0], 1.0, "link: pedestal is fixed"),
    ("right_hand", [0, 0, 0, 0, 150, 0], 1.0, "wrench.torque")])
def test_a_bad_push_is_refused_naming_the_field(link, wrench, duration, field):
    links, fixed = pushable_links(RobotModel(CFG))
    with pytest.raises(ValueError, match="^" + field.replace(".", r"\.")):
        push_words(links, link, wrench, duration, fixed)


def test_a_push_acts_at_the_link_frame_origin_as_the_link_turns():
    """The wrench at the frame origin, carried to the centre of mass each step: the same generalised force as
    MuJoCo's own mj_applyFT at the site, before and after the body turns."""
    L = started()
    be = L.backend
    m, d = be.m, be.d
    f, t = np.array([5.0, -20.0, 12.0]), np.array([0.5, 1.0, -2.0])
    be.apply_wrench("right_hand", np.r_[f, t], 5.0)
    sid = m.site("right_hand").id
    seen = []
    for _ in range(2):
        L.run(0.3, every=lambda: L.send(VELOCITY_MODE, ARM, velocity=[0, 0, 0, 0, 0, 1.5, 2.0]))  # the wrist turns
        b = int(m.site_bodyid[sid])  # (d's kinematics are those the last step set the wrench from)
        ours, theirs = np.zeros(m.nv), np.zeros(m.nv)
        mujoco.mj_applyFT(m, d, d.xfrc_applied[b, :3].copy(), d.xfrc_applied[b, 3:].copy(), d.xipos[b].copy(), b,
                          ours)
        mujoco.mj_applyFT(m, d, f, t, d.site_xpos[sid].copy(), b, theirs)
        assert ours == pytest.approx(theirs, abs=2e-3)  # (the wrench was set from the kinematics a step before)
        seen.append(ours)
    assert np.abs(seen[1] - seen[0]).max() > 0.1  # the hand turned between: a moment arm frozen at the start fails


def test_commands_during_zero_g_wait_and_a_streaming_client_resumes_after_release():
    L = started()
    target = L.arm_q + np.array([0.3, 0, 0, 0, 0, 0, 0])
    L.event(MSG_CUFF, 1)
    for _ in range(30):
        L.send(POSITION_MODE, ARM, position=target)
        L.run(0.01)
    assert L.cycle.arbiter.active is L.cycle.zero_g and L.state.local.commands_ignored[0] >= 30
    L.event(MSG_CUFF, 0)
    for _ in range(300):
        L.send(POSITION_MODE, ARM, position=target)
        L.run(0.01)
    assert np.abs(L.arm_q - target).max() < 0.01


def test_suppress_cuff_interaction_keeps_the_controller():
    L = started()
    L.event(MSG_CUFF, 1)
    L.run(0.5, keep(L, MSG_SUPPRESS, SUPPRESS_CUFF), period=0.05)
    assert L.cycle.arbiter.active is not L.cycle.zero_g
    q0 = L.arm_q
    push_hand(L, [0, 5.0, 0], 0.3, keep(L, MSG_SUPPRESS, SUPPRESS_CUFF))
    assert np.abs(L.arm_q - q0).max() < 0.02  # still position-controlled
    L.run(0.3)  # the suppression lapses while the cuff is still squeezed: zero-G
    assert L.cycle.arbiter.active is L.cycle.zero_g


@pytest.mark.parametrize("hold", ["cuff", "safety_estop"])
def test_gravity_suppression_cannot_make_a_held_arm_limp(hold):
    # a torque client streaming suppress_gravity_compensation while zero-G or the E-stop holds the arm: the
    # hold keeps gravity compensation (0 Nm would let the arm fall, with detection off in zero-G)
    L = started()
    L.event(MSG_CUFF, 1) if hold == "cuff" else L.event(MSG_SAFETY_ESTOP, 1)
    L.run(0.05)
    assert L.cycle.arbiter.active is (L.cycle.zero_g if hold == "cuff" else L.cycle.estop_hold)
    q0 = L.arm_q
    L.run(0.6, keep(L, MSG_SUPPRESS, SUPPRESS_GRAVITY), period=0.02)
    assert np.abs(L.arm_q - q0).max() < 0.02  # (suppressed, the arm sags > 0.05 rad in 0.3 s)
    assert L.state.local.gravity_suppressed[0] == 0.0


def on_of(L, key) -> bool:
    """Whether the safety function that ``key`` suppresses is on in this cycle."""
    c = L.cycle
    return {SUPPRESS_CONTACT_SAFETY: c.ctx.detection, SUPPRESS_COLLISION_AVOIDANCE: c.ctx.avoidance,
            SUPPRESS_CUFF: c.zero_g.allowed, SUPPRESS_GRAVITY: L.state.local.gravity_suppressed[0] == 0.0}[key]


@pytest.mark.parametrize("key", range(len(SUPPRESS_KEYS)), ids=SUPPRESS_KEYS)
def test_suppression_holds_only_while_messages_come_faster_than_5_hz(key):
    L = started()
    dt = L.dt

    def cycles(seconds, period=None):
        """Step, sending the suppression every ``period``; whether the function was on, per cycle."""
        out = []
        for k in range(int(round(seconds / dt))):
            if period is not None and k % int(round(period / dt)) == 0:
                L.event(MSG_SUPPRESS, key)
            L.step()
            out.append(on_of(L, key))
        return np.array(out)

    assert cycles(0.3).all()
    assert cycles(0.3, period=1.0).all()  # a single message suppresses nothing
    assert cycles(1.0, period=0.25).all()  # nor does a 4 Hz stream
    on = cycles(0.5, period=0.1)  # a 10 Hz stream: off from its second message on
    first_off = int(np.argmin(on))
    assert not on[first_off] and first_off <= int(round(0.1 / dt)) + 1 and not on[first_off:].any()
    # the last message was read by the cycle at 0.4 s of that run: off until just before 0.2 s later, on after
    on = cycles(0.3)
    assert not on[:int(round(0.09 / dt))].any() and on[int(round(0.11 / dt)):].all()


def test_zero_g_ends_a_whole_trajectory_with_its_reason():
    L = started()
    q0 = L.arm_q
    v0 = np.zeros(7)
    tid = L.trajectories.execute([0.0, 3.0], [q0, q0 + 0.4], [v0, v0], [v0, v0])
    L.run(0.5)
    L.event(MSG_CUFF, 1)
    res = L.trajectories.wait(tid, 1.0, step=L.step)
    assert res is not None and res.status == T.ABORTED and res.reason == T.R_ZERO_G
