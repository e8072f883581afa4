"""The emulator's servers' common shape: a threading TCP server serving on its own daemon thread."""
from __future__ import annotations

import socketserver
import threading


class ThreadedServer(socketserver.ThreadingTCPServer):
    """``start()`` serves on a daemon thread (one more per connection); ``close()`` stops and releases the port."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple, handler):
        super().__init__(address, handler)
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()
