"""The MuJoCo backend's compiled read and clip (hardware/sim_kernel.py) against the numpy code they replaced (kept
here): the same positions, velocities, measured torques and clipped commands on random arrays and permutations."""
import numpy as np
from hypothesis import given, settings, strategies as st

from intera_compat.hardware import sim_kernel


def reference_read(qpos, qvel, act, pas, con, qadr, dadr, position, velocity, effort):
    """SimBackend.read at c3c4781 (numpy)."""
    tmp = np.zeros(len(position))
    qpos.take(qadr, out=position)
    qvel.take(dadr, out=velocity)
    act.take(dadr, out=effort)
    pas.take(dadr, out=tmp)
    effort += tmp
    con.take(dadr, out=tmp)
    effort += tmp


def _values(rng, n):
    x = rng.normal(0.0, 10.0, n) * 10.0 ** rng.integers(-8, 8, n)
    x[rng.random(n) < 0.1] = np.nan
    x[rng.random(n) < 0.05] = np.inf
    return x


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 10), extra=st.integers(0, 4))
def test_the_kernels_give_the_numpy_codes_numbers(seed, n, extra):
    rng = np.random.default_rng(seed)
    m = n + extra
    arrays = [_values(rng, m) for _ in range(5)]
    qadr, dadr = rng.permutation(m)[:n].astype(np.int64), rng.permutation(m)[:n].astype(np.int64)
    out, ref = [np.zeros(n) for _ in range(3)], [np.zeros(n) for _ in range(3)]
    with np.errstate(all="ignore"):
        sim_kernel.read(*arrays, qadr, dadr, *out)
        reference_read(*arrays, qadr, dadr, *ref)
    for x, y in zip(out, ref):
        np.testing.assert_array_equal(x, y)
    x, lo = _values(rng, n), -np.abs(rng.normal(0.0, 50.0, n))
    hi = -lo
    ctrl, want = np.zeros(n), np.zeros(n)
    sim_kernel.clip(x, lo, hi, ctrl)
    np.maximum(x, lo, out=want)
    np.minimum(want, hi, out=want)
    np.testing.assert_array_equal(ctrl, want)
