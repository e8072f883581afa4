"""Validation of incoming JointCommands (pure: plain sequences in, a verdict out).

Bad input never reaches the loop: NaN/inf, arrays whose length differs from ``names``, unknown,
repeated or non-limb joints (``head_pan`` has its own topic), unknown modes and TRAJECTORY
accelerations beyond the joint acceleration limits are rejected with a message naming the field.
Positions, velocities and efforts beyond the joint limits are clamped, with a warning naming
the field.

TRAJECTORY_MODE's ``velocity`` and ``acceleration`` may be left empty (the SDK's joint trajectory
action server sends positions only when its goal has none): the acceleration feed-forward is
then 0 and the velocity is the difference of consecutive positions of each joint over their
header stamps (``PositionDifferencer``), so the arm is not held back by a zero velocity reference.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from ..data.codes import POSITION_MODE, TORQUE_MODE, TRAJECTORY_MODE, VELOCITY_MODE
from ..safety.joint_limits import relaxed_range

MODE_NAMES = {POSITION_MODE: "POSITION_MODE", VELOCITY_MODE: "VELOCITY_MODE", TORQUE_MODE: "TORQUE_MODE",
              TRAJECTORY_MODE: "TRAJECTORY_MODE"}
MODE_FIELDS = {POSITION_MODE: ("position",), VELOCITY_MODE: ("velocity",), TORQUE_MODE: ("effort",),
               TRAJECTORY_MODE: ("position", "velocity", "acceleration")}
OPTIONAL_FIELDS = {TRAJECTORY_MODE: ("velocity", "acceleration")}  # may be empty


class PositionDifferencer:
    """Velocities of TRAJECTORY_MODE commands that carry positions only: per joint, the change since
    that joint's previous position over the stamps' difference (0 for its first one, or after a gap
    of more than ``max_gap`` s). Thread-safe (a callback thread per publisher connection)."""

    def __init__(self, n: int, max_gap: float = 0.2):
        self.q = np.zeros(n)
        self.t = np.full(n, -np.inf)
        self.max_gap = max_gap
        self.lock = threading.Lock()

    def update(self, mask: np.ndarray, position: np.ndarray, stamp: float) -> np.ndarray:
        """Record ``position`` (full length) of the joints in ``mask``; returns their velocities."""
        v = np.zeros(len(self.q))
        with self.lock:
            dt = stamp - self.t
            ok = mask & (dt > 1e-4) & (dt <= self.max_gap)
            v[ok] = (position[ok] - self.q[ok]) / dt[ok]
            self.q[mask] = position[mask]
            self.t[mask] = stamp
        return v


@dataclass
class CommandVerdict:
    ok: bool
    error: str = ""
    warnings: list = field(default_factory=list)
    mode: int = 0
    mask: np.ndarray | None = None
    arrays: dict = field(default_factory=dict)  # field → full-length array (unnamed joints 0)


class CommandValidator:
    """``limb_joints`` may be commanded; arrays are ``n`` long in config order (limb joints first)."""

    def __init__(self, limb_joints: list[str], n: int, lower, upper, vmax, amax, emax, other_joints=()):
        self.index = {name: i for i, name in enumerate(limb_joints)}
        self.other = set(other_joints)
        self.n = n
        self.normal = np.asarray(lower, float), np.asarray(upper, float)
        self.lower, self.upper = self.normal
        self.relaxed = self.normal
        self.vmax, self.amax, self.emax = np.asarray(vmax, float), np.asarray(amax, float), np.asarray(emax, float)
        self.differencer = PositionDifferencer(n)

    def relax(self, on: bool) -> None:
        """Positions are clamped to ``relaxed`` (the safety bypass's range) while on."""
        self.lower, self.upper = self.relaxed if on else self.normal

    def check(self, mode: int, names, values: dict, stamp: float | None = None) -> CommandVerdict:
        """``stamp``: the command's time in seconds (header.stamp; None: now, monotonic), for the
        velocities of TRAJECTORY_MODE commands that carry positions only."""
        """``values`` maps field name → sequence (all of the message's arrays may be given)."""
        if mode not in MODE_FIELDS:
            return CommandVerdict(False, f"mode {mode} is not a JointCommand mode (1..4)")
        if len(names) == 0:
            return CommandVerdict(False, "names is empty")
        idx = []
        for k, name in enumerate(names):
            i = self.index.get(name)
            if i is None:
                why = "is not a joint of this limb" + (" (it has its own command topic)" if name in self.other else "")
                return CommandVerdict(False, f"names[{k}] '{name}' {why}")
            if i in idx:
                return CommandVerdict(False, f"names[{k}] '{name}' appears twice")
            idx.append(i)
        idx = np.array(idx)
        verdict = CommandVerdict(True, mode=mode)
        mask = np.zeros(self.n, dtype=bool)
        mask[idx] = True
        verdict.mask = mask
        for fld in MODE_FIELDS[mode]:
            vals = np.asarray(values.get(fld, ()), dtype=float)
            if len(vals) == 0 and fld in OPTIONAL_FIELDS.get(mode, ()):
                continue  # absent (filled in below)
            if len(vals) != len(names):
                return CommandVerdict(False, f"{MODE_NAMES[mode]}: {fld} has {len(vals)} values for "
                                             f"{len(names)} names")
            finite = np.isfinite(vals)
            if not finite.all():
                k = int(np.flatnonzero(~finite)[0])
                return CommandVerdict(False, f"{fld}[{k}] ({names[k]}) is {vals[k]}")
            arr = np.zeros(self.n)
            arr[idx] = vals
            verdict.arrays[fld] = arr
        if mode == TRAJECTORY_MODE:
            a = verdict.arrays
            v = self.differencer.update(mask, a["position"], time.monotonic() if stamp is None else stamp)
            a.setdefault("velocity", v)
            a.setdefault("acceleration", np.zeros(self.n))
        acc = verdict.arrays.get("acceleration")
        if acc is not None:
            over = np.abs(acc[idx]) > self.amax[idx]
            if over.any():
                k = int(np.flatnonzero(over)[0])
                return CommandVerdict(False, f"acceleration[{k}] ({names[k]}) = {acc[idx[k]]:.4g} rad/s² is beyond "
                                             f"the joint's acceleration limit {self.amax[idx[k]]:.4g} rad/s²")
        lower, upper = self.lower, self.upper  # (one pair: relax() may swap them meanwhile)
        for fld, lo, hi, unit in (("position", lower, upper, "rad"), ("velocity", -self.vmax, self.vmax, "rad/s"),
                                  ("effort", -self.emax, self.emax, "Nm")):
            arr = verdict.arrays.get(fld)
            if arr is None:
                continue
            out = (arr[idx] < lo[idx]) | (arr[idx] > hi[idx])
            for k in np.flatnonzero(out):
                i = idx[k]
                c = min(max(arr[i], lo[i]), hi[i])
                verdict.warnings.append(f"{fld}[{k}] ({names[k]}) = {arr[i]:.4g} {unit} is outside "
                                        f"[{lo[i]:.4g}, {hi[i]:.4g}]; clamped to {c:.4g}")
                arr[i] = c
        return verdict


def make_validator(cfg) -> CommandValidator:
    lim = cfg.limits
    other = [cfg.head_joint] if cfg.head_joint else []
    v = CommandValidator(cfg.joint_names, len(cfg.all_joints), lim.lower, lim.upper, lim.velocity, lim.accel,
                         lim.effort, other)
    v.relaxed = relaxed_range(lim.lower, lim.upper, bypass_tolerance(cfg))
    return v


def bypass_tolerance(cfg) -> float:
    """``control.bypass_joint_limit_tolerance``: the fraction of each joint's range the safety
    bypass adds on both sides of it (hector's default 3 %)."""
    tol = float(cfg.control.get("bypass_joint_limit_tolerance", 0.03))
    if not 0.0 <= tol <= 1.0:
        raise ValueError(f"control.bypass_joint_limit_tolerance = {tol} is outside [0, 1]")
    return tol
