"""The safety chain's compiled kernels (``safety/kernels.py``) against the numpy formulas they replace, on random
inputs; and no kernel compiles inside the loop's cycles (``warm`` made every signature the plugins use)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from intera_compat.safety import kernels

N = 8
SEEDS = st.integers(0, 2**32 - 1)


def _close(a, b, scale=1.0):
    """Equal to the rounding of a mat-vec of values of ``scale`` (products ~ scale², summed in BLAS's own order)."""
    assert np.allclose(a, b, rtol=1e-12, atol=1e-12 * max(1.0, scale * scale)), (a, b)


@settings(max_examples=500, deadline=None)
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
        _close(a, b, s)
    # (the ratios to the mat-vec's rounding: BLAS sums in its own order)
    assert int(out[0]) == int(np.argmax(x)) and np.isclose(out[1], x[int(out[0])], rtol=1e-9, atol=0)
    assert int(out[2]) == int(np.argmax(y)) and np.isclose(out[3], y[int(out[2])], rtol=1e-9, atol=0)


def test_argmax_is_numpys_with_nans():
    rng = np.random.default_rng(0)
    for _ in range(500):
        x = rng.normal(size=N)
        x[rng.random(N) < 0.2] = np.nan
        x[rng.random(N) < 0.1] = np.inf
        assert kernels._argmax(x) == int(np.argmax(x))


def test_no_kernel_compiles_in_the_cycles():
    """Every kernel of the cycle (loop/warm.py's modules) has its signatures before the first cycle: none is added
    by POSITION, TRAJECTORY and TORQUE streams (a compile inside a cycle would stall the arm for seconds)."""
    from intera_compat.control import id_kernel
    from intera_compat.data.codes import POSITION_MODE, TORQUE_MODE, TRAJECTORY_MODE
    from intera_compat.hardware import sim_kernel
    from intera_compat.loop.offline import OfflineLoop
    from intera_compat.sources import stream_kernel
    L = OfflineLoop()
    L.step()
    jitted = [f for m in (kernels, id_kernel, stream_kernel, sim_kernel) for f in vars(m).values()
              if hasattr(f, "signatures")]
    assert len(jitted) >= 10
    before = {f: len(f.signatures) for f in jitted}
    assert sum(before.values()) >= 10  # (compiled already by the stages' construction; helpers called only from
    # other kernels are compiled inside their callers and list no signature of their own)
    names, target, v = L.cfg.joint_names, L.arm_q + 0.3, np.array([0.0, 0.0, 0.0, -0.2, 0.0, 0.0, 0.0])
    for k in range(300):
        if k % 10 == 0:
            L.send(POSITION_MODE, names, position=target)
        L.step()
    here, t0 = L.arm_q, L.cycle.now
    for k in range(200):
        if k % 10 == 0:
            L.send(TRAJECTORY_MODE, names, position=here + v * (L.cycle.now - t0), velocity=v,
                   acceleration=np.zeros(7))
        L.step()
    for k in range(100):
        if k % 10 == 0:
            L.send(TORQUE_MODE, names, effort=np.zeros(7))
        L.step()
    assert L.cycle.counts["commands"] >= 60 and L.cycle.counts["faults"] == 0
    assert {f: len(f.signatures) for f in jitted} == before


def test_a_zero_denominator_gives_numpy_infinities_not_an_exception():
    """(error_model="numpy": a step limit of 0 — a joint configured with no velocity — slows the step to nothing as
    the numpy code did, instead of raising ZeroDivisionError out of the cycle)"""
    n = 3
    f = kernels.step_fraction(np.zeros(n), np.array([0.1, 0.05, 0.0]), np.zeros(n), np.zeros(n, dtype=bool),
                              np.array([0.0, 1.0, 1.0]), np.zeros(n))
    with np.errstate(divide="ignore"):
        assert f == max(np.abs([0.1, 0.05, 0.0]) / np.array([0.0, 1.0, 1.0])) == np.inf


def _with_bad(rng, x):
    """Some entries NaN or ±inf, sometimes."""
    if rng.random() < 0.5:
        m = rng.random(x.shape) < 0.1
        x[m] = rng.choice([np.nan, np.inf, -np.inf], size=int(m.sum()))
    return x


def _first_bad(x):
    bad = np.flatnonzero(~np.isfinite(x))
    return int(bad[0] % x.shape[-1]) if len(bad) else -1


@settings(max_examples=300, deadline=None)
@given(SEEDS)
def test_finite_kernels_are_the_numpy_checks(seed):
    rng = np.random.default_rng(seed)
    b = _with_bad(rng, rng.normal(0, 50, (3, N)))
    w = _with_bad(rng, rng.normal(0, 50, 6))
    last = rng.normal(size=N)
    want_last = b[0].copy() if _first_bad(b) < 0 else last.copy()
    j = kernels.finite_state(b, w, last)
    want = _first_bad(b)
    assert j == (want if want >= 0 else (-1 if _first_bad(w) < 0 else -2))
    assert np.array_equal(last, want_last)
    sp = _with_bad(rng, rng.normal(0, 50, (4, N)))
    last = rng.normal(size=N)
    want_last = sp[0].copy() if _first_bad(sp) < 0 else last.copy()
    assert kernels.finite_setpoint(sp, last) == _first_bad(sp)
    assert np.array_equal(last, want_last)
    cmd = _with_bad(rng, rng.normal(0, 50, (3, N)))
    last, lim = rng.normal(0, 30, (3, N)), np.abs(rng.normal(0, 60, N)) + 1.0
    np.clip(last[0], -lim, lim, out=last[0])
    want_cmd, want_j = cmd.copy(), _first_bad(cmd)
    if want_j >= 0:
        want_cmd[:] = last
    over = bool(np.count_nonzero(np.abs(want_cmd[0]) > lim))
    if over:
        np.clip(want_cmd[0], -lim, lim, out=want_cmd[0])
    j, o = kernels.finite_output(cmd, last, lim)
    assert (j, o) == (want_j, over)
    assert np.array_equal(cmd, want_cmd) and np.array_equal(last, want_cmd)


@settings(max_examples=300, deadline=None)
@given(SEEDS)
def test_limit_kernels_are_the_numpy_check_and_clamp(seed):
    rng = np.random.default_rng(seed)
    s = rng.choice([1e-4, 1e-2, 1.0])
    sp = _with_bad(rng, rng.normal(0, s, (4, N))) if rng.random() < 0.2 else rng.normal(0, s, (4, N))
    pp = rng.normal(0, s, (2, N))
    L = np.abs(rng.normal(0, s, (11, N)))
    L[3:5] *= -1.0
    L[5:8] *= -1.0
    B = np.zeros((6, N), dtype=bool)
    B[5] = rng.random(N) < 0.1
    X, dt = np.zeros((8, N)), 1e-3
    x5 = np.stack([sp[0] - pp[0], sp[0] - pp[0] - pp[1], sp[1] * dt - pp[1], pp[0] - L[8], L[5] - pp[0]])
    x5[:3] = np.abs(x5[:3])
    b5 = x5 > L[:5]
    flagged = bool(np.count_nonzero(b5) or np.count_nonzero(B[5]))
    assert kernels.limits_check(X, L, B, sp, pp, dt) == flagged
    assert np.array_equal(X[:5], x5, equal_nan=True) and np.array_equal(B[:5], b5)
    x3 = np.minimum(np.maximum(sp[:3], L[5:8]), L[8:11])
    changed = bool(np.count_nonzero(x3 != sp[:3]))
    want = sp.copy()
    if changed:
        want[:3] = x3
    assert kernels.limits_clamp(X, L, sp) == changed
    assert np.array_equal(sp, want, equal_nan=True)
    q = rng.normal(size=N)
    want = np.stack([q, q - pp[0]])
    kernels.limits_commit(pp, q, True)
    assert np.array_equal(pp, want)


@settings(max_examples=200, deadline=None)
@given(SEEDS)
def test_following_kernel_is_the_numpy_error(seed):
    rng = np.random.default_rng(seed)
    q, pos = rng.normal(size=N), rng.normal(size=N)
    free = rng.random(N) < 0.3
    e = np.where(free, 0.0, q - pos)
    E = np.zeros((2, N))
    assert kernels.following(E, q, pos, free) == np.abs(e).max()
    assert np.array_equal(E[0], e) and np.array_equal(E[1], np.abs(e))


def test_the_safety_chain_begins_with_finite_guard():
    """(every plugin after it reads only finite values — a kernel's max over a NaN would lose the avoidance's
    slowdown; a config that orders it later is refused, as one that leaves it out)"""
    import copy

    from intera_compat.config import load_config
    from intera_compat.model.robot_model import RobotModel
    from intera_compat.safety.base import SafetyContext
    from intera_compat.safety.chain_config import build_safety_chain
    cfg = load_config()
    rm = RobotModel(cfg)
    assert build_safety_chain(cfg, 0.001, rm, SafetyContext(), True, True).plugins[0].name == "finite_guard"
    for names in (["joint_limits", "finite_guard"], ["joint_limits"], []):
        bad = copy.deepcopy(cfg)
        bad.control["safety_chain"] = names
        with pytest.raises(ValueError, match="must begin with finite_guard"):
            build_safety_chain(bad, 0.001, rm, SafetyContext(), True, True)
