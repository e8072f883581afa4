"""A joint trajectory as knots (t, q, v, a) sampled as piecewise polynomials, without allocation.

``order`` picks the segment polynomial, as ros_controllers' JointTrajectoryController does from
the fields a trajectory carries: 1 = linear (positions only), 3 = cubic Hermite (positions and
velocities), 5 = quintic Hermite (positions, velocities and accelerations). Storage for
``max_knots`` knots is allocated once; ``load`` copies into it, ``sample`` writes into the
caller's arrays. Before the first knot time the first point is held, after the last the last.
"""
from __future__ import annotations

import numpy as np

ORDERS = (1, 3, 5)


class KnotTrajectory:
    def __init__(self, n: int, max_knots: int):
        self.n, self.max_knots = n, max_knots
        self.t = np.zeros(max_knots)
        self.q = np.zeros((max_knots, n))
        self.v = np.zeros((max_knots, n))
        self.a = np.zeros((max_knots, n))
        self.k = 0  # knots loaded
        self.order = 5
        self.c = np.zeros((6, n))  # coefficients of the cached segment (power basis in t − t_s)
        self.dc = np.zeros((5, n))
        self.ddc = np.zeros((4, n))
        self._dpow = np.arange(1.0, 6.0)[:, None]
        self._ddpow = np.arange(1.0, 5.0)[:, None]
        self._seg = -1
        self._tmp = np.zeros(n)

    @property
    def duration(self) -> float:
        return float(self.t[self.k - 1]) if self.k else 0.0

    def load(self, t, q, v, a, order: int) -> None:
        """Copy ``k`` knots: ``t`` (k,) s strictly increasing; ``q``/``v``/``a`` (k, n)."""
        k = len(t)
        if not 1 <= k <= self.max_knots:
            raise ValueError(f"{k} knots (1..{self.max_knots} allowed)")
        if order not in ORDERS:
            raise ValueError(f"order {order} (one of {ORDERS})")
        self.k, self.order = k, order
        self.t[:k] = t
        self.q[:k] = q
        self.v[:k] = v
        self.a[:k] = a
        self._seg = -1

    def segment(self, tau: float, hint: int = 0) -> int:
        """Index s of the segment [t_s, t_s+1) containing ``tau`` (-1 before the start, k-1 after the end)."""
        t, k = self.t, self.k
        if tau < t[0]:
            return -1
        if tau >= t[k - 1]:
            return k - 1
        s = hint if 0 <= hint < k - 1 and t[hint] <= tau else 0
        while t[s + 1] <= tau:
            s += 1
        return s

    def _coefficients(self, s: int) -> None:
        c, T = self.c, self.t[s + 1] - self.t[s]
        p0, p1, v0, v1, a0, a1 = self.q[s], self.q[s + 1], self.v[s], self.v[s + 1], self.a[s], self.a[s + 1]
        c[0] = p0
        dp = p1 - p0
        if self.order == 1:
            c[1] = dp / T
            c[2:] = 0.0
        elif self.order == 3:
            c[1] = v0
            c[2], c[3] = _cubic(dp, v0, v1, T)
            c[4:] = 0.0
        else:
            c[1] = v0
            c[2] = 0.5 * a0
            c[3], c[4], c[5] = _quintic(dp, v0, v1, a0, a1, T)
        self.dc[:] = c[1:] * self._dpow  # derivative coefficients
        self.ddc[:] = self.dc[1:] * self._ddpow
        self._seg = s

    def sample(self, tau: float, q: np.ndarray, v: np.ndarray, a: np.ndarray, hint: int = 0) -> int:
        """Position, velocity, acceleration at time ``tau`` into ``q``, ``v``, ``a``; returns the segment."""
        s = self.segment(tau, hint)
        if s < 0 or s >= self.k - 1:
            j = 0 if s < 0 else self.k - 1
            q[:] = self.q[j]
            v[:] = 0.0
            a[:] = 0.0
            return s
        if s != self._seg:
            self._coefficients(s)
        x, tmp = tau - self.t[s], self._tmp
        _horner(self.c, x, q, tmp)
        _horner(self.dc, x, v, tmp)
        _horner(self.ddc, x, a, tmp)
        return s


def _cubic(dp, v0, v1, T):
    """t² and t³ coefficients of the cubic Hermite segment (position change dp over T)."""
    return (3.0 * dp - (2.0 * v0 + v1) * T) / T ** 2, (-2.0 * dp + (v0 + v1) * T) / T ** 3


def _quintic(dp, v0, v1, a0, a1, T):
    """t³, t⁴ and t⁵ coefficients of the quintic Hermite segment."""
    return ((20.0 * dp - (8.0 * v1 + 12.0 * v0) * T - (3.0 * a0 - a1) * T * T) / (2.0 * T ** 3),
            (-30.0 * dp + (14.0 * v1 + 16.0 * v0) * T + (3.0 * a0 - 2.0 * a1) * T * T) / (2.0 * T ** 4),
            (12.0 * dp - 6.0 * (v1 + v0) * T - (a0 - a1) * T * T) / (2.0 * T ** 5))


def _horner(rows: np.ndarray, x: float, out: np.ndarray, tmp: np.ndarray) -> None:
    """out = rows[0] + x (rows[1] + x (… + x rows[-1])), in place."""
    np.multiply(rows[-1], x, out=tmp)
    for j in range(len(rows) - 2, 0, -1):
        tmp += rows[j]
        tmp *= x
    np.add(tmp, rows[0], out=out)


def cubic_end_accelerations(t, q, v) -> tuple[np.ndarray, np.ndarray]:
    """Acceleration at the start and at the end of the cubic Hermite segment between each pair of
    knots, each (k − 1, n); it is linear in between (constant jerk (end − start) / T)."""
    T = np.diff(t)[:, None]
    c2, c3 = _cubic(np.diff(q, axis=0), v[:-1], v[1:], T)
    return 2.0 * c2, 2.0 * c2 + 6.0 * c3 * T


def cubic_peak_acceleration(t, q, v) -> np.ndarray:
    """Peak |acceleration| of each cubic Hermite segment, (k − 1, n): at one of its ends."""
    a0, a1 = cubic_end_accelerations(t, q, v)
    return np.maximum(np.abs(a0), np.abs(a1))


def path_peaks(t, q, v, a, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Peak |velocity| and |acceleration| per joint, (n,) each, of the path through knots ``t`` (k,), ``q``/``v``/``a``
    (k, n) interpolated at ``order``: the knots' values and each segment's polynomial at 9 points of it."""
    pv, pa = np.abs(v).max(axis=0), np.abs(a).max(axis=0)
    if len(t) < 2:
        return pv, pa
    T = np.diff(t)[:, None]
    dq = np.diff(q, axis=0)
    if order == 1:
        return np.maximum(pv, (np.abs(dq) / T).max(axis=0)), pa
    v0 = v[:-1]
    c2 = 0.5 * a[:-1] if order == 5 else _cubic(dq, v0, v[1:], T)[0]
    c3, c4, c5 = _quintic(dq, v0, v[1:], a[:-1], a[1:], T) if order == 5 else \
        (_cubic(dq, v0, v[1:], T)[1], 0.0 * T, 0.0 * T)
    for f in np.linspace(0.0, 1.0, 9):
        x = f * T
        vel = v0 + x * (2.0 * c2 + x * (3.0 * c3 + x * (4.0 * c4 + x * 5.0 * c5)))
        acc = 2.0 * c2 + x * (6.0 * c3 + x * (12.0 * c4 + x * 20.0 * c5))
        np.maximum(pv, np.abs(vel).max(axis=0), out=pv)
        np.maximum(pa, np.abs(acc).max(axis=0), out=pa)
    return pv, pa


# Derived values (a segment's mean speed, the interpolating polynomial's acceleration) may exceed
# the limits by these factors: a trajectory planned at the limits passes, a jump does not.
SEGMENT_SPEED_TOLERANCE = 1.001
SEGMENT_ACCEL_TOLERANCE = 1.5


def limit_violation(t, q, v, a, order: int, vmax, amax):
    """First place where knots (t (k,), q/v/a (k, n)) break the joint limits, or None.

    Returns ``(what, row, joint, value, limit)``: ``what`` is "velocities" / "accelerations" (a
    knot's given value, row = knot), "segment speed" (mean speed between knots row and row+1) or
    "segment acceleration" (the interpolating polynomial's peak on that segment).
    """
    vmax, amax = np.asarray(vmax, float), np.asarray(amax, float)
    checks = []
    if order >= 3:
        checks.append(("velocities", np.abs(v), vmax))
    if order >= 5:
        checks.append(("accelerations", np.abs(a), amax))
    if len(t) > 1:
        T = np.diff(t)[:, None]
        dq = np.diff(q, axis=0)
        checks.append(("segment speed", np.abs(dq) / T, vmax * SEGMENT_SPEED_TOLERANCE))
        if order == 3:
            checks.append(("segment acceleration", cubic_peak_acceleration(t, q, v), amax * SEGMENT_ACCEL_TOLERANCE))
        elif order == 5:  # quintic: the acceleration is a cubic, sampled at 9 points of each segment
            peak = np.zeros_like(dq)
            c2 = 0.5 * a[:-1]
            c3, c4, c5 = _quintic(dq, v[:-1], v[1:], a[:-1], a[1:], T)
            for f in np.linspace(0.0, 1.0, 9):
                x = f * T
                acc = 2.0 * c2 + x * (6.0 * c3 + x * (12.0 * c4 + x * 20.0 * c5))
                np.maximum(peak, np.abs(acc), out=peak)
            checks.append(("segment acceleration", peak, amax * SEGMENT_ACCEL_TOLERANCE))
    for what, x, lim in checks:
        bad = x > lim
        if bad.any():
            r, j = np.argwhere(bad)[0]
            return what, int(r), int(j), float(x[r, j]), float(lim[j])
    return None
