"""The listener ↔ loop channel: seqlock records for latest values, SPSC rings for the rest.

* ``control`` (listener → loop): speed ratio, command timeout, joint-state rate, shutdown;
* ``state`` (loop → listener, every cycle), ``stats`` (loop → listener, 100 Hz) and ``safety``
  (loop → listener, 100 Hz and on detection changes; ``pairs`` = the tight model's collision pairs);
* ``to_loop`` ring: JointCommands, robot events, suppress keep-alives, whole trajectories,
  cancels, scaling — in order, none lost (a full ring refuses the message and says so);
* ``from_loop`` ring: trajectory results and faults.

Stop-class messages (``STOP_CLASS``: enable/disable, stop, reset, E-stops, trajectory cancels and
scalings) are never refused for a full ring: one that does not fit waits in this side's *backlog*,
in order, and goes to the ring as soon as there is room — every later post and ``flush`` (the
listener's tick, ``TrajectoryClient.poll``) first move what waits. Nothing overtakes a waiting
message: while the backlog cannot be emptied, any other post is refused. Only a backlog that is
full too (``BACKLOG_MAX``: the loop has not drained for that many stop-class posts) refuses one.

The listener process creates the channel (``create=True``) and passes ``names`` to the loop
process, which attaches. Several listener threads may post: posting is serialised by a lock.
"""
from __future__ import annotations

import threading
import time
from collections import deque

import numpy as np

from ..data.shm import SeqlockRecord
from .layouts import (MSG_COMMAND, MSG_ENABLE, MSG_ESTOP, MSG_RESET, MSG_SAFETY_ESTOP, MSG_STOP, MSG_TRAJ_CANCEL,
                      MSG_TRAJ_SCALING, control_layout, safety_layout, state_layout, stats_layout)
from .ring import SpscRing

TO_LOOP_WORDS = 1 << 19  # 4 MiB: a 10 000-knot trajectory of 8 joints fits twice
FROM_LOOP_WORDS = 1 << 12
STOP_CLASS = frozenset((MSG_ENABLE, MSG_STOP, MSG_RESET, MSG_ESTOP, MSG_SAFETY_ESTOP, MSG_TRAJ_CANCEL,
                        MSG_TRAJ_SCALING))
BACKLOG_MAX = 256  # stop-class messages (a few words each) waiting for room in a full ring


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
        self._backlog: deque = deque()  # (kind, payload) stop-class messages waiting for room, oldest first
        self.backlogged = 0  # stop-class messages that had to wait in the backlog
        if create:
            self.set_control(speed_override=1.0)

    @property
    def names(self) -> dict:
        return {"control": self.control.name, "state": self.state.name, "stats": self.stats.name,
                "safety": self.safety.name, "to_loop": self.to_loop.name, "from_loop": self.from_loop.name}

    # ---- listener side ------------------------------------------------------------------
    def post(self, kind: int, *parts, patience: float = 0.0) -> bool:
        """Queue a message for the loop, in order. True: the loop gets it (for a ``STOP_CLASS`` kind, perhaps
        after waiting in the backlog). False (nothing written, counted in ``refused``): the ring had no room
        for ``patience`` seconds (a stop-class message: nor had the backlog)."""
        give_up = time.monotonic() + patience
        while True:
            with self.lock:
                if self._post(kind, parts):
                    return True
            if time.monotonic() >= give_up:
                with self.lock:
                    self.refused += 1
                return False
            time.sleep(0.0005)

    def _post(self, kind: int, parts) -> bool:
        """Under ``lock``: the ring now, behind whatever waits; else a stop-class message joins the backlog."""
        if (not self._backlog or self._flush()) and self.to_loop.push(kind, *parts):
            return True
        if kind in STOP_CLASS and len(self._backlog) < BACKLOG_MAX:
            self._backlog.append((kind, np.concatenate([np.asarray(p, float).ravel() for p in parts])
                                  if parts else np.zeros(0)))
            self.backlogged += 1
            return True
        return False

    def _flush(self) -> bool:
        """Under ``lock``: move waiting messages to the ring, oldest first; True once none waits."""
        q = self._backlog
        while q:
            kind, payload = q[0]
            if not self.to_loop.push(kind, payload):
                return False
            q.popleft()
        return True

    def flush(self) -> int:
        """Move what waits in the backlog to the ring (the listener calls it every tick); how many still wait."""
        with self.lock:
            self._flush()
            return len(self._backlog)

    @property
    def waiting(self) -> int:
        """Stop-class messages in the backlog (not yet in the ring)."""
        return len(self._backlog)

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
            ok = (not self._backlog or self._flush()) and self.to_loop.push(MSG_COMMAND, self._cmd_head,
                                                                             mask.astype(float), *parts)
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
