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


def test_config_realtime_section_feeds_the_scheduler():
    rt = load_config().realtime
    assert rt["spin_margin_us"] > 0 and rt["idle_latency_us"] >= -1
    s = Scheduler(0.001, rt["spin_margin_us"] * 1e-6)
    s.next -= 0.0105  # ten and a half periods behind: the ticks are skipped and counted, not replayed
    assert s.advance() >= 9 and s.skipped >= 9
