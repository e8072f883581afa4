"""Seqlock-protected float64 records in POSIX shared memory ("latest value" data only).

A ``Layout`` names fields (scalars or fixed-length arrays); a ``SeqlockRecord`` maps it onto one
shared-memory block as ``[seq | field...]`` of float64. There is exactly one writer per record:

* the writer fills its private ``local`` buffer at leisure, then ``publish_local`` makes it the
  shared value in one short critical section: ``seq`` odd → one block copy → ``seq`` even. The
  shared block is never "write in progress" for longer than that copy, so a reader spins at most
  one copy's time.
* a reader copies the block into a private *staging* buffer and commits it to ``local`` only if
  ``seq`` was even before the copy and unchanged after it. After ``retries`` failed attempts
  ``read`` returns False and ``local`` keeps the previous consistent snapshot — a torn copy never
  reaches the caller. A writer that dies inside that copy leaves ``seq`` odd for ever: a reader
  that must have a snapshot waits with ``wait_read``, which also asks whether the writer lives.

Memory ordering: the protocol needs stores to become visible in program order (writer: seq, data,
seq) and loads to be performed in program order (reader: seq, data, seq). x86-64 guarantees both
(total store order); weakly ordered CPUs (ARM, POWER) need fences that numpy cannot issue.
``check_memory_order()`` refuses to start on such machines instead of silently tearing; every
shared-memory channel calls it when it is created. Nothing here allocates after construction.
"""
from __future__ import annotations

import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np

TSO_MACHINES = ("x86_64", "amd64")  # 64-bit: the 8-byte sequence counter is stored in one instruction


def check_memory_order(machine: str | None = None) -> None:
    """Raise RuntimeError unless this CPU orders stores and loads as the seqlock and ring assume."""
    m = (machine or platform.machine()).lower()
    if m not in TSO_MACHINES:
        raise RuntimeError(
            f"intera_compat's shared-memory channels assume total store order (x86-64); this CPU is {m!r}, "
            "where seqlock and ring copies could be observed torn. Refusing to start the realtime loop.")


@dataclass(frozen=True)
class Layout:
    fields: tuple  # ((name, length), ...); length 1 is a scalar

    @property
    def size(self) -> int:
        return 1 + sum(n for _, n in self.fields)

    def offsets(self) -> dict:
        off, out = 1, {}
        for name, n in self.fields:
            out[name] = (off, n)
            off += n
        return out


class Record:
    """Named views onto a float64 buffer laid out by ``layout`` (index 0 is the sequence)."""

    def __init__(self, layout: Layout, buf: np.ndarray):
        self.layout = layout
        self.buf = buf
        for name, (off, n) in layout.offsets().items():
            setattr(self, name, buf[off:off + n])


_CREATED_HERE: set = set()


def attach_shm(name: str | None, nbytes: int, create: bool) -> shared_memory.SharedMemory:
    """Create (owner) or attach to a POSIX shared-memory block of ``nbytes``."""
    check_memory_order()
    shm = shared_memory.SharedMemory(name=name, create=create, size=nbytes if create else 0)
    if create:
        _CREATED_HERE.add(shm._name)
    elif shm._name not in _CREATED_HERE:
        # attaching processes must not let Python's resource tracker unlink the owner's block
        try:
            from multiprocessing import resource_tracker

            resource_tracker.unregister(shm._name, "shared_memory")
        except Exception:
            pass
    return shm


def release_shm(shm: shared_memory.SharedMemory, owner: bool) -> None:
    """Detach (every view into ``shm.buf`` must be gone); the owner also unlinks the block."""
    shm.close()
    if owner:
        try:
            shm.unlink()
        except FileNotFoundError:
            pass


class SeqlockRecord:
    """A ``Layout`` in shared memory. ``create=True`` in the owner; others attach by ``name``."""

    def __init__(self, layout: Layout, name: str | None = None, create: bool = False):
        self.layout = layout
        self.shm = attach_shm(name, layout.size * 8, create)
        self._owner = create
        self.raw = np.ndarray((layout.size,), dtype=np.float64, buffer=self.shm.buf)
        if create:
            self.raw[:] = 0.0
        self._local = np.zeros(layout.size)
        self._stage = np.zeros(layout.size)
        self.local = Record(layout, self._local)  # the writer's draft / the reader's last good snapshot
        self.failed_reads = 0  # reads that gave up (the writer kept the record busy)
        self._seen = -1.0  # the sequence of the snapshot in ``local`` (-1: none yet)

    @property
    def name(self) -> str:
        return self.shm.name

    # --- writer ---------------------------------------------------------------------------
    def publish_local(self) -> None:
        """Make the private draft (``local``) the shared value: one copy inside the odd window."""
        raw = self.raw
        raw[0] += 1.0  # odd: write in progress
        raw[1:] = self._local[1:]
        raw[0] += 1.0  # even: consistent

    # --- reader ---------------------------------------------------------------------------
    def read(self, retries: int = 200) -> bool:
        """Commit a consistent snapshot to ``local``; False (``local`` unchanged) if none was seen."""
        raw, stage = self.raw, self._stage
        for _ in range(retries):
            s0 = raw[0]
            if s0 % 2.0:
                continue
            stage[:] = raw
            if raw[0] == s0:
                self._local[:] = stage
                self._seen = s0
                return True
        self.failed_reads += 1
        return False

    def refresh(self) -> bool:
        """``read``, unless ``local`` already holds the writer's latest (its sequence has not moved since): a reader
        that polls every cycle a record written now and then copies nothing most cycles."""
        if self.raw[0] == self._seen:
            return True
        return self.read()

    def wait_read(self, alive: Callable[[], bool], pause: float = 1e-5) -> bool:
        """``read`` until a snapshot commits (True), for as long as ``alive()`` says the writer lives; False
        (``local`` unchanged) once it does not — a writer that died between its two sequence increments
        leaves the record "write in progress" for ever, and a reader that only retried would hang."""
        while not self.read():
            if not alive():
                return self.read()  # (its last write may have completed before it went)
            time.sleep(pause)
        return True

    def close(self) -> None:
        del self.raw
        release_shm(self.shm, self._owner)
