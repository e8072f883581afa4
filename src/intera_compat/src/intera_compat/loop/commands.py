"""Validation of incoming JointCommands (pure: plain sequences in, a verdict out).

Bad input never reaches the loop: NaN/inf, arrays whose length differs from ``names``, unknown or
repeated joints and unknown modes are rejected with a message naming the field. Values beyond the
joint limits are clamped, with a warning naming the field.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .layouts import POSITION_MODE, TORQUE_MODE, TRAJECTORY_MODE, VELOCITY_MODE

MODE_NAMES = {POSITION_MODE: "POSITION_MODE", VELOCITY_MODE: "VELOCITY_MODE", TORQUE_MODE: "TORQUE_MODE",
              TRAJECTORY_MODE: "TRAJECTORY_MODE"}
MODE_FIELDS = {POSITION_MODE: ("position",), VELOCITY_MODE: ("velocity",), TORQUE_MODE: ("effort",),
               TRAJECTORY_MODE: ("position", "velocity", "acceleration")}


@dataclass
class CommandVerdict:
    ok: bool
    error: str = ""
    warnings: list = field(default_factory=list)
    mode: int = 0
    mask: np.ndarray | None = None
    arrays: dict = field(default_factory=dict)  # field → full-length array (unnamed joints 0)


class CommandValidator:
    def __init__(self, joint_names: list[str], lower, upper, vmax, emax):
        self.index = {n: i for i, n in enumerate(joint_names)}
        self.n = len(joint_names)
        self.lower, self.upper = np.asarray(lower, float), np.asarray(upper, float)
        self.vmax, self.emax = np.asarray(vmax, float), np.asarray(emax, float)

    def check(self, mode: int, names, values: dict) -> CommandVerdict:
        """``values`` maps field name → sequence (all of the message's arrays may be given)."""
        if mode not in MODE_FIELDS:
            return CommandVerdict(False, f"mode {mode} is not a JointCommand mode (1..4)")
        if len(names) == 0:
            return CommandVerdict(False, "names is empty")
        idx = []
        for k, name in enumerate(names):
            i = self.index.get(name)
            if i is None:
                return CommandVerdict(False, f"names[{k}] '{name}' is not a joint of this limb")
            if i in idx:
                return CommandVerdict(False, f"names[{k}] '{name}' appears twice")
            idx.append(i)
        verdict = CommandVerdict(True, mode=mode)
        mask = np.zeros(self.n, dtype=bool)
        mask[idx] = True
        verdict.mask = mask
        for fld in MODE_FIELDS[mode]:
            vals = values.get(fld, ())
            if len(vals) != len(names):
                return CommandVerdict(False, f"{MODE_NAMES[mode]}: {fld} has {len(vals)} values for "
                                             f"{len(names)} names")
            for k, x in enumerate(vals):
                if not math.isfinite(x):
                    return CommandVerdict(False, f"{fld}[{k}] ({names[k]}) is {x}")
            arr = np.zeros(self.n)
            arr[idx] = vals
            verdict.arrays[fld] = arr
        self._clamp(verdict, names, idx)
        return verdict

    def _clamp(self, v: CommandVerdict, names, idx) -> None:
        def clamp(fld, lo, hi, unit):
            arr = v.arrays.get(fld)
            if arr is None:
                return
            for k, i in enumerate(idx):
                if arr[i] < lo[i] or arr[i] > hi[i]:
                    c = min(max(arr[i], lo[i]), hi[i])
                    v.warnings.append(f"{fld}[{k}] ({names[k]}) = {arr[i]:.4g} {unit} is outside "
                                      f"[{lo[i]:.4g}, {hi[i]:.4g}]; clamped to {c:.4g}")
                    arr[i] = c

        clamp("position", self.lower, self.upper, "rad")
        clamp("velocity", -self.vmax, self.vmax, "rad/s")
        clamp("effort", -self.emax, self.emax, "Nm")


class CommandMailbox:
    """Writes accepted commands into the command record (the listener side of the seqlock).

    Commands arriving faster than the loop consumes them are merged when they share a mode, so
    two partial commands (e.g. one joint each) inside one cycle both take effect.
    """

    def __init__(self, record):
        self.record = record  # SeqlockRecord
        self.cmd_id = 0
        self.mode = 0

    def post(self, verdict: CommandVerdict, consumed_id: float) -> int:
        rec = self.record.local
        if not (self.mode == verdict.mode and consumed_id < self.cmd_id):
            rec.mask[:] = 0.0
        m = verdict.mask
        rec.mask[m] = 1.0
        for fld, arr in verdict.arrays.items():
            getattr(rec, fld)[m] = arr[m]
        self.cmd_id += 1
        rec.cmd_id[0] = self.cmd_id
        rec.mode[0] = verdict.mode
        self.mode = verdict.mode
        self.record.publish_local()
        return self.cmd_id
