"""The controller's script port (30003, where ur_rtde's RTDEControlInterface sends its control script): a script
that arrives (text with a ``def``) starts the controller's emulated control script."""
from __future__ import annotations

import socketserver

from .tcp import ThreadedServer
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


class ScriptServer(ThreadedServer):
    def __init__(self, controller: URController, host: str = "127.0.0.1", port: int = PORT):
        super().__init__((host, port), _Session)
        self.controller = controller
        self.scripts = 0
