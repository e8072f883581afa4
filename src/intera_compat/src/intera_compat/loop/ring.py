"""A single-producer/single-consumer ring of float64 messages in POSIX shared memory.

Carries what must be neither lost nor reordered between the ROS listener process and the 1 kHz
loop process: commands, events, whole trajectories (listener → loop) and results, faults
(loop → listener). Exactly one process pushes and exactly one process pops; each ring has an
owner (``create=True``, unlinks on ``close``) and the other side attaches by ``name``.

Block layout (8-byte words, the block is page aligned)::

    line 0 (uint64): head = words ever written (producer-owned) | capacity (set once by owner)
    line 1 (uint64): tail = words ever read    (consumer-owned)
    data (float64):  capacity words, capacity a power of two

head and tail are free-running counters (a ``uint64`` never wraps in practice); a position in the
data area is ``counter & (capacity - 1)``. ``head - tail`` words are pending. A message is
``[payload length, kind, payload...]`` and may wrap around the end of the data area (it is then
copied in two slices). Payload lengths and kinds are integers stored exactly as float64.

Protocol: the producer copies the whole message into free space and only then stores ``head``;
the consumer loads ``head``, copies the message out and only then stores ``tail``. Only the
producer writes ``head``, only the consumer writes ``tail``; both are aligned 8-byte stores.

Memory ordering: this needs (a) the producer's message stores to become visible before its
``head`` store and (b) the consumer's loads of the message to be performed before its ``tail``
store (so the producer cannot overwrite space still being read), plus the consumer's ``head``
load before its message loads. x86-64 (total store order) guarantees all of these; weakly
ordered CPUs would need fences numpy cannot issue, so ``attach_shm`` refuses to run on them
(``check_memory_order``, see ``shm``).

A message that does not fit the free space right now is refused whole (``push`` returns False);
the ring never holds a partial message. Neither side allocates numpy data buffers per call as
long as the parts are numpy arrays: payloads are copied straight from the caller's arrays into
the ring and from the ring into the caller's preallocated ``out`` buffer.
"""
from __future__ import annotations

import numpy as np

from ..data.shm import attach_shm, release_shm

_LINE = 8  # uint64 words per 64-byte cache line
_HEAD, _CAP, _TAIL = 0, 1, _LINE  # indices into the uint64 header block
_HEADER_WORDS = 2 * _LINE  # head's line, tail's line; the data area starts on the next line
_FRAME = 2  # per-message header words: [payload length, kind]


def _round_up_pow2(n: int) -> int:
    p = 1
    while p < n:
        p <<= 1
    return p


class SpscRing:
    """SPSC message ring. ``capacity_words`` is the data-area size in float64 words (rounded up
    to a power of two); an attaching side must pass the same capacity as the owner."""

    def __init__(self, capacity_words: int, name: str | None = None, create: bool = False):
        if capacity_words < _FRAME:
            raise ValueError(f"capacity_words must be >= {_FRAME}, got {capacity_words}")
        cap = _round_up_pow2(int(capacity_words))
        self.capacity: int = cap  # data-area words; the largest payload is capacity - 2
        self._mask = cap - 1
        self.shm = attach_shm(name, (_HEADER_WORDS + cap) * 8, create)
        self._owner = create
        self._hdr = np.ndarray((_HEADER_WORDS,), dtype=np.uint64, buffer=self.shm.buf)
        if create:
            self._hdr[:] = 0
            self._hdr[_CAP] = cap
        elif int(self._hdr[_CAP]) != cap:
            shared = int(self._hdr[_CAP])
            del self._hdr
            self.shm.close()
            raise ValueError(f"ring {name!r} has capacity {shared} words, this side expects {cap}")
        self._data = np.ndarray((cap,), dtype=np.float64, buffer=self.shm.buf, offset=_HEADER_WORDS * 8)
        self.kind: int = 0  # kind of the message the last successful pop returned
        self.pushed = 0  # messages this instance pushed
        self.popped = 0  # messages this instance popped
        self.full_rejects = 0  # pushes this instance refused for lack of room

    @property
    def name(self) -> str:
        """The shared-memory name the other process attaches with."""
        return self.shm.name

    def pending_words(self) -> int:
        """Words (message headers included) written and not yet consumed, as seen right now."""
        return int(self._hdr[_HEAD]) - int(self._hdr[_TAIL])

    # ---- producer -------------------------------------------------------------------------
    def push(self, kind: int, *parts) -> bool:
        """Append one message whose payload is ``parts`` (1-D arrays or float sequences) in order.

        ``kind`` is a positive integer message type. Returns False, writing nothing, when the free
        space is too small right now; raises ValueError if the message could never fit.
        """
        if kind < 1:
            raise ValueError(f"kind must be a positive int, got {kind}")
        length = 0
        for p in parts:
            if isinstance(p, np.ndarray) and p.ndim != 1:
                raise ValueError(f"message parts must be 1-D, got shape {p.shape}")
            length += len(p)
        need = _FRAME + length
        if need > self.capacity:
            raise ValueError(f"a {length}-word payload can never fit a {self.capacity}-word ring")
        hdr, data, mask = self._hdr, self._data, self._mask
        head = int(hdr[_HEAD])
        if need > self.capacity - (head - int(hdr[_TAIL])):
            self.full_rejects += 1
            return False
        data[head & mask] = length
        data[(head + 1) & mask] = kind
        pos = head + _FRAME
        for p in parts:
            pos = self._write(pos, p)
        hdr[_HEAD] = head + need  # publish: every word of the message is stored before head moves
        self.pushed += 1
        return True

    def _write(self, pos: int, src) -> int:
        """Copy ``src`` to the data area at counter ``pos`` (two slices across the end)."""
        n = len(src)
        i = pos & self._mask
        first = self.capacity - i
        if n <= first:
            self._data[i:i + n] = src
        else:
            self._data[i:] = src[:first]
            self._data[:n - first] = src[first:]
        return pos + n

    # ---- consumer -------------------------------------------------------------------------
    def peek_length(self) -> int:
        """Payload length (words) of the oldest message, -1 when the ring is empty."""
        tail = int(self._hdr[_TAIL])
        if int(self._hdr[_HEAD]) == tail:
            return -1
        return int(self._data[tail & self._mask])

    def pop(self, out: np.ndarray) -> int:
        """Move the oldest message's payload into ``out[:n]`` and return n; its kind goes to
        ``self.kind``. Returns -1 when empty. If ``out`` is shorter than the payload, raises
        ValueError and leaves the message in the ring."""
        hdr, data, mask = self._hdr, self._data, self._mask
        tail = int(hdr[_TAIL])
        if int(hdr[_HEAD]) == tail:
            return -1
        n = int(data[tail & mask])
        if n > len(out):
            raise ValueError(f"a {n}-word message does not fit a {len(out)}-word buffer (left in the ring)")
        self.kind = int(data[(tail + 1) & mask])
        i = (tail + _FRAME) & mask
        first = self.capacity - i
        if n <= first:
            out[:n] = data[i:i + n]
        else:
            out[:first] = data[i:]
            out[first:n] = data[:n - first]
        hdr[_TAIL] = tail + _FRAME + n  # release the space only after the payload is copied out
        self.popped += 1
        return n

    def close(self) -> None:
        """Detach; the owner also unlinks the block. Safe to call twice."""
        if self.shm is None:
            return
        del self._hdr, self._data
        release_shm(self.shm, self._owner)
        self.shm = None
