"""A ClickSmart plate (``SmartToolPlate`` on IO node ``end_effector``), simulated: its configuration (the
``params.endpoints`` map intera_interface's SimpleClickSmartGripper reads — per endpoint, EE signal types such as
``grip``, ``open``, ``closed``, ``object_kg`` naming the device's signals), its signals, ``activate`` and
``reconfigure`` (contract §2.9).

* The device is ``unready`` until activated (node command ``activate``), then ``ready``.
* ``reconfigure`` replaces the configuration (checked first: a malformed one is refused, nothing changes); the
  signals follow it and the device needs activating again.
* A ``grip`` signal set True closes the endpoint's tool: after its ``actuationTimeS`` its ``closed`` signal reads
  True and ``open`` False (and the reverse when set False).
"""
from __future__ import annotations

import copy

from .device import IODevice, Signal

EE_SIGNAL_TYPES = {"grip": ("bool", True), "open": ("bool", False), "closed": ("bool", False),
                   "object_kg": ("float", True)}  # EE signal type → (signal type, writable)
ENDPOINT_KEYS = ("endpoint_id", "label", "type", "actuationTimeS")  # not signals
PAYLOAD_MAX = 4.0  # kg


def default_config(name: str = "stp_021709TP00213") -> dict:
    """A plate with one vacuum-cup endpoint."""
    return {"props": {"type": "SmartToolPlate", "name": name},
            "params": {"endpoints": {"vacuum_cup": {
                "endpoint_id": "vacuum_cup", "label": "Vacuum cup", "type": "vacuum_gripper",
                "actuationTimeS": 0.3, "grip": "vacuum_cup_grip", "open": "vacuum_cup_open",
                "closed": "vacuum_cup_closed", "object_kg": "vacuum_cup_object_kg"}}}}


def check_config(config) -> dict:
    """The configuration, or ValueError naming what is wrong with it."""
    if not isinstance(config, dict):
        raise ValueError(f"the configuration is a JSON object, got {type(config).__name__}")
    props = config.get("props")
    if not isinstance(props, dict) or props.get("type") != "SmartToolPlate":
        raise ValueError("props.type must be 'SmartToolPlate'")
    endpoints = (config.get("params") or {}).get("endpoints") if isinstance(config.get("params"), dict) else None
    if not isinstance(endpoints, dict) or not endpoints:
        raise ValueError("params.endpoints must map endpoint ids to their signals")
    names = set()
    for eid, ep in endpoints.items():
        if not isinstance(ep, dict):
            raise ValueError(f"params.endpoints.{eid} is not an object")
        t = ep.get("actuationTimeS", 0.0)
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 <= t <= 10.0:
            raise ValueError(f"params.endpoints.{eid}.actuationTimeS must be 0..10 s, got {t!r}")
        for key, sig in ep.items():
            if key in ENDPOINT_KEYS:
                continue
            if key not in EE_SIGNAL_TYPES:
                raise ValueError(f"params.endpoints.{eid}.{key}: unknown EE signal type (known: "
                                 f"{sorted(EE_SIGNAL_TYPES)})")
            if not isinstance(sig, str) or not sig or sig in names:
                raise ValueError(f"params.endpoints.{eid}.{key} must name a signal of its own, got {sig!r}")
            names.add(sig)
    return config


class ClickSmart:
    """``device`` for the IO server; ``activate()``, ``reconfigure(config)``, ``step(dt)``; ``tag`` for the node's
    state (unready | ready)."""

    def __init__(self, name: str = "stp_021709TP00213", config: dict | None = None):
        self.name = name
        self.device = IODevice(name, [], {})
        self.device.writer = self.check
        self.device.on_applied = self._applied
        self.tag = "unready"
        self._pending: dict = {}  # endpoint id → s until its tool reaches the commanded state
        self._load(check_config(copy.deepcopy(config or default_config(name))))

    def _load(self, config: dict) -> None:
        self.config = config
        self.endpoints = config["params"]["endpoints"]
        sigs = []
        for ep in self.endpoints.values():
            for key, sig in ep.items():
                if key in EE_SIGNAL_TYPES:
                    kind, writable = EE_SIGNAL_TYPES[key]
                    sigs.append(Signal(sig, kind, role="output" if writable else "input", writable=writable,
                                       value=True if key == "open" else None,
                                       span=(0.0, PAYLOAD_MAX) if key == "object_kg" else None))
        d = self.device
        d.signals = {s.name: s for s in sigs}
        d.config = config
        d.version += 1
        self._pending.clear()

    def activate(self) -> None:
        self.tag = "ready"
        self.device.version += 1

    def reconfigure(self, config) -> None:
        """ValueError (nothing changes) for a malformed configuration."""
        self._load(check_config(copy.deepcopy(config)))
        self.tag = "unready"

    def _applied(self, changes) -> None:
        for sig, _ in changes:
            for eid, ep in self.endpoints.items():
                if ep.get("grip") == sig.name:
                    self._pending[eid] = float(ep.get("actuationTimeS", 0.0))

    def check(self, changes) -> None:
        """A set before it is applied: nothing moves before activation."""
        if self.tag != "ready":
            raise ValueError(f"{self.name} is not activated (node command 'activate' first)")

    def step(self, dt: float) -> bool:
        """Advance the tools by ``dt`` s; True when a signal changed."""
        changed = False
        sig = self.device.signals
        for eid in list(self._pending):
            self._pending[eid] -= dt
            if self._pending[eid] > 0.0:
                continue
            del self._pending[eid]
            ep = self.endpoints[eid]
            closed = bool(sig[ep["grip"]].value)
            for key, value in (("closed", closed), ("open", not closed)):
                if key in ep and sig[ep[key]].value != value:
                    sig[ep[key]].value = value
                    changed = True
        if changed:
            self.device.version += 1
        return changed
