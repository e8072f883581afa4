"""The suppression topics (``/robot/limb/right/suppress_*``, contract §2.2): each suppresses its safety feature
only while its messages keep arriving faster than 1 / ``timeout`` (5 Hz by default) — a single message, or a
slower stream, suppresses nothing."""
from __future__ import annotations


class Suppression:
    def __init__(self, keys: int, timeout: float):
        self.timeout = timeout
        self.last = [-1e9] * keys  # the last two arrivals per topic (loop time)
        self.prev = [-2e9] * keys

    def arrived(self, key: int, now: float) -> None:
        self.prev[key], self.last[key] = self.last[key], now

    def on(self, key: int, now: float) -> bool:
        """The last two came less than the timeout apart and the last less than the timeout ago."""
        last = self.last[key]
        return now - last < self.timeout and last - self.prev[key] < self.timeout
