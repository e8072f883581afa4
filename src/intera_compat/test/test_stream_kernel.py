"""The TRAJECTORY stream's compiled kernels (sources/stream_kernel.py) against the numpy code they replaced (kept
here): the same extrapolation, direction of motion and tracked setpoint on random points — braking joints, joints at
rest, tiny and huge values, negative and non-finite times."""
import numpy as np
from hypothesis import given, settings, strategies as st

from intera_compat.data.setpoint import Setpoint
from intera_compat.sources import stream_kernel
from intera_compat.sources.stream import REST_SPEED, StreamSource


def reference_extrapolate(tau, p, v0, a0, d, q, v, a):
    """StreamSource._extrapolate at c3c4781 (numpy)."""
    n = len(p)
    te, stop, braking = np.zeros(n), np.zeros(n), np.zeros(n, dtype=bool)
    np.sign(a0, out=stop)
    stop *= d
    np.less(stop, 0.0, out=braking)
    te.fill(max(tau, 0.0))
    np.divide(v0, a0, out=stop, where=braking)
    np.abs(stop, out=stop, where=braking)
    np.minimum(te, stop, out=te, where=braking)
    np.multiply(a0, te, out=v)
    np.multiply(v, 0.5, out=q)
    q += v0
    q *= te
    q += p
    v += v0
    a[:] = a0
    np.less(te, tau, out=braking)
    np.copyto(v, 0.0, where=braking)
    np.copyto(a, 0.0, where=braking)


def reference_keep_direction(v, d):
    moving = np.abs(v) > REST_SPEED
    np.copyto(d, np.sign(v), where=moving)


def _values(rng, n):
    kind = rng.integers(0, 6, n)
    x = rng.normal(0.0, 1.0, n)
    x[kind == 0] = 0.0
    x[kind == 1] *= 1e-7  # (around REST_SPEED)
    x[kind == 2] *= 1e200
    x[kind == 3] = rng.choice([np.nan, np.inf, -np.inf, -0.0], int((kind == 3).sum()))
    return x


def _same(x, y):
    np.testing.assert_array_equal(x, y)  # (NaNs in the same places)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), tau=st.one_of(st.floats(-1.0, 10.0), st.sampled_from([0.0, np.nan, np.inf])))
def test_the_kernels_give_the_numpy_codes_numbers(seed, tau):
    rng = np.random.default_rng(seed)
    n = 7
    p, v0, a0 = _values(rng, n), _values(rng, n), _values(rng, n)
    d = rng.choice([-1.0, 0.0, 1.0], n)
    out, ref = [np.zeros(n) for _ in range(3)], [np.zeros(n) for _ in range(3)]
    with np.errstate(all="ignore"):
        reference_extrapolate(tau, p, v0, a0, d, *ref)
        stream_kernel.extrapolate(tau, p, v0, a0, d, *out)
    for x, y in zip(out, ref):
        _same(x, y)
    # sample: the same numbers, tracked on joints 1..7 of an 8-joint setpoint (the others untouched)
    sp = Setpoint.zeros(n + 1)
    sp.block[:] = 5.0
    sp.torque_only[:] = sp.fixed[:] = True
    with np.errstate(all="ignore"):
        stream_kernel.sample(tau, p, v0, a0, d, *out, sp.block, sp.torque_only, sp.fixed, 1)
    for row, y in zip(sp.block[:3, 1:], ref):
        _same(row, y)
    assert np.all(sp.tau[1:] == 0.0) and not sp.torque_only[1:].any() and not sp.fixed[1:].any()
    assert np.all(sp.block[:, 0] == 5.0) and sp.torque_only[0] and sp.fixed[0]
    # keep_direction and advance
    dk, dr = d.copy(), d.copy()
    stream_kernel.keep_direction(v0, dk)
    reference_keep_direction(v0, dr)
    _same(dk, dr)
    pa, va, aa, da = p.copy(), v0.copy(), a0.copy(), d.copy()
    with np.errstate(all="ignore"):
        stream_kernel.advance(tau, pa, va, aa, da, *out)
    for x, y in zip((pa, va, aa), ref):
        _same(x, y)
    reference_keep_direction(ref[1], dr := d.copy())
    _same(da, dr)


def test_a_braking_joint_stops_where_its_velocity_reaches_zero_through_the_source():
    s = StreamSource(slice(0, 2))
    sp = Setpoint.zeros(3)
    s.accept(np.ones(3, bool), np.array([0.0, 1.0, 0]), np.array([1.0, 0.5, 0]), np.array([-2.0, 0.0, 0]), 0.0)
    s.update(1.0, None, sp)
    assert sp.q[0] == 0.25 and sp.v[0] == 0.0 and sp.a[0] == 0.0  # (stopped at t = 0.5)
    assert sp.q[1] == 1.5 and sp.v[1] == 0.5
