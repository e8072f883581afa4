"""Shared-memory channels without ROS: the SPSC message ring (``loop.ring``) and the seqlock record
(``data.shm``), each unit-tested in one process and stress-tested across two processes.

The two-process tests run the writer as a separate interpreter (this file as a script, started
with ``subprocess`` like the realtime node starts the loop) and assert outcomes only (every message
exactly once, in order, untorn; no torn snapshot), never timing: a writer that stalls or races
ahead changes how often the ring is full, not what arrives.
"""
from __future__ import annotations

import json
import os
import random
import select
import subprocess
import sys
import threading
import time
import tracemalloc

import numpy as np
import pytest

from intera_compat.data.shm import Layout, SeqlockRecord
from intera_compat.loop.ring import SpscRing

CHILD_START_S = 30.0  # generous: the child interpreter imports numpy and the package first
STRESS_DEADLINE_S = 30.0  # upper bound only; a healthy stress test takes ~2 s
STRESS_LAYOUT = Layout((("a", 1), ("b", 7), ("c", 120)))


@pytest.fixture
def rings():
    """``rings(capacity, name=None)``: owners when ``name`` is None, else attached; all closed after."""
    made = []

    def make(capacity: int, name: str | None = None) -> SpscRing:
        r = SpscRing(capacity, name=name, create=name is None)
        made.append(r)
        return r

    yield make
    for r in sorted(made, key=lambda r: r._owner):  # attached sides first, owners (unlink) last
        r.close()


def payload(seq: int, n: int) -> np.ndarray:
    """The reference payload of message ``seq``: word k is seq + k·1e-3 (same arithmetic on both sides)."""
    return seq + np.arange(n) * 1e-3


def stress_length(seq: int) -> int:
    """Payload length of stress message ``seq``: 1..41 words, varied so messages wrap at every offset."""
    return 1 + (seq * 7919) % 41


# ---- ring: single process ------------------------------------------------------------------------
def test_capacity_rounds_up_to_power_of_two(rings):
    assert rings(100).capacity == 128
    assert rings(64).capacity == 64
    with pytest.raises(ValueError):
        SpscRing(1, create=True)


def test_empty_ring(rings):
    r = rings(32)
    out = np.zeros(8)
    r.kind = 7
    assert r.pop(out) == -1
    assert r.peek_length() == -1
    assert r.pending_words() == 0
    assert r.kind == 7 and r.popped == 0


def test_fifo_order_kinds_and_variable_lengths(rings):
    r = rings(256)
    out = np.full(16, np.nan)
    for i in range(10):
        assert r.push(i + 1, payload(i, i))
    assert r.pending_words() == sum(2 + i for i in range(10))
    for i in range(10):
        assert r.peek_length() == i
        assert r.pop(out) == i
        assert r.kind == i + 1
        np.testing.assert_array_equal(out[:i], payload(i, i))
    assert r.pop(out) == -1
    assert r.pushed == r.popped == 10 and r.full_rejects == 0


def test_parts_are_concatenated_and_sequences_accepted(rings):
    r = rings(64)
    out = np.zeros(8)
    assert r.push(3, np.array([1.0, 2.0]), (3.0,), [4.0, 5.0], np.array([], dtype=float), np.array([True]))
    assert r.pop(out) == 6 and r.kind == 3
    np.testing.assert_array_equal(out[:6], [1, 2, 3, 4, 5, 1])
    assert r.push(9)  # no payload at all
    assert r.pop(out) == 0 and r.kind == 9


def test_bad_arguments_write_nothing(rings):
    r = rings(64)
    with pytest.raises(ValueError):
        r.push(0, [1.0])  # kinds are positive
    with pytest.raises(ValueError):
        r.push(1, np.zeros((2, 2)))  # parts are 1-D
    assert r.pending_words() == 0 and r.pushed == 0


def test_wraparound_many_messages_across_the_end(rings):
    r = rings(64)  # small: thousands of messages cross the end at every offset (headers too)
    out = np.zeros(64)
    rng = random.Random(1)
    sent = received = 0
    while received < 3000:
        for _ in range(rng.randint(0, 4)):
            n = rng.randint(0, 20)
            if r.push(1 + sent % 5, payload(sent, n)[: n // 2], payload(sent, n)[n // 2:]):
                sent += 1
        for _ in range(rng.randint(0, 4)):
            n = r.pop(out)
            if n < 0:
                break
            assert r.kind == 1 + received % 5
            np.testing.assert_array_equal(out[:n], payload(received, n))
            received += 1
        assert 0 <= r.pending_words() <= r.capacity
    assert r.full_rejects > 0  # the ring was full at times and those pushes were retried later
    assert r.pushed == sent and r.popped == received


def test_full_ring_refuses_whole_message_then_accepts_after_pop(rings):
    r = rings(16)
    out = np.zeros(16)
    assert r.push(1, payload(1, 6))  # 8 words
    assert r.push(2, payload(2, 4))  # 6 words: 14 of 16 used
    before = r._data.copy()
    assert not r.push(3, payload(3, 1))  # needs 3, 2 free
    assert r.full_rejects == 1 and r.pushed == 2
    assert r.pending_words() == 14
    np.testing.assert_array_equal(r._data, before)  # not a single word written
    assert r.push(4)  # an empty message (2 words) still fits exactly
    assert not r.push(5)
    assert r.pop(out) == 6 and r.kind == 1
    assert r.push(3, payload(3, 1))
    for kind, n in ((2, 4), (4, 0), (3, 1)):
        assert r.pop(out) == n and r.kind == kind
        np.testing.assert_array_equal(out[:n], payload(kind, n))
    assert r.pop(out) == -1


def test_message_longer_than_capacity_raises(rings):
    r = rings(16)
    with pytest.raises(ValueError):
        r.push(1, np.zeros(10), np.zeros(5))  # 15 + 2 header > 16
    assert r.pending_words() == 0 and r.full_rejects == 0
    assert r.push(1, np.zeros(14))  # the largest payload: exactly the capacity with its header


def test_pop_into_too_small_buffer_raises_and_keeps_message(rings):
    r = rings(32)
    r.push(4, payload(4, 5))
    r.kind = 0
    with pytest.raises(ValueError):
        r.pop(np.zeros(4))
    assert r.peek_length() == 5 and r.pending_words() == 7
    assert r.popped == 0 and r.kind == 0
    out = np.zeros(5)
    assert r.pop(out) == 5 and r.kind == 4
    np.testing.assert_array_equal(out, payload(4, 5))


def test_attach_by_name_sees_the_same_ring(rings):
    owner = rings(100)
    other = rings(100, owner.name)
    assert other.capacity == owner.capacity == 128
    out = np.zeros(8)
    assert owner.push(2, payload(2, 3))
    assert other.pending_words() == 5 and other.peek_length() == 3
    assert other.pop(out) == 3 and other.kind == 2
    np.testing.assert_array_equal(out[:3], payload(2, 3))
    assert owner.pop(out) == -1  # the shared tail moved
    assert other.push(6, payload(6, 2))  # and the reverse direction
    assert owner.pop(out) == 2 and owner.kind == 6
    with pytest.raises(ValueError):
        SpscRing(256, name=owner.name)  # a different capacity is refused


def test_owner_close_unlinks(rings):
    r = SpscRing(32, create=True)
    name = r.name
    r.close()
    r.close()  # idempotent
    with pytest.raises(FileNotFoundError):
        SpscRing(32, name=name)


def test_push_and_pop_allocate_no_payload_buffers():
    # measured in a fresh interpreter: tracemalloc counts every thread's allocations, and a pytest
    # worker may hold a rospy node from an earlier test whose threads allocate meanwhile (13.7 kB once)
    stats = Child("ring-allocations").finish()
    assert stats["equal"]
    assert stats["peak"] - stats["base"] < 4000


# ---- two-process harness -------------------------------------------------------------------------
class Child:
    """This file run as a script in a fresh interpreter: ``Child("ring-writer", args...)``.

    The child reports readiness with one stdout line, stops when its stdin closes and prints its
    statistics as a last JSON line."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([sys.executable, __file__, *map(str, args)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def wait_line(self, timeout: float) -> str:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "child process did not report in time"
        return self.proc.stdout.readline().strip()

    def finish(self, timeout: float = STRESS_DEADLINE_S) -> dict:
        out, _ = self.proc.communicate(timeout=timeout)  # closes stdin: the child stops
        assert self.proc.returncode == 0, f"child failed ({self.proc.returncode})"
        return json.loads(out.strip().splitlines()[-1])

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def _stop_on_stdin_eof() -> threading.Event:
    stop = threading.Event()

    def watch():
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch, daemon=True).start()
    return stop


def _say(line: str) -> None:
    print(line, flush=True)


def ring_writer(name: str, capacity: int, total: int, seed: int) -> None:
    """Child: push ``total`` stress messages, retrying (never dropping) when the ring is full. It
    fills the ring before saying "primed" (the reader waits for that), so the full path always runs."""
    stop = _stop_on_stdin_eof()
    ring = SpscRing(capacity, name=name)
    rng = random.Random(seed)
    buf = np.zeros(64)
    k = np.arange(64) * 1e-3
    primed = False
    retries = 0
    try:
        for seq in range(total):
            n = stress_length(seq)
            np.add(k[:n], seq, out=buf[:n])
            cut = rng.randint(0, n)
            while not ring.push(1, buf[:cut], buf[cut:n]):
                if not primed:
                    primed = True
                    _say("primed")
                if stop.is_set():
                    return
                retries += 1
                time.sleep(0.0001)
            if rng.random() < 0.1:  # bursts of ~10 pushes, then a short random pause: about as fast as
                time.sleep(rng.random() * 0.0005)  # the reader drains, so it often catches up mid-push
            if rng.random() < 0.001:
                time.sleep(rng.random() * 0.005)  # and now and then a longer stall
        if not primed:
            _say("primed")
        stop.wait()
    finally:
        _say(json.dumps({"pushed": ring.pushed, "full_rejects": ring.full_rejects, "retries": retries}))
        ring.close()


def ring_allocations() -> None:
    """Child: the bytes traced while a 1000-word message is pushed and popped 200 times (8 kB per
    copy: any temporary would show), as ``{"base", "peak", "equal"}``."""
    ring = SpscRing(1 << 12, create=True)
    try:
        msg, out = payload(0, 1000), np.zeros(1000)
        for _ in range(10):  # warm up (first-call caches)
            ring.push(1, msg[:500], msg[500:])
            ring.pop(out)
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            for _ in range(200):  # positions move: wrapping and non-wrapping copies
                assert ring.push(1, msg[:500], msg[500:])
                assert ring.pop(out) == 1000
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        _say(json.dumps({"base": base, "peak": peak, "equal": bool((out == msg).all())}))
    finally:
        ring.close()


def seqlock_writer(name: str) -> None:
    """Child: set every field of ``local`` to one counter value and publish, as fast as it can."""
    stop = _stop_on_stdin_eof()
    rec = SeqlockRecord(STRESS_LAYOUT, name=name)
    fields = [getattr(rec.local, f) for f, _ in STRESS_LAYOUT.fields]
    c = 0
    _say("ready")
    try:
        while not stop.is_set():
            c += 1
            for f in fields:
                f[:] = c
            rec.publish_local()
    finally:
        _say(json.dumps({"published": c}))
        rec.close()


def seqlock_dies_mid_write(name: str) -> None:
    """Child: publish once, then die between the two sequence increments of the next write (``seq`` odd for ever)."""
    rec = SeqlockRecord(STRESS_LAYOUT, name=name)
    rec.local.buf[1:] = 7.0
    rec.publish_local()
    rec.raw[0] += 1.0  # odd: a write in progress ...
    rec.raw[1:10] = -1.0  # ... half done ...
    _say("dying")
    os._exit(3)  # ... and the writer gone (no cleanup, no second increment)


# ---- ring: two processes -------------------------------------------------------------------------
def test_ring_two_processes_no_loss_no_reorder_no_tearing(rings):
    total = 30_000  # ~2 s at the reader's 1 kHz drain rate through a 512-word ring
    ring = rings(512)
    child = Child("ring-writer", ring.name, ring.capacity, total, 7)
    rng = random.Random(11)
    out = np.zeros(64)
    k = np.arange(64) * 1e-3
    expect = np.zeros(64)
    seq = drains = 0
    bad = []
    try:
        assert child.wait_line(CHILD_START_S) == "primed"
        deadline = time.monotonic() + STRESS_DEADLINE_S
        while seq < total and not bad and time.monotonic() < deadline:
            while len(bad) < 5:
                n = ring.pop(out)
                if n < 0:
                    break
                m = stress_length(seq)
                np.add(k[:m], seq, out=expect[:m])
                if ring.kind != 1 or n != m or not np.array_equal(out[:n], expect[:n]):
                    bad.append((seq, ring.kind, n, out[:n].copy()))
                seq += 1
            drains += 1
            time.sleep(0.001)  # the consumer's 1 kHz cycle
            if rng.random() < 0.01:
                time.sleep(rng.random() * 0.01)  # and its occasional stalls
        stats = child.finish()
    finally:
        child.kill()
    assert not bad, f"wrong/torn messages (first at seq {bad[0][0]}): {bad}"
    assert seq == total, f"received {seq} of {total} messages"
    assert ring.pop(out) == -1  # nothing extra: every message exactly once
    assert stats["pushed"] == total and ring.popped == total
    assert stats["full_rejects"] > 0  # the ring ran full and the writer retried instead of dropping
    print(f"ring stress: {total} messages in {drains} drains, writer retries {stats['retries']}")


# ---- seqlock record ------------------------------------------------------------------------------
def test_seqlock_two_processes_no_torn_snapshot():
    rec = SeqlockRecord(STRESS_LAYOUT, create=True)
    child = Child("seqlock-writer", rec.name)
    rng = random.Random(5)
    buf = rec.local.buf  # the reader's last good snapshot: [seq, a, b..., c...]
    ok = failed = 0
    last = 0.0
    torn = []
    try:
        assert child.wait_line(CHILD_START_S) == "ready"
        end = time.monotonic() + 1.5
        while time.monotonic() < end and not torn:
            if rec.read():
                ok += 1
                v = buf[1]
                if not (buf[1:] == v).all() or buf[0] % 2.0 or v < last:
                    torn.append((buf[0], last, np.unique(buf[1:])))
                last = v
            else:
                failed += 1
            time.sleep(0.001)
            if rng.random() < 0.01:
                time.sleep(rng.random() * 0.005)
        stats = child.finish()
    finally:
        child.kill()
        rec.close()
    assert not torn, f"torn or backwards snapshot: {torn}"
    assert ok > 0, f"no read succeeded ({failed} gave up)"
    assert 0 < last <= stats["published"]
    assert failed == rec.failed_reads
    print(f"seqlock stress: writer published {stats['published']}, reads ok {ok}, gave up {failed}")


def test_seqlock_read_during_write_keeps_previous_snapshot():
    writer = SeqlockRecord(STRESS_LAYOUT, create=True)
    reader = SeqlockRecord(STRESS_LAYOUT, name=writer.name)
    try:
        writer.local.buf[1:] = 5.0
        writer.publish_local()
        assert reader.read()
        good = reader.local.buf.copy()
        assert (good[1:] == 5.0).all() and good[0] % 2.0 == 0.0

        writer.raw[0] += 1.0  # odd: a write is in progress ...
        writer.raw[1:] = np.arange(1, STRESS_LAYOUT.size) * -1.0  # ... and half done: garbage
        assert not reader.read(retries=5)
        np.testing.assert_array_equal(reader.local.buf, good)  # the torn copy never reached local
        assert reader.failed_reads == 1

        writer.raw[0] += 1.0  # the write completes
        assert reader.read()
        np.testing.assert_array_equal(reader.local.buf[1:], writer.raw[1:])
    finally:
        reader.close()
        writer.close()


def test_seqlock_refresh_copies_only_what_the_writer_published_since():
    writer = SeqlockRecord(STRESS_LAYOUT, create=True)
    reader = SeqlockRecord(STRESS_LAYOUT, name=writer.name)
    try:
        writer.local.buf[1:] = 5.0
        writer.publish_local()
        assert reader.refresh() and (reader.local.buf[1:] == 5.0).all()  # (nothing seen yet: it reads)
        reader.local.buf[1] = -1.0  # a mark: a refresh that copied would overwrite it
        assert reader.refresh() and reader.local.buf[1] == -1.0  # the writer did not publish: no copy
        writer.publish_local()  # (the same values, a new sequence)
        assert reader.refresh() and reader.local.buf[1] == 5.0
        writer.raw[0] += 1.0  # a write in progress: refresh is a read, and keeps the last snapshot
        assert not reader.refresh() and reader.failed_reads == 1 and reader.local.buf[1] == 5.0
        writer.raw[0] += 1.0
    finally:
        reader.close()
        writer.close()


class _PublishedDuringEveryCopy:
    """``raw`` as a reader sees it when the writer publishes while every copy is under way: ``seq``
    is even whenever it is checked, yet has moved on by the next check."""

    def __init__(self, raw: np.ndarray):
        self.raw = raw

    def __getitem__(self, i):
        if i == 0:
            self.raw[0] += 2.0  # one more complete publish
        return self.raw[i]

    def __array__(self, dtype=None, copy=None):
        return self.raw


def test_seqlock_copy_overtaken_by_writer_is_discarded():
    """The torn-read defect proper: a copy whose ``seq`` changed underneath must not reach ``local``
    (the earlier ``read`` copied straight into ``local`` and kept the last torn copy on giving up)."""
    writer = SeqlockRecord(STRESS_LAYOUT, create=True)
    reader = SeqlockRecord(STRESS_LAYOUT, name=writer.name)
    real_raw = reader.raw
    try:
        writer.local.buf[1:] = 3.0
        writer.publish_local()
        assert reader.read()
        good = reader.local.buf.copy()
        writer.raw[1:] = np.arange(1, STRESS_LAYOUT.size) * -1.0  # what a torn copy would pick up
        reader.raw = _PublishedDuringEveryCopy(real_raw)
        assert not reader.read(retries=5)
        np.testing.assert_array_equal(reader.local.buf, good)
        assert reader.failed_reads == 1
    finally:
        reader.raw = real_raw
        reader.close()
        writer.close()


def test_seqlock_wait_read_returns_once_the_writer_is_gone():
    """A reader that must have a snapshot (the listener after a tick) waits while the writer lives, and returns
    False once it does not: a write left half done never completes (issue 32: the listener spun for ever)."""
    writer = SeqlockRecord(STRESS_LAYOUT, create=True)
    reader = SeqlockRecord(STRESS_LAYOUT, name=writer.name)
    try:
        writer.local.buf[1:] = 2.0
        writer.publish_local()
        assert reader.wait_read(lambda: True)
        good = reader.local.buf.copy()
        writer.raw[0] += 1.0  # the writer dies here
        writer.raw[1:5] = -1.0
        asked = []

        def alive():  # alive for three more looks, then gone
            asked.append(1)
            return len(asked) <= 3

        assert not reader.wait_read(alive, pause=0.0)
        assert len(asked) == 4
        np.testing.assert_array_equal(reader.local.buf, good)  # the half-done write never reached local

        writer.raw[0] += 1.0  # a writer that finishes while the reader waits: the snapshot commits
        writer.raw[0] += 1.0
        calls = []

        def finishing():
            calls.append(1)
            if len(calls) == 2:
                writer.raw[0] += 1.0
            return True

        assert reader.wait_read(finishing, pause=0.0)
        assert len(calls) == 2
        np.testing.assert_array_equal(reader.local.buf[1:], writer.raw[1:])
    finally:
        reader.close()
        writer.close()


def test_seqlock_reader_returns_when_the_writer_process_died_mid_write():
    rec = SeqlockRecord(STRESS_LAYOUT, create=True)
    child = Child("seqlock-dies", rec.name)
    try:
        assert child.wait_line(CHILD_START_S) == "dying"
        assert child.proc.wait(CHILD_START_S) == 3
        assert rec.raw[0] % 2.0 == 1.0  # left mid-write
        assert not rec.wait_read(lambda: child.proc.poll() is None)
        assert rec.failed_reads >= 1
        assert (rec.local.buf == 0.0).all()  # nothing torn committed
    finally:
        child.kill()
        rec.close()


if __name__ == "__main__":
    CHILDREN = {"ring-writer": lambda a: ring_writer(a[0], int(a[1]), int(a[2]), int(a[3])),
                "ring-allocations": lambda a: ring_allocations(),
                "seqlock-writer": lambda a: seqlock_writer(a[0]),
                "seqlock-dies": lambda a: seqlock_dies_mid_write(a[0])}
    CHILDREN[sys.argv[1]](sys.argv[2:])
