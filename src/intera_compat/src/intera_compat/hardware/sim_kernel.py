"""The MuJoCo Sawyer's per-cycle reads and writes (``SimBackend``) as compiled kernels (numba): the joints'
positions, velocities and measured torques gathered from MjData's arrays in one call instead of five ``take``\\ s and two
adds, the torque command clipped into ``ctrl`` in one instead of two ufuncs. The numpy code's operations in its order
(the same numbers); ``test_sim_kernel.py`` holds them to it. ``warm()`` compiles them (or loads numba's cache) when the
plant is built, never inside a cycle.
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, error_model="numpy")
def read(qpos, qvel, qfrc_act, qfrc_pas, qfrc_con, qadr, dadr, position, velocity, effort):  # pragma: no cover
    """position = qpos[qadr], velocity = qvel[dadr], effort = (actuator + passive) + constraint forces at dadr."""
    for j in range(position.shape[0]):
        d = dadr[j]
        position[j] = qpos[qadr[j]]
        velocity[j] = qvel[d]
        e = qfrc_act[d] + qfrc_pas[d]
        effort[j] = e + qfrc_con[d]


@numba.njit(cache=True, error_model="numpy")
def clip(x, lo, hi, out):  # pragma: no cover (compiled)
    """out = min(max(x, lo), hi) (np.maximum then np.minimum: a NaN stays)."""
    for j in range(out.shape[0]):
        y = x[j]
        if y < lo[j]:
            y = lo[j]
        if y > hi[j]:
            y = hi[j]
        out[j] = y


def warm() -> None:
    """Compile (or load from the cache) both kernels for the plant's argument types, outside any cycle."""
    z = [np.zeros(2) for _ in range(5)]
    i = np.arange(2)
    read(*z, i, i, np.zeros(2), np.zeros(2), np.zeros(2))
    clip(z[0], z[1], z[2], z[3])
