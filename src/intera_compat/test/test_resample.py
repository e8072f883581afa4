"""Spatial resampling for waypoint controllers (the Cobot): the seed's example, every joint considered, the ends
kept, bad input refused."""
import numpy as np
import pytest

from intera_compat.trajectory.resample import resample


def seed_example():
    """The Cobot trajectory controller's documented example (resampling_delta 0.5)."""
    j1 = np.arange(9) * 0.2
    j2 = np.minimum(np.arange(9) * 0.2, 1.0)
    return np.c_[j1, j2]


def test_the_seeds_example_keeps_its_points_and_the_first():
    q = seed_example()
    kept = resample(q, 0.5)
    assert kept.tolist() == [0, 2, 5, 8]  # the seed's 2, 5, 8 (walking back from the last), and the start
    np.testing.assert_allclose(q[kept[1:]], [[0.4, 0.4], [1.0, 1.0], [1.6, 1.0]])  # its resampled points


def test_every_joint_counts_the_first_and_the_last_too():
    """The seed's loop covers joints 1..n-2: motion of the first or the last joint alone was never kept."""
    for moving in (0, 3, 6):
        q = np.zeros((11, 7))
        q[:, moving] = np.linspace(0.0, 1.0, 11)
        assert resample(q, 0.25).tolist() == [0, 1, 4, 7, 10], moving  # (back from the end: 0.3 apart)
    q = np.zeros((11, 7))  # two joints, each below delta alone, the larger one decides (not their sum)
    q[:, 2] = np.linspace(0.0, 0.2, 11)
    q[:, 4] = np.linspace(0.0, -0.2, 11)
    assert resample(q, 0.25).tolist() == [0, 10]


def test_the_ends_are_kept_and_small_inputs_pass_through():
    q = np.zeros((5, 3))
    assert resample(q, 0.1).tolist() == [0, 4]  # nothing moves: start and end
    assert resample(q[:2], 0.1).tolist() == [0, 1]
    assert resample(q[:1], 0.1).tolist() == [0]
    assert resample(seed_example(), 0.0).tolist() == list(range(9))  # 0: off


@pytest.mark.parametrize("q, delta, message", [
    (np.zeros(5), 0.1, "points, joints"),
    (np.array([[0.0, np.nan]]), 0.1, "not all finite"),
    (np.zeros((3, 2)), float("nan"), "delta nan"),
])
def test_bad_input_is_refused(q, delta, message):
    with pytest.raises(ValueError, match=message):
        resample(q, delta)


def test_a_joint_turning_back_keeps_its_turning_point():
    """joint_trajectory_client.py on the Cobot: out to 0.4 and back to 0.1, resampled at 0.1 — the rule alone kept
    0.2 and 0.31, and the PLC turned 0.09 rad short of the path's end of travel."""
    legs = [0.0, 0.4, 0.1, 0.4, 0.1]
    t = np.linspace(0.0, 8.0, 161)
    q = np.zeros((len(t), 7))
    q[:, 3] = np.interp(t, np.arange(len(legs)) * 2.0, legs)
    kept = resample(q, 0.1)
    for turn in (40, 80, 120):  # (the legs' ends: 0.4, 0.1, 0.4)
        assert turn in kept
    # a joint that rests, then goes back the way it came: the point where it started back is kept too
    q = np.zeros((9, 2))
    q[:, 0] = [0.0, 0.1, 0.2, 0.2, 0.2, 0.15, 0.1, 0.05, 0.0]
    q[:, 1] = np.linspace(0.0, 0.8, 9)
    assert 4 in resample(q, 0.3)


def test_noise_is_no_turning_point():
    """A recording (100 Hz, 10 s, right_j0 0 → 1 rad) with 1e-5 rad of noise: the turning points kept every one of
    its 1001 points and the PLC crawled through them (48 s instead of 6); a real turn is still kept."""
    rng = np.random.default_rng(3)
    t = np.linspace(0.0, 10.0, 1001)
    q = np.zeros((len(t), 7))
    q[:, 0] = t / 10.0
    clean = resample(q, 0.1)
    q += rng.normal(0.0, 1e-5, q.shape)
    assert len(resample(q, 0.1)) == len(clean) == 11
    q[:, 0] = np.interp(t, [0.0, 5.0, 10.0], [0.0, 0.5, 0.45]) + rng.normal(0.0, 1e-5, len(t))
    assert 500 in resample(q, 0.1) or 499 in resample(q, 0.1) or 501 in resample(q, 0.1)  # (back 0.05 rad: a turn)
