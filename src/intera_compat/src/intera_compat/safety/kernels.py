"""Compiled kernels of the safety chain's per-cycle arithmetic (issue 34).

On 7-8 element arrays a numpy call costs its interpreter overhead (~2-5 k instructions), not its arithmetic: a
plugin's check written as a dozen ufunc calls costs a dozen times that. Each kernel here does one plugin's
whole per-cycle arithmetic in one call (numba, ``cache=True``), with the plugins' numpy formulas written out
element by element in the same order (the results agree to the last bit but for BLAS's summation order in a
mat-vec). ``test_safety_kernels.py`` holds every kernel to its numpy formula on random inputs.

A kernel must never compile inside a cycle: ``warm()`` calls each once with arrays of the types the plugins pass
(float64 / bool / intp, C-contiguous) at plugin construction; the plugins keep those types (preallocated buffers,
rows of 2-D buffers: C-contiguous too)."""
from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, error_model="numpy")  # (never nogil: releasing the GIL mid-cycle lets other threads run)


@_jit
def _argmax(x):
    """numpy's argmax: the first largest, the first NaN if any."""
    k = 0
    best = x[0]
    if best != best:
        return 0
    for i in range(1, x.shape[0]):
        xi = x[i]
        if xi != xi:
            return i
        if xi > best:
            best, k = xi, i
    return k


# ---- collision detection: the momentum observer and its two ratios ---------------------------------------------
@_jit
def observe(S, v, tau, g, h, C, T, perm, par, out):
    """One step of the generalized-momentum observer and the detection's ratios.

    S rows (state, in place): 0 integral, 1 r_pin (pinocchio order), 2 residual, 3 slow, 4 fast (config order),
    5 scratch. ``v``, ``tau`` pinocchio order; ``g`` gravity, ``h`` = RNEA(q, 0, v) (= M v + g), ``C`` the Coriolis
    matrix; T rows: squish threshold, impact threshold, allow (config order); perm: config → pinocchio index;
    par: dt, K, lp. ``out``: squish joint, squish ratio, impact joint, impact ratio (ratio: |x| / (thr + allow)).

        β = (Cᵀ q̇ + τ − g + r)·dt; ∫ += β; r = K (M q̇ − ∫); fast = r − slow; slow += lp · fast
    """
    n = v.shape[0]
    dt, K, lp = par[0], par[1], par[2]
    integral, r = S[0], S[1]
    for j in range(n):
        ctv = 0.0
        for i in range(n):
            ctv += v[i] * C[i, j]
        b = ctv + tau[j]
        b -= g[j]
        b += r[j]
        b *= dt
        integral[j] += b
    for j in range(n):
        r[j] = ((h[j] - g[j]) - integral[j]) * K
    res, slow, fast, x = S[2], S[3], S[4], S[5]
    for i in range(n):
        ri = r[perm[i]]
        res[i] = ri
        f = ri - slow[i]
        fast[i] = f
        slow[i] += f * lp
    sq, im, allow = T[0], T[1], T[2]
    for i in range(n):
        x[i] = abs(res[i]) / (sq[i] + allow[i])
    k = _argmax(x)
    out[0], out[1] = k, x[k]
    for i in range(n):
        x[i] = abs(fast[i]) / (im[i] + allow[i])
    k = _argmax(x)
    out[2], out[3] = k, x[k]


# ---- finite_guard ------------------------------------------------------------------------------------------------
@_jit
def first_bad(x):
    """Column (joint) of the first non-finite entry of ``x`` (rows × joints, row by row), -1 if none."""
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if not np.isfinite(x[i, j]):
                return j
    return -1


@_jit
def finite_state(block, wrench, last):
    """The measured state's check: the column of the first non-finite entry of ``block`` (≥ 0); else ``last`` ←
    ``block[0]`` (the positions) and -1, or -2 when the wrench holds a non-finite value."""
    j = first_bad(block)
    if j >= 0:
        return j
    last[:] = block[0]
    for i in range(wrench.shape[0]):
        if not np.isfinite(wrench[i]):
            return -2
    return -1


@_jit
def finite_setpoint(block, last):
    """The setpoint's check: the column of the first non-finite entry of ``block`` (≥ 0), else ``last`` ←
    ``block[0]`` (q) and -1."""
    j = first_bad(block)
    if j < 0:
        last[:] = block[0]
    return j


@_jit
def finite_output(block, last, lim):
    """The command's last word: a non-finite ``block`` becomes ``last``; the efforts (row 0) clipped to ±``lim``
    if one is over; ``last`` ← the result. Returns (first bad column or -1, clipped)."""
    j = first_bad(block)
    if j >= 0:
        block[:] = last
    tau = block[0]
    over = False
    for i in range(tau.shape[0]):
        if abs(tau[i]) > lim[i]:
            over = True
    if over:
        _clip(tau, lim)
    last[:] = block
    return j, over


@_jit
def _clip(tau, lim):
    """tau ← tau clipped to ±lim, in place (a NaN stays NaN)."""
    for i in range(tau.shape[0]):
        t, l = tau[i], lim[i]
        if t < -l:
            t = -l
        if t > l:
            t = l
        tau[i] = t


# ---- torque_guard ------------------------------------------------------------------------------------------------
@_jit
def clip_over(tau, lim):
    """``tau`` clipped to ±``lim`` where some |τ| is over it: 0 none over, 1 clipped, 2 some over but a value is
    non-finite (left as it is: no clip turns an inf into a full effort, finite_guard faults on it)."""
    over = False
    finite = True
    for i in range(tau.shape[0]):
        if abs(tau[i]) > lim[i]:
            over = True
        if not np.isfinite(tau[i]):
            finite = False
    if not over:
        return 0
    if not finite:
        return 2
    _clip(tau, lim)
    return 1


# ---- collision_avoidance -----------------------------------------------------------------------------------------
@_jit
def step_fraction(step, q, prev, free, step_max, r):
    """step ← q − prev (0 where ``free``: torque-driven), r ← |step| / step_max; its largest value (the step as a
    fraction of the block speed)."""
    for i in range(q.shape[0]):
        x = 0.0 if free[i] else q[i] - prev[i]
        step[i] = x
        r[i] = abs(x) / step_max[i]
    return r.max()


# ---- joint_limits ------------------------------------------------------------------------------------------------
@_jit
def limits_check(X, L, B, sp, pp, dt):
    """joint_limits' check: X[:5] ← |q − prev|, |(q − prev) − pd|, |v·dt − pd|, prev − upper, lower − prev; B[:5] ←
    X[:5] > L[:5] (the thresholds); whether some joint is flagged (B[5]: the joints shaped last cycle, too).
    L rows: 0-4 thresholds, 5-7 lower q, v, a, 8-10 upper q, v, a; sp: the setpoint block; pp: prev, pd."""
    n = X.shape[1]
    prev, pd = pp[0], pp[1]
    any_ = False
    for i in range(n):
        d = sp[0, i] - prev[i]
        dd = d - pd[i]
        xv = sp[1, i] * dt
        xv -= pd[i]
        xu = prev[i] - L[8, i]
        xl = L[5, i] - prev[i]
        d, dd, xv = abs(d), abs(dd), abs(xv)
        X[0, i], X[1, i], X[2, i], X[3, i], X[4, i] = d, dd, xv, xu, xl
        b0, b1, b2, b3, b4 = d > L[0, i], dd > L[1, i], xv > L[2, i], xu > L[3, i], xl > L[4, i]
        B[0, i], B[1, i], B[2, i], B[3, i], B[4, i] = b0, b1, b2, b3, b4
        if b0 or b1 or b2 or b3 or b4 or B[5, i]:
            any_ = True
    return any_


@_jit
def limits_clamp(X, L, sp):
    """Rows q, v, a of the setpoint into [L[5:8], L[8:11]] (X[5:8] the clamped values); whether it changed any."""
    n = X.shape[1]
    changed = False
    for r in range(3):
        for i in range(n):
            x = sp[r, i]
            y = x
            lo, hi = L[5 + r, i], L[8 + r, i]
            if y < lo:
                y = lo
            if y > hi:
                y = hi
            X[5 + r, i] = y
            if y != x:
                changed = True
    if changed:
        for r in range(3):
            for i in range(n):
                sp[r, i] = X[5 + r, i]
    return changed


@_jit
def limits_commit(pp, q, primed):
    """pd ← q − prev (primed), prev ← q."""
    prev, pd = pp[0], pp[1]
    for i in range(q.shape[0]):
        if primed:
            pd[i] = q[i] - prev[i]
        prev[i] = q[i]


# ---- following_error ---------------------------------------------------------------------------------------------
@_jit
def following(E, q, pos, free):
    """E[0] ← q − position (0 where ``free``: torque-driven), E[1] ← |E[0]|; the largest |error|."""
    e, ae = E[0], E[1]
    for i in range(q.shape[0]):
        x = 0.0 if free[i] else q[i] - pos[i]
        e[i] = x
        ae[i] = abs(x)
    return ae[_argmax(ae)]


_warm = set()


def warm(n: int = 8) -> None:
    """Compile (or load from the cache) every kernel with the plugins' argument types: before the first cycle."""
    if n in _warm:
        return
    _warm.add(n)
    f, b, i = np.zeros(n), np.zeros(n, dtype=bool), np.arange(n, dtype=np.intp)
    observe(np.zeros((6, n)), f, f, f, f, np.zeros((n, n)), np.ones((3, n)), i, np.zeros(3), np.zeros(4))
    b3, b4 = np.zeros((3, n)), np.zeros((4, n))
    finite_state(b3, np.zeros(6), f)
    finite_setpoint(b4, f)
    finite_output(b3, np.zeros((3, n)), np.ones(n))
    X, L, B, pp = np.zeros((8, n)), np.zeros((11, n)), np.zeros((6, n), dtype=bool), np.zeros((2, n))
    limits_check(X, L, B, b4, pp, 0.001)
    limits_clamp(X, L, b4)
    limits_commit(pp, f, True)
    following(np.zeros((2, n)), f, f, b)
    clip_over(np.zeros(n), np.ones(n))
    step_fraction(np.zeros(n), f, f, b, np.ones(n), np.zeros(n))
