"""The TRAJECTORY stream's extrapolation (``StreamSource``) as compiled kernels (numba): a cycle's sample was ~20
numpy calls on 7-element arrays (~12 µs of interpreter overhead), one kernel call now, written straight into the
setpoint. Every operation is the numpy code's, in its order (no fastmath: the same numbers);
``test_stream_kernel.py`` holds them to it. ``warm()`` compiles them (or loads numba's cache) when the source is built,
never inside a cycle.
"""
from __future__ import annotations

import numba
import numpy as np

REST_SPEED = 1e-6  # rad/s: a streamed velocity this small is a joint at rest (its sign is rounding)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _extrapolate_joint(tau, p, v, a, d):  # pragma: no cover (compiled)
    """One joint's (q, v, a) ``tau`` s on from (p, v, a); ``d`` its direction of motion (stream.py's doc)."""
    s = 1.0 if a > 0.0 else (-1.0 if a < 0.0 else (0.0 if a == 0.0 else np.nan))  # np.sign
    braking = s * d < 0.0
    te = 0.0 if 0.0 > tau else tau  # (max(tau, 0.0))
    if braking:
        stop = abs(v / a)
        if stop < te or stop != stop:  # (np.minimum: a NaN wins)
            te = stop
    vo = a * te
    q = vo * 0.5
    q = q + v
    q = q * te
    q = q + p
    vo = vo + v
    ao = a
    if te < tau:  # at rest where the braking ran out
        vo = 0.0
        ao = 0.0
    return q, vo, ao


@numba.njit(cache=True, error_model="numpy")
def extrapolate(tau, p, v, a, d, q, vo, ao):  # pragma: no cover (compiled)
    """``StreamSource._extrapolate``: the stored point (p, v, a) ``tau`` s on into (q, vo, ao)."""
    for j in range(p.shape[0]):
        q[j], vo[j], ao[j] = _extrapolate_joint(tau, p[j], v[j], a[j], d[j])


@numba.njit(cache=True, error_model="numpy")
def sample(tau, p, v, a, d, q, vo, ao, block, torque_only, fixed, start):  # pragma: no cover (compiled)
    """``extrapolate`` and ``Setpoint.track`` of the result on joints ``start``… (``block``: the setpoint's q, v, a,
    tau rows)."""
    for j in range(p.shape[0]):
        qj, vj, aj = _extrapolate_joint(tau, p[j], v[j], a[j], d[j])
        q[j], vo[j], ao[j] = qj, vj, aj
        k = start + j
        block[0, k] = qj
        block[1, k] = vj
        block[2, k] = aj
        block[3, k] = 0.0
        torque_only[k] = False
        fixed[k] = False


@numba.njit(cache=True, error_model="numpy", inline="always")
def _direction(v, d):  # pragma: no cover (compiled)
    """A joint's direction of motion: its velocity's sign, kept while it is at rest (|v| ≤ REST_SPEED)."""
    if abs(v) > REST_SPEED:
        return 1.0 if v > 0.0 else -1.0
    return d


@numba.njit(cache=True, error_model="numpy")
def keep_direction(v, d):  # pragma: no cover (compiled)
    for j in range(v.shape[0]):
        d[j] = _direction(v[j], d[j])


@numba.njit(cache=True, error_model="numpy")
def advance(tau, p, v, a, d, q, vo, ao):  # pragma: no cover (compiled)
    """``StreamSource._advance``: the stored point moved ``tau`` s along its extrapolation (also left in q, vo, ao), its
    direction of motion carried on."""
    for j in range(p.shape[0]):
        qj, vj, aj = _extrapolate_joint(tau, p[j], v[j], a[j], d[j])
        q[j], vo[j], ao[j] = qj, vj, aj
        p[j], v[j], a[j] = qj, vj, aj
        d[j] = _direction(vj, d[j])


def warm() -> None:
    """Compile (or load from the cache) every kernel for the source's argument types, outside any cycle."""
    n = 2
    z = [np.zeros(n) for _ in range(7)]  # p, v, a, dir, q, v, a
    b = np.zeros(n, dtype=np.bool_)
    extrapolate(0.0, *z)
    sample(0.0, *z, np.zeros((4, n)), b, b.copy(), 0)
    keep_direction(z[0], z[1])
    advance(0.0, *z)
