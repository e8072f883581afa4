"""The inverse-dynamics law's per-cycle arithmetic as two compiled kernels (numba), around the one RNEA call.

``InverseDynamicsLaw.compute`` was ~35 numpy calls on 8-element arrays a cycle (~20 µs of interpreter overhead for
nothing of arithmetic); ``before_rnea`` does the integral, the PID acceleration and the friction feed-forward and
writes RNEA's inputs in pinocchio's joint order, ``after_rnea`` takes the torques back to config order with the
feed-forward added and tells whether a joint passed its limit. Every operation is the numpy code's, in its order (no
fastmath: the same numbers); ``test_id_kernel.py`` holds them to it. Both are compiled (or loaded from numba's
cache) by ``warm()`` when the law is built, never inside a cycle.
"""
from __future__ import annotations

import numba
import numpy as np

STEADY_SPEED = 0.02  # rad/s (inverse_dynamics.STEADY_SPEED: the module's doc)

# rows of the law's gain matrix
KP, KD, KI_DT, ILIM, NILIM, BAND, VISCOUS, COULOMB = range(8)
ROWS = 8


@numba.njit(cache=True, error_model="numpy")
def before_rnea(spq, spv, spa, free, q, v, gains, integral, at_limit, a, x, qp, vp, ap, perm, freeze, friction,
                inv_vf):  # pragma: no cover (compiled)
    """The integral update, ``a`` (the commanded acceleration), ``x`` (the friction feed-forward) and RNEA's inputs
    (``qp``, ``vp``, ``ap``: q, v, a in pinocchio order, ``perm``). Returns whether any joint is torque-driven."""
    n = q.shape[0]
    any_free = False
    for j in range(n):
        if free[j]:
            any_free = True
    driven_moving = False
    if not freeze and any_free:
        for j in range(n):
            if free[j] and abs(v[j]) > STEADY_SPEED:
                driven_moving = True
    if not (freeze or driven_moving):
        for j in range(n):
            e = spq[j] - q[j]
            learn = abs(e) <= gains[BAND, j]
            if abs(spv[j] - v[j]) <= STEADY_SPEED:
                learn = True
            learn = learn and not at_limit[j]
            e = e * gains[KI_DT, j]
            e = e * (1.0 if learn else 0.0)
            s = integral[j] + e
            lim = gains[ILIM, j]
            if s > lim:  # (np.minimum / np.maximum: a NaN stays)
                s = lim
            lim = gains[NILIM, j]
            if s < lim:
                s = lim
            integral[j] = s
    for j in range(n):
        aj = gains[KP, j] * (spq[j] - q[j])
        aj = aj + (spv[j] - v[j]) * gains[KD, j]
        aj = aj + spa[j]
        aj = aj + integral[j]
        if free[j]:
            aj = 0.0
            integral[j] = 0.0
        a[j] = aj
        xj = 0.0
        if friction:
            f = spv[j] * inv_vf
            if f > 1.0:
                f = 1.0
            if f < -1.0:
                f = -1.0
            f = f * gains[COULOMB, j]
            f = f + spv[j] * gains[VISCOUS, j]
            xj = xj + f
        x[j] = xj
        k = perm[j]
        qp[k] = q[j]
        vp[k] = v[j]
        ap[k] = aj
    return any_free


@numba.njit(cache=True, error_model="numpy")
def after_rnea(taup, perm, x, lim, tau, at_limit):  # pragma: no cover (compiled)
    """``tau`` = RNEA's torques (``taup``, pinocchio order) in config order + ``x``; True when a joint's torque passes
    its limit ``lim`` (the caller works the torques out within them), else ``at_limit`` cleared."""
    n = tau.shape[0]
    over = False
    for j in range(n):
        t = taup[perm[j]] + x[j]
        tau[j] = t
        if abs(t) > lim[j]:
            over = True
    if not over:
        for j in range(n):
            at_limit[j] = False
    return over


def warm() -> None:
    """Compile (or load from the cache) both kernels for the law's argument types, outside any cycle."""
    n = 2
    z, b = np.zeros(n), np.zeros(n, dtype=np.bool_)
    perm = np.arange(n)
    before_rnea(z, z, z, b, z, z, np.zeros((ROWS, n)), z.copy(), b, z.copy(), z.copy(), z.copy(), z.copy(), z.copy(),
                perm, False, True, 1.0)
    after_rnea(z, perm, z, np.full(n, np.inf), z.copy(), b.copy())
