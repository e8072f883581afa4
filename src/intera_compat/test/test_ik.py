"""Pure IK: round trips, seeds, nullspace bias, limits, collision flag."""
import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.kinematics import IKSolver
from intera_compat.model import RobotModel


@pytest.fixture(scope="module")
def rm():
    return RobotModel(load_config())


@pytest.fixture
def ik(rm):
    return IKSolver(rm, seed=3)


def neutral(rm):
    return np.r_[rm.cfg.named_pose("right", "neutral"), 0.0]


def test_random_poses_round_trip(rm, ik):
    rng = np.random.default_rng(7)
    ok = 0
    for _ in range(60):
        q = rng.uniform(rm.cfg.limits.lower, rm.cfg.limits.upper)
        q[7] = 0.0
        goal = rm.fk(q, "right_hand")
        r = ik.solve("right_hand", goal, [neutral(rm)[:7]], neutral(rm), check_collision=False)
        if r.success:
            ok += 1
            T = rm.fk(r.q, "right_hand")
            assert np.linalg.norm(T.translation - goal.translation) < 1e-4
            assert np.all(r.q >= rm.cfg.limits.lower - 1e-12) and np.all(r.q <= rm.cfg.limits.upper + 1e-12)
    assert ok >= 59


def test_seed_near_answer_returns_nearby_solution(rm, ik):
    q = neutral(rm) + np.r_[0.1, -0.1, 0.1, 0.1, -0.1, 0.1, 0.1, 0]
    goal = rm.fk(q, "right_hand")
    r = ik.solve("right_hand", goal, [q[:7] + 0.02], q, random_restarts=0)
    assert r.success and r.seed_index == 0
    assert np.abs(r.q - q).max() < 0.05


def test_unreachable_pose_fails(rm, ik):
    goal = rm.fk(neutral(rm), "right_hand")
    goal.translation = np.array([3.0, 0.0, 0.5])
    r = ik.solve("right_hand", goal, [neutral(rm)[:7]], neutral(rm), random_restarts=2)
    assert not r.success


def test_nullspace_goal_moves_chosen_joints_not_the_tip(rm, ik):
    q0 = neutral(rm)
    goal = rm.fk(q0, "right_hand")
    plain = ik.solve("right_hand", goal, [q0[:7]], q0, random_restarts=0)
    ns = {2: 0.6}
    biased = ik.solve("right_hand", goal, [q0[:7]], q0, nullspace=ns, ns_gain=0.4, random_restarts=0)
    assert biased.success
    assert abs(biased.q[2] - 0.6) < abs(plain.q[2] - 0.6) - 0.1
    T = rm.fk(biased.q, "right_hand")
    assert np.linalg.norm(T.translation - goal.translation) < 1e-4
    assert np.linalg.norm(T.rotation - goal.rotation) < 1e-3


def test_colliding_solution_is_flagged(rm, ik):
    q = np.array([0.0, 2.0, 0.0, 2.5, 0.0, 0.0, 0.0, 0.0])  # into the pedestal
    goal = rm.fk(q, "right_hand")
    r = ik.solve("right_hand", goal, [q[:7]], q, random_restarts=0)
    assert r.success and r.in_collision


def test_unknown_tip_raises_key_error(rm, ik):
    with pytest.raises(KeyError):
        ik.solve("no_such_tip", rm.fk(neutral(rm), "right_hand"), [], neutral(rm))


def test_other_tips(rm, ik):
    q = neutral(rm) + np.r_[0.2, 0.1, 0, -0.2, 0, 0.1, 0, 0]
    for tip in ("right_l6", "right_hand_camera"):
        goal = rm.fk(q, tip)
        r = ik.solve(tip, goal, [neutral(rm)[:7]], neutral(rm))
        assert r.success and np.linalg.norm(rm.fk(r.q, tip).translation - goal.translation) < 1e-4


def test_non_arm_joints_stay_at_reference(rm, ik):
    ref = neutral(rm)
    ref[7] = 0.5  # head pan
    q = ref + np.r_[0.3, -0.2, 0.1, 0.2, 0.0, -0.1, 0.2, 0]
    r = ik.solve("right_hand", rm.fk(q, "right_hand"), [ref[:7]], ref)
    assert r.success and r.q[7] == 0.5


def test_seed_map_is_deterministic_in_limits_and_collision_free(rm):
    a, b, c = IKSolver(rm, seed=5, map_size=64), IKSolver(rm, seed=5, map_size=64), IKSolver(rm, seed=6, map_size=64)
    assert a.seed_map.shape == (64, 7)
    assert np.array_equal(a.seed_map, b.seed_map) and not np.array_equal(a.seed_map, c.seed_map)
    assert np.all(a.seed_map >= a.lower) and np.all(a.seed_map <= a.upper)
    assert not any(rm.in_collision(np.r_[arm, 0.0]) for arm in a.seed_map)


def hard_goals(rm, ik, n):
    """Goals the neutral seed alone does not reach (so a solve needs restarts)."""
    rng = np.random.default_rng(11)
    out = []
    while len(out) < n:
        q = np.r_[rng.uniform(rm.cfg.limits.lower[:7], rm.cfg.limits.upper[:7]), 0.0]
        goal = rm.fk(q, "right_hand")
        if not ik.solve("right_hand", goal, [neutral(rm)[:7]], neutral(rm), random_restarts=0).success:
            out.append(goal)
    return out


def test_restarts_come_from_the_seed_map(rm, ik):
    goals = hard_goals(rm, ik, 5)
    for goal in goals:
        r = ik.solve("right_hand", goal, [neutral(rm)[:7]], neutral(rm), check_collision=False)
        assert r.success and r.seed_index == -1
        assert np.linalg.norm(rm.fk(r.q, "right_hand").translation - goal.translation) < 1e-4
    r = ik.solve("right_hand", goals[0], [], neutral(rm), check_collision=False)  # no seeds: the map alone
    assert r.success and r.seed_index == -1


def test_solve_is_repeatable_and_ignores_earlier_calls(rm):
    ik = IKSolver(rm, seed=3)
    goals = hard_goals(rm, ik, 4)
    first = [ik.solve("right_hand", g, [neutral(rm)[:7]], neutral(rm)) for g in goals]
    fresh = IKSolver(rm, seed=3)
    again = [fresh.solve("right_hand", g, [neutral(rm)[:7]], neutral(rm)) for g in reversed(goals)][::-1]
    for a, b in zip(first, again):
        assert a.success == b.success and np.array_equal(a.q, b.q)


def test_joint_with_more_than_a_turn_wraps_instead_of_sticking_at_its_limit(rm, ik):
    q = neutral(rm)
    q[6] = -1.5  # the same hand pose as 4.78, beyond j6's upper limit 4.71
    seed = neutral(rm)[:7]
    seed[6] = 4.6  # the goal is +0.18 rad away, through the limit
    r = ik.solve("right_hand", rm.fk(q, "right_hand"), [seed], q, random_restarts=0)
    assert r.success and r.seed_index == 0
    assert abs(r.q[6] - q[6]) < 0.1
