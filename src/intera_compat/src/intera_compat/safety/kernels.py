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

_jit = numba.njit(cache=True)  # (never nogil: releasing the GIL mid-cycle lets other threads run)


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


def warm(n: int = 8) -> None:
    """Compile (or load from the cache) every kernel with the plugins' argument types: before the first cycle."""
    f, b, i = np.zeros(n), np.zeros(n, dtype=bool), np.arange(n, dtype=np.intp)
    observe(np.zeros((6, n)), f, f, f, f, np.zeros((n, n)), np.ones((3, n)), i, np.zeros(3), np.zeros(4))
