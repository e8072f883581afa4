"""The motion planner's path self-collision check (batched, coal broad phase) against a per-configuration check."""
import numpy as np
import pytest

from intera_compat.config import load_config
from intera_compat.motion import errors as E
from intera_compat.motion.errors import MotionError
from intera_compat.motion.joint_planner import JointPlan
from intera_compat.motion.planner import COLLISION_STEP, MotionPlanner


@pytest.fixture(scope="module")
def planner():
    return MotionPlanner(load_config(None))


def plan_through(points):
    q = np.asarray(points, float)
    t = np.arange(len(q), dtype=float)
    return JointPlan(t, q, np.zeros_like(q), np.zeros_like(q), t.copy(), False)


def first_hit_one_by_one(rm, q_now, q):
    """Reference: each segment sampled three times finer than the planner's step, one in_collision call
    each; returns the index of the knot the first colliding sample heads to (0: the start)."""
    full = q_now.copy()
    for k in range(len(q)):
        steps = 1 if k == 0 else max(1, int(np.ceil(3 * np.abs(q[k] - q[k - 1]).max() / COLLISION_STEP)))
        for s in range(1, steps + 1):
            full[:7] = q[k] if k == 0 else q[k - 1] + (q[k] - q[k - 1]) * (s / steps)
            if rm.in_collision(full):
                return k
    return -1


def test_batched_check_finds_the_same_first_collision_as_a_finer_one_by_one_check(planner):
    cfg = load_config(None)
    lo, hi = cfg.limits.lower[:7], cfg.limits.upper[:7]
    rng = np.random.default_rng(7)
    q_now = np.zeros(len(cfg.limits.lower))
    outcomes = set()
    for _ in range(40):
        q = rng.uniform(lo, hi, size=(3, 7))
        expected = first_hit_one_by_one(planner.rm, q_now, q)
        plan = plan_through(q)
        if expected < 0:
            planner.check_collisions(plan, q_now)
        else:
            with pytest.raises(MotionError) as e:
                planner.check_collisions(plan, q_now)
            assert e.value.error_id == E.PLANNED_MOTION_COLLISION and f"about {expected:.2f} s" in e.value.detail
        outcomes.add(expected)
    assert -1 in outcomes and outcomes - {-1}  # both kinds were drawn


def test_a_collision_between_free_knots_is_found(planner):
    """Two collision-free configurations whose straight joint-space line passes through a collision."""
    cfg = load_config(None)
    lo, hi = cfg.limits.lower[:7], cfg.limits.upper[:7]
    rm, q_now = planner.rm, np.zeros(len(cfg.limits.lower))
    rng = np.random.default_rng(3)
    full = q_now.copy()

    def free(q):
        full[:7] = q
        return not rm.in_collision(full)

    for _ in range(2000):
        a, b = rng.uniform(lo, hi, size=(2, 7))
        if free(a) and free(b) and not free(0.5 * (a + b)):
            break
    else:
        pytest.fail("no such pair drawn")
    with pytest.raises(MotionError, match="collides"):
        planner.check_collisions(plan_through([a, b]), q_now)
    planner.check_collisions(plan_through([a]), q_now)  # a single knot: just that configuration
