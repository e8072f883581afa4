"""The controller's script port (30003, where ur_rtde's RTDEControlInterface sends its control script): a script
that arrives (text with a ``def``) starts the controller's emulated control script."""
from __future__ import annotations

import socketserver
import threading

from .ur_controller import URController

PORT = 30003


class _Session(socketserver.BaseRequestHandler):
    server: "ScriptServer"

    def handle(self) -> None:
        text = b""
        while True:
            try:
                chunk = self.request.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            text = (text + chunk)[-65536:]
            if b"def " in text and b"\nend" in text:  # a whole program arrived
                self.server.scripts += 1
                self.server.controller.start_script()
                text = b""


class ScriptServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, controller: URController, host: str = "127.0.0.1", port: int = PORT):
        super().__init__((host, port), _Session)
        self.controller = controller
        self.scripts = 0
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def start(self) -> "ScriptServer":
        self._thread.start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()
