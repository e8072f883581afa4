"""The listener ↔ loop channel: seqlock records for latest values, SPSC rings for the rest.

* ``control`` (listener → loop): speed ratio, command timeout, joint-state rate, shutdown;
* ``state`` (loop → listener, every cycle), ``stats`` (loop → listener, 100 Hz) and ``safety``
  (loop → listener, 100 Hz and on detection changes; ``pairs`` = the tight model's collision pairs);
* ``to_loop`` ring: JointCommands, robot events, suppress keep-alives, whole trajectories,
  cancels, scaling — in order, none lost (a full ring refuses the message and says so);
* ``from_loop`` ring: trajectory results and faults.

The listener process creates the channel (``create=True``) and passes ``names`` to the loop
process, which attaches. Several listener threads may post: posting is serialised by a lock.
"""
from __future__ import annotations

import threading

import numpy as np

from .layouts import MSG_COMMAND, control_layout, safety_layout, state_layout, stats_layout
from .ring import SpscRing
from .shm import SeqlockRecord

TO_LOOP_WORDS = 1 << 19  # 4 MiB: a 10 000-knot trajectory of 8 joints fits twice
FROM_LOOP_WORDS = 1 << 12


class Channel:
    def __init__(self, n: int, names: dict | None = None, create: bool = False, pairs: int = 0):
        names = names or {}
        self.n = n
        self.control = SeqlockRecord(control_layout(), names.get("control"), create)
        self.state = SeqlockRecord(state_layout(n), names.get("state"), create)
        self.stats = SeqlockRecord(stats_layout(), names.get("stats"), create)
        self.safety = SeqlockRecord(safety_layout(n, pairs), names.get("safety"), create)
        self.to_loop = SpscRing(TO_LOOP_WORDS, names.get("to_loop"), create)
        self.from_loop = SpscRing(FROM_LOOP_WORDS, names.get("from_loop"), create)
        self.lock = threading.Lock()
        self._cmd_head = np.zeros(1)
        self.refused = 0  # messages the full ring refused (listener side)
        if create:
            self.set_control(speed_override=1.0)

    @property
    def names(self) -> dict:
        return {"control": self.control.name, "state": self.state.name, "stats": self.stats.name,
                "safety": self.safety.name, "to_loop": self.to_loop.name, "from_loop": self.from_loop.name}

    # ---- listener side ------------------------------------------------------------------
    def post(self, kind: int, *parts) -> bool:
        """Queue a message for the loop; False if the ring is full (nothing written)."""
        with self.lock:
            ok = self.to_loop.push(kind, *parts)
            if not ok:
                self.refused += 1
            return ok

    def post_command(self, mode: int, mask: np.ndarray, arrays: dict) -> bool:
        """An accepted JointCommand: ``mask`` and ``arrays`` are full-length (config order)."""
        n, z = self.n, None
        parts = []
        for fld in ("position", "velocity", "acceleration", "effort"):
            a = arrays.get(fld)
            if a is None:
                z = np.zeros(n) if z is None else z
                a = z
            parts.append(a)
        with self.lock:
            self._cmd_head[0] = mode
            ok = self.to_loop.push(MSG_COMMAND, self._cmd_head, mask.astype(float), *parts)
            if not ok:
                self.refused += 1
            return ok

    def set_control(self, **values) -> None:
        with self.lock:
            c = self.control.local
            for k, v in values.items():
                getattr(c, k)[0] = v
            self.control.publish_local()

    def close(self) -> None:
        for x in (self.control, self.state, self.stats, self.safety, self.to_loop, self.from_loop):
            try:
                x.close()
            except (BufferError, FileNotFoundError):
                pass
