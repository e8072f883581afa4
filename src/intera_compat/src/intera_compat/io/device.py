"""Intera IO-framework devices as plain state machines (no ROS): signals with a type, a role and a
value; ``set`` commands de-duplicated by their time stamp, applied, and acknowledged; the
snapshot a state message is built from.

Protocol (contract §2.9): the client re-sends a command every 0.1 s until its ``time`` shows up in
the state's ``commands`` (the last 100), and reads the new value right after that ack, so the
value is applied before the command is acknowledged. A command that cannot be applied (JSON that
does not parse, an op other than ``set``, an unknown or read-only signal, a value of the wrong
type) changes nothing and is acknowledged with the error in the parallel ``responses`` entry and
in the device status ``detail`` (the client stops re-sending; a log names the field).
"""
from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field

TYPES = {"bool": bool, "int": int, "float": float, "string": str}
COMMAND_HISTORY = 100


@dataclass
class Signal:
    name: str
    type: str  # bool | int | float | string
    role: str = "input"  # as the real robot declares it (lights say "input" and are still writable)
    value: object = None
    writable: bool = False  # by ``set`` commands (inputs are changed by the hardware, or the sim)
    extra: dict = field(default_factory=dict)  # more format keys (e.g. data_type)
    span: tuple | None = None  # (low, high) a command's value must lie in (outside: refused)

    def __post_init__(self):
        if self.type not in TYPES:
            raise ValueError(f"signal {self.name}: type must be one of {sorted(TYPES)}")
        if self.value is None:
            self.value = TYPES[self.type]()

    @property
    def format(self) -> str:
        return json.dumps({"role": self.role, "type": self.type, **self.extra}, sort_keys=True)

    @property
    def data(self) -> str:
        return json.dumps([self.value])


def coerce(sig: Signal, value):
    """``value`` as the signal's type, or ValueError naming the signal (no silent bool→int etc.)."""
    t = sig.type
    if t == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
    elif t == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif t == "float":
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value \
                and abs(value) != float("inf"):
            return float(value)
    elif t == "string" and isinstance(value, str):
        return value
    raise ValueError(f"signal '{sig.name}' is {t}, got {value!r}")


def _named(args) -> list:
    """The signal names a ``set`` command's args name (none if they do not parse)."""
    try:
        a = json.loads(args)
        return list(a["signals"]) if isinstance(a, dict) and isinstance(a.get("signals"), dict) else []
    except (TypeError, ValueError):
        return []


class IODevice:
    """One device (``/io/<node>/<name>``): its signals, recent command stamps and responses."""

    def __init__(self, name: str, signals: list[Signal], config: dict | None = None):
        self.name = name
        self.signals = {s.name: s for s in signals}
        self.config = dict(config or {})
        self.commands: deque = deque(maxlen=COMMAND_HISTORY)  # (stamp key, response)
        self._seen: set = set()
        self.detail = "{}"
        self.tag = "ready"  # the device's IOStatus tag (down | ready | busy | unready | error)
        self.signal_errors: dict[str, str] = {}  # signal → why the last set of it was refused (its status: error)
        self.version = 0  # bumps on every change a state message must show
        # hardware to write before a set is applied: writer([(signal, value), ...]); a ValueError it raises
        # refuses the command (nothing changes, the error is the response)
        self.writer = None
        # what a set starts, once applied (before the state that acknowledges it): on_applied([(signal, value)])
        self.on_applied = None

    def value(self, name: str):
        return self.signals[name].value

    def command(self, stamp, op: str, args: str) -> tuple[bool, str]:
        """Handle one command: (new — not a re-send of one already handled, error message or '')."""
        if stamp in self._seen:
            return False, ""
        try:
            changes = self._parse(op, args)
            if self.writer is not None:
                self.writer(changes)
            for sig, v in changes:
                sig.value = v
            if self.on_applied is not None:
                self.on_applied(changes)
            err = ""
        except ValueError as e:
            err = str(e)
        for name in _named(args):  # (the signals a command names show whether their last set took)
            if name in self.signals:
                if err:
                    self.signal_errors[name] = err
                else:
                    self.signal_errors.pop(name, None)
        if len(self.commands) == COMMAND_HISTORY:
            self._seen.discard(self.commands[0][0])
        self.commands.append((stamp, err))
        self._seen.add(stamp)
        self.detail = json.dumps({"last_command_error": err}) if err else "{}"
        self.version += 1
        return True, err

    def _parse(self, op: str, args: str) -> list:
        if op != "set":
            raise ValueError(f"op '{op}' is not supported (only 'set')")
        try:
            a = json.loads(args)
        except (TypeError, ValueError) as e:
            raise ValueError(f"args is not JSON: {e}") from None
        if not isinstance(a, dict) or not isinstance(a.get("signals"), dict) or set(a) - {"signals"}:
            raise ValueError("args must be {\"signals\": {name: {\"data\": [value]}}} (this device has no ports)")
        out = []
        for name, spec in a["signals"].items():
            sig = self.signals.get(name)
            if sig is None:
                raise ValueError(f"signal '{name}' does not exist on device '{self.name}'")
            if not sig.writable:
                raise ValueError(f"signal '{name}' is read-only (an {sig.role})")
            data = spec.get("data") if isinstance(spec, dict) else None
            if not isinstance(data, list) or len(data) != 1:
                raise ValueError(f"signal '{name}': data must be a one-element array")
            v = coerce(sig, data[0])
            if sig.span is not None and not sig.span[0] <= v <= sig.span[1]:
                raise ValueError(f"signal '{name}' must lie in [{sig.span[0]:g}, {sig.span[1]:g}], got {v!r}")
            out.append((sig, v))
        return out

    def set_inputs(self, values: dict) -> None:
        """The hardware (or the sim) changes signals, read-only ones included; ValueError names a bad one."""
        changes = []
        for name, v in values.items():
            sig = self.signals.get(name)
            if sig is None:
                raise ValueError(f"signal '{name}' does not exist on device '{self.name}'")
            changes.append((sig, coerce(sig, v)))
        for sig, v in changes:
            sig.value = v
        if changes:
            self.version += 1


def cuff() -> IODevice:
    b = dict(role="input", type="int")
    return IODevice("cuff", [Signal("right_button_lower", **b), Signal("right_button_upper", **b),
                             Signal("right_cuff", **b)],
                    {"type": "RobotDevice", "update_rate_hz": 50, "state_pub_rate_hz": 5.0,
                     "params": {"released": 0, "pressed": 1, "long_hold": 2, "double_click": 3,
                                "long_hold_duration": 0.5, "double_click_duration": 0.4}})


def navigator() -> IODevice:
    sigs = [Signal(f"{side}_button_{b}", "int") for side in ("right", "head")
            for b in ("back", "circle", "ok", "show", "square", "triangle")]
    sigs += [Signal(f"{side}_wheel", "int", extra={"data_type": "u8"}) for side in ("right", "head")]
    return IODevice("navigator", sigs, {"type": "RobotDevice", "update_rate_hz": 50, "state_pub_rate_hz": 5.0})


def lights() -> IODevice:
    return IODevice("robot", [Signal(f"{part}_{c}_light", "bool", writable=True)
                              for part in ("head", "right_hand") for c in ("red", "green", "blue")],
                    {"type": "RobotDevice", "update_rate_hz": 50, "state_pub_rate_hz": 5.0})
