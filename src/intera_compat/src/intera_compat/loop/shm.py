"""Seqlock-protected float64 records in POSIX shared memory.

A ``Layout`` names fields (scalars or fixed-length arrays); a ``SeqlockRecord`` maps it onto one
shared-memory block as ``[seq | field...]`` of float64. There is one writer per record:

* writer: ``seq`` odd → write fields → ``seq`` even (``begin_write``/``end_write`` or ``write``)
* reader: copy the block into a private buffer, accept it only if ``seq`` was even and unchanged.

On x86-64 (TSO) the numpy copies are ordered as issued, which is what the seqlock needs. Readers
never block the writer; a torn read is simply retried. Nothing here allocates after construction.
"""
from __future__ import annotations

from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np


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


class SeqlockRecord:
    """A ``Layout`` in shared memory. ``create=True`` in the owner; others attach by ``name``."""

    def __init__(self, layout: Layout, name: str | None = None, create: bool = False):
        self.layout = layout
        nbytes = layout.size * 8
        self.shm = shared_memory.SharedMemory(name=name, create=create, size=nbytes if create else 0)
        if not create:
            # attaching processes must not let Python's resource tracker unlink the owner's block
            try:
                from multiprocessing import resource_tracker

                resource_tracker.unregister(self.shm._name, "shared_memory")
            except Exception:
                pass
        self._owner = create
        self.raw = np.ndarray((layout.size,), dtype=np.float64, buffer=self.shm.buf)
        if create:
            self.raw[:] = 0.0
        self.shared = Record(layout, self.raw)  # direct views: only the writer writes through these
        self._local = np.zeros(layout.size)
        self.local = Record(layout, self._local)  # private snapshot filled by read()

    @property
    def name(self) -> str:
        return self.shm.name

    # --- writer ---------------------------------------------------------------------------
    def begin_write(self) -> None:
        self.raw[0] += 1.0  # odd: write in progress

    def end_write(self) -> None:
        self.raw[0] += 1.0  # even: consistent

    def publish_local(self) -> None:
        """Write the private snapshot (``local``) as the new shared value."""
        self.raw[0] += 1.0
        self.raw[1:] = self._local[1:]
        self.raw[0] += 1.0

    # --- reader ---------------------------------------------------------------------------
    def read(self, retries: int = 1000) -> bool:
        """Copy a consistent snapshot into ``local``; False if the writer kept it busy."""
        raw, local = self.raw, self._local
        for _ in range(retries):
            s0 = raw[0]
            if s0 % 2.0:
                continue
            local[:] = raw
            if raw[0] == s0:
                return True
        return False

    def close(self) -> None:
        del self.shared, self.raw
        self.shm.close()
        if self._owner:
            try:
                self.shm.unlink()
            except FileNotFoundError:
                pass
