"""The RTDE protocol (port 30004) of a UR controller, served from a ``URController`` — the real ur_rtde client
connects to it (what that client sends and expects: ``docs/ur_rtde_client_facts.md``).

Framing: a big-endian uint16 size (header included) and a type byte, then the payload. The server answers
protocol-version ('V') and controller-version ('v') requests, output ('O', a frequency and a comma-separated
variable list) and input ('I') recipe setups — one reply per request, nothing else in between, recipes numbered
1, 2, ... per connection — start ('S') and pause ('P'), then streams data packages ('U': the recipe id and the
variables, big-endian) at the requested frequency. Input packages ('U' from the client) are decoded by their
recipe into ``inputs`` and handed to the controller (its emulated control script reads the registers).
Unknown output variables are answered NOT_FOUND (the client then refuses to start, as with a real controller).
"""
from __future__ import annotations

import array
import fcntl
import re
import socket
import socketserver
import struct
import termios
import threading
import time

from ..loop.scheduler import sleep_until_next
from .tcp import ThreadedServer
from .ur_controller import URController

PORT = 30004
V, v, M, U, O, I, S, P = (ord(c) for c in "VvMUOISP")
# RTDE types: struct format per type
FORMATS = {"DOUBLE": "d", "VECTOR6D": "6d", "VECTOR3D": "3d", "INT32": "i", "UINT32": "I", "UINT64": "Q",
           "VECTOR6INT32": "6i", "UINT8": "B", "BOOL": "?"}
_OUTPUT_TYPES = {
    "DOUBLE": ("timestamp", "actual_execution_time", "speed_scaling", "target_speed_fraction", "actual_momentum",
               "actual_main_voltage", "actual_robot_voltage", "actual_robot_current", "standard_analog_input0",
               "standard_analog_input1", "standard_analog_output0", "standard_analog_output1", "payload"),
    "VECTOR6D": ("target_q", "target_qd", "target_qdd", "target_current", "target_moment", "actual_q", "actual_qd",
                 "actual_current", "actual_current_as_torque", "joint_control_output", "actual_TCP_pose",
                 "actual_TCP_speed", "actual_TCP_force", "target_TCP_pose", "target_TCP_speed", "joint_temperatures",
                 "actual_joint_voltage", "ft_raw_wrench", "payload_inertia"),
    "VECTOR3D": ("actual_tool_accelerometer", "payload_cog"),
    "UINT64": ("actual_digital_input_bits", "actual_digital_output_bits"),
    "INT32": ("robot_mode", "safety_mode", "safety_status"),
    "VECTOR6INT32": ("joint_mode",),
    "UINT32": ("runtime_state", "robot_status_bits", "safety_status_bits", "output_bit_registers0_to_31",
               "output_bit_registers32_to_63"),
}
OUTPUT_TYPES = {name: t for t, names in _OUTPUT_TYPES.items() for name in names}
_INPUT_TYPES = {
    "UINT8": ("standard_digital_output_mask", "standard_digital_output", "tool_digital_output_mask",
              "tool_digital_output", "configurable_digital_output_mask", "configurable_digital_output",
              "standard_analog_output_mask", "standard_analog_output_type"),
    "UINT32": ("speed_slider_mask", "input_bit_registers0_to_31", "input_bit_registers32_to_63"),
    "DOUBLE": ("speed_slider_fraction", "standard_analog_output_0", "standard_analog_output_1"),
    "VECTOR6D": ("external_force_torque",),
}
INPUT_TYPES = {name: t for t, names in _INPUT_TYPES.items() for name in names}
_REGISTER = re.compile(r"(input|output)_(int|double)_register_(\d+)$")


def variable_type(name: str, output: bool) -> str | None:
    """The RTDE type of a variable (None: this controller has no such variable)."""
    m = _REGISTER.match(name)
    if m:
        if (m.group(1) == "output") != output or int(m.group(3)) > 47:
            return None
        return "INT32" if m.group(2) == "int" else "DOUBLE"
    return (OUTPUT_TYPES if output else INPUT_TYPES).get(name)


def frame(kind: int, payload: bytes = b"") -> bytes:
    return struct.pack(">HB", len(payload) + 3, kind) + payload


class _Connection(socketserver.BaseRequestHandler):
    server: "RTDEServer"

    def setup(self) -> None:
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.send_lock = threading.Lock()
        self.output: list[str] = []
        self.output_format = ""
        self.frequency = 500.0
        self.inputs: list[tuple[list[str], str]] = []  # recipe id k+1: (names, struct format)
        self.streaming = threading.Event()
        self.closed = False
        self.reading = False  # a message's first bytes are read, it is not yet handled
        self._queued = array.array("i", [0])
        self.server.connections.add(self)

    def finish(self) -> None:
        self.server.connections.discard(self)

    def pending(self) -> bool:
        """Something the client sent is not handled yet: bytes in the socket, or a message being read."""
        if self.reading:
            return True
        try:
            fcntl.ioctl(self.request.fileno(), termios.FIONREAD, self._queued)
        except OSError:
            return False
        return self._queued[0] > 0

    def _send(self, kind: int, payload: bytes = b"") -> None:
        with self.send_lock:
            self.request.sendall(frame(kind, payload))

    def _recv_exact(self, k: int) -> bytes | None:
        buf = b""
        while len(buf) < k:
            chunk = self.request.recv(k - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def handle(self) -> None:
        streamer = threading.Thread(target=self._stream, daemon=True)
        streamer.start()
        try:
            while not self.server.stopping:
                head = self._recv_exact(3)
                if head is None:
                    return
                self.reading = True
                size, kind = struct.unpack(">HB", head)
                body = self._recv_exact(size - 3) if size > 3 else b""
                if body is None:
                    return
                self._on_message(kind, body)
                self.reading = False
        except OSError:
            return
        finally:
            self.closed = True
            self.streaming.set()

    def _on_message(self, kind: int, body: bytes) -> None:
        if kind == V:
            self._send(V, b"\x01" if len(body) == 2 and struct.unpack(">H", body)[0] in (1, 2) else b"\x00")
        elif kind == v:
            self._send(v, struct.pack(">IIII", *self.server.controller.version))
        elif kind == O:
            self.frequency = struct.unpack(">d", body[:8])[0]
            names = [x for x in body[8:].decode().split(",") if x]
            types = [variable_type(x, True) or "NOT_FOUND" for x in names]
            if "NOT_FOUND" not in types:
                self.output = names
                self.output_format = ">B" + "".join(FORMATS[t] for t in types)
            self._send(O, b"\x01" + ",".join(types).encode())
        elif kind == I:
            names = [x for x in body.decode().split(",") if x]
            types = [variable_type(x, False) or "NOT_FOUND" for x in names]
            used = self.server.claim_inputs(self, names) if "NOT_FOUND" not in types else set()
            types = ["IN_USE" if x in used else t for x, t in zip(names, types)]
            self.inputs.append((names, ">" + "".join(FORMATS.get(t, "") for t in types)))
            self._send(I, bytes([len(self.inputs)]) + ",".join(types).encode())
        elif kind == S:
            ok = bool(self.output) and 0.0 < self.frequency <= 500.0
            self._send(S, b"\x01" if ok else b"\x00")
            if ok:
                self.streaming.set()
        elif kind == P:
            self.streaming.clear()
            self._send(P, b"\x01")
        elif kind == U and body:
            recipe = body[0]
            if 1 <= recipe <= len(self.inputs):
                names, fmt = self.inputs[recipe - 1]
                try:
                    values = struct.unpack(fmt, body[1:])
                except struct.error:
                    return
                self.server.take_inputs(dict(zip(names, values)))

    def _stream(self) -> None:
        ctl = self.server.controller
        while not self.closed and not self.server.stopping:
            self.streaming.wait()
            if self.closed:
                return
            period = 1.0 / self.frequency
            nxt = time.monotonic() + period
            while self.streaming.is_set() and not self.closed and not self.server.stopping:
                if not self.server.silent:
                    out = ctl.outputs()
                    values = [1]  # the output recipe's id
                    for name in self.output:
                        x = out.get(name, 0)
                        if isinstance(x, (int, float)):
                            values.append(x)
                        else:
                            values.extend(x)
                    try:
                        self._send(U, struct.pack(self.output_format, *values))
                    except OSError:
                        return
                nxt = sleep_until_next(nxt, period)


class RTDEServer(ThreadedServer):
    """``silent`` = fault injection: no data packages (the client times out)."""

    def __init__(self, controller: URController, host: str = "127.0.0.1", port: int = PORT):
        super().__init__((host, port), _Connection)
        self.controller = controller
        self.stopping = False
        self.silent = False
        self.inputs: dict = {}  # the latest value of every input variable any client wrote
        self.connections: set = set()
        controller.inputs_pending = self.pending
        self._owners: dict = {}  # input variable → the connection that set it up
        self._lock = threading.Lock()

    def claim_inputs(self, conn, names) -> set:
        """Input variables another live connection owns (IN_USE); the rest become ``conn``'s."""
        with self._lock:
            used = {x for x in names if x in self._owners and self._owners[x] is not conn
                    and not self._owners[x].closed}
            for x in set(names) - used:
                self._owners[x] = conn
            return used

    def pending(self) -> bool:
        """Some client sent what is not handled yet (the controller's watchdog waits for it: it came in time)."""
        return any(c.pending() for c in list(self.connections))

    def take_inputs(self, values: dict) -> None:
        with self._lock:
            self.inputs.update(values)
        self.controller.take_inputs(values)

    def close(self) -> None:
        self.stopping = True  # (the streaming threads end with their connections)
        super().close()
