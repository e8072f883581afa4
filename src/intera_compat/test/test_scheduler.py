"""The loop process's scheduling helpers: the idle-latency request and the config that drives it."""
from __future__ import annotations

import os

import pytest

from intera_compat.config import load_config
from intera_compat.loop.scheduler import Scheduler, hold_idle_latency

DMA = "/dev/cpu_dma_latency"


def current_idle_latency() -> int:
    with open(DMA, "rb") as f:
        return int.from_bytes(f.read(4), "little", signed=True)


def test_negative_idle_latency_leaves_the_system_alone():
    fd, msg = hold_idle_latency(-1)
    assert fd is None and "untouched" in msg


@pytest.mark.skipif(not os.access(DMA, os.W_OK), reason=f"{DMA} not writable here (needs root)")
def test_idle_latency_is_held_while_the_file_is_open_and_released_with_it():
    before = current_idle_latency()
    fd, msg = hold_idle_latency(0)
    assert fd is not None, msg
    try:
        assert current_idle_latency() == 0
    finally:
        os.close(fd)
    assert current_idle_latency() == before  # the kernel drops the request with the last open descriptor


@pytest.fixture
def dma_at(monkeypatch):
    """Point the code's ``/dev/cpu_dma_latency`` at a stand-in path (every other path opens as before): what
    ``hold_idle_latency`` writes and how it meets refusals, without root. The kernel's side (the request ends
    with the last descriptor) is the test above, as root."""
    real_open = os.open

    def point(path):
        monkeypatch.setattr(os, "open", lambda p, *a, **k: real_open(path if p == DMA else p, *a, **k))
    return point


def open_fds() -> set:
    return set(os.listdir("/proc/self/fd"))


def test_idle_latency_request_is_four_bytes_written_and_its_descriptor_kept_open(dma_at, tmp_path):
    stand_in = tmp_path / "cpu_dma_latency"
    stand_in.write_bytes(b"")
    dma_at(str(stand_in))
    fd, msg = hold_idle_latency(250)
    assert fd is not None, msg
    try:
        os.fstat(fd)  # still open: the request lasts as long as the loop process holds it
        assert stand_in.read_bytes() == (250).to_bytes(4, "little", signed=True)
        assert msg == "idle exit latency held at 250 us"
    finally:
        os.close(fd)


def test_idle_latency_open_refused_is_reported_not_raised(dma_at, tmp_path):
    dma_at(str(tmp_path))  # a directory: O_WRONLY fails with EISDIR, for root too
    before = open_fds()
    fd, msg = hold_idle_latency(0)
    assert fd is None and msg.startswith(f"{DMA} refused (Is a directory)"), msg
    assert open_fds() == before


def test_idle_latency_write_refused_closes_the_descriptor(dma_at):
    dma_at("/dev/full")  # opens for writing, every write fails with ENOSPC
    before = open_fds()
    fd, msg = hold_idle_latency(0)
    assert fd is None and msg == f"{DMA} write refused (No space left on device)", msg
    assert open_fds() == before  # closed, not leaked


def test_config_realtime_section_feeds_the_scheduler():
    rt = load_config().realtime
    assert rt["spin_margin_us"] > 0 and rt["idle_latency_us"] >= -1
    s = Scheduler(0.001, rt["spin_margin_us"] * 1e-6)
    s.next -= 0.0105  # ten and a half periods behind: the ticks are skipped and counted, not replayed
    assert s.advance() >= 9 and s.skipped >= 9
