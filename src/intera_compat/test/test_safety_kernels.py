"""The safety chain's compiled kernels (``safety/kernels.py``) against the numpy formulas they replace, on random
inputs; and no kernel compiles inside the loop's cycles (``warm`` made every signature the plugins use)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from intera_compat.safety import kernels

N = 8
SEEDS = st.integers(0, 2**32 - 1)


def _close(a, b):
    assert np.allclose(a, b, rtol=1e-12, atol=1e-12), (a, b)


@settings(max_examples=200, deadline=None)
@given(SEEDS, st.booleans())
def test_observe_is_the_numpy_observer(seed, big):
    rng = np.random.default_rng(seed)
    s = 1e3 if big else 1.0
    v, tau, g, h = (rng.normal(0, s, N) for _ in range(4))
    C = rng.normal(0, s, (N, N))
    perm = rng.permutation(N).astype(np.intp)
    S = rng.normal(0, s, (6, N))
    T = np.abs(rng.normal(0, 10, (3, N))) + 0.1
    T[0, -1] = T[1, -1] = np.inf
    dt, K, lp = 1e-3, 100.0, 0.02
    # the numpy formula (collision_detection's before the kernel)
    integral, r, slow = S[0].copy(), S[1].copy(), S[3].copy()
    beta = np.dot(v, C) + tau - g + r
    integral += beta * dt
    r = (h - g - integral) * K
    res = r.take(perm)
    fast = res - slow
    slow += fast * lp
    x = np.abs(res) / (T[0] + T[2])
    y = np.abs(fast) / (T[1] + T[2])
    out = np.zeros(4)
    kernels.observe(S, v, tau, g, h, C, T, perm, np.array([dt, K, lp]), out)
    for a, b in ((S[0], integral), (S[1], r), (S[2], res), (S[3], slow), (S[4], fast)):
        _close(a, b)
    # (the ratios to the mat-vec's rounding: BLAS sums in its own order)
    assert int(out[0]) == int(np.argmax(x)) and np.isclose(out[1], x[int(out[0])], rtol=1e-12, atol=0)
    assert int(out[2]) == int(np.argmax(y)) and np.isclose(out[3], y[int(out[2])], rtol=1e-12, atol=0)


def test_argmax_is_numpys_with_nans():
    rng = np.random.default_rng(0)
    for _ in range(500):
        x = rng.normal(size=N)
        x[rng.random(N) < 0.2] = np.nan
        x[rng.random(N) < 0.1] = np.inf
        assert kernels._argmax(x) == int(np.argmax(x))


def test_no_kernel_compiles_in_the_cycles():
    from intera_compat.data.codes import POSITION_MODE
    from intera_compat.loop.offline import OfflineLoop
    L = OfflineLoop()
    L.step()
    jitted = [f for f in vars(kernels).values() if hasattr(f, "signatures")]
    before = {f: len(f.signatures) for f in jitted}
    target = L.arm_q + 0.3
    for k in range(300):
        if k % 10 == 0:
            L.send(POSITION_MODE, L.cfg.joint_names, position=target)
        L.step()
    assert {f: len(f.signatures) for f in jitted} == before
