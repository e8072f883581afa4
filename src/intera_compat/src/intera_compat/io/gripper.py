"""The Rethink electric parallel gripper (``right_gripper`` on IO node ``end_effector``), simulated: its IO device
with every signal intera_interface's Gripper reads or writes (contract §2.9), and fingers that move at the commanded
speed, stop on an object between them and hold it.

Behaviour, as a robot user expects of the real one:

* ``calibrate`` True → the fingers open fully (busy, ``is_moving``), then ``is_calibrated``; ``calibrate`` reads
  False again once done. ``reboot`` True → calibration lost, error cleared, the fingers stop.
* ``position_m`` (0 closed … 0.041667 m open) is the target, refused while not calibrated (a real gripper does not
  know where its fingers are); ``go`` False stops the fingers where they are, True resumes.
* ``cmd_grip`` True closes (target 0), False opens; ``speed_mps`` 0.15–3.0 m/s.
* An object (the simulator's ``object_width_m`` input) stops closing fingers at its width: ``is_gripping`` and
  ``force_response_n`` (the holding force) while the target lies beyond the object by more than ``dead_zone_m``.
* ``has_error`` is set by the simulator (``has_error`` input); a moving gripper in error stops.
* ``right_gripper_tip_object_kg`` (0–``PAYLOAD_MAX`` kg) is kept and read back (not added to the arm's
  dynamics: the simulated plant carries no tool).
"""
from __future__ import annotations

from .device import IODevice, Signal

MAX_POSITION = 0.041667  # m, fully open
SPEED_RANGE = (0.15, 3.0)  # m/s
DEAD_ZONE_RANGE = (0.0, 0.01)  # m
PAYLOAD_MAX = 4.0  # kg (Sawyer's rated payload)
HOLD_FORCE = 20.0  # N: what the fingers press an object with
CALIBRATION_SPEED = 0.05  # m/s the fingers open at while calibrating


class GripperDevice(IODevice):
    """The IO device, with the simulator's extra input (``object_width_m``: an object's width between the fingers,
    <= 0 none) kept apart from the signals."""

    def __init__(self, name: str, signals, config, sim):
        super().__init__(name, signals, config)
        self.sim = sim

    def set_inputs(self, values: dict) -> None:
        values = dict(values)
        if "object_width_m" in values:
            w = values.pop("object_width_m")
            if isinstance(w, bool) or not isinstance(w, (int, float)) or w != w:
                raise ValueError(f"object_width_m is a width in m (<= 0: none), got {w!r}")
            self.sim.object_width = float(w) if w > 0 else None
            self.version += 1
        super().set_inputs(values)


class ElectricGripper:
    """``device`` for the IO server; ``step(dt)`` advances the fingers (True when a signal changed)."""

    def __init__(self, name: str = "right_gripper"):
        self.name = name
        b = dict(type="bool")
        w = dict(writable=True, role="output")
        sigs = [Signal("calibrate", **b, **w), Signal("cmd_grip", **b, **w), Signal("go", **b, **w, value=True),
                Signal("reboot", **b, **w), Signal("has_error", **b), Signal("is_calibrated", **b),
                Signal("is_gripping", **b), Signal("is_moving", **b),
                Signal("position_m", "float", value=MAX_POSITION, span=(0.0, MAX_POSITION), **w),
                Signal("position_response_m", "float"),
                Signal("speed_mps", "float", value=SPEED_RANGE[1], span=SPEED_RANGE, **w),
                Signal("dead_zone_m", "float", value=0.002, span=DEAD_ZONE_RANGE, **w),
                Signal("force_response_n", "float"),
                Signal(f"{name}_tip_object_kg", "float", span=(0.0, PAYLOAD_MAX), **w)]
        config = {"type": "ElectricParallelGripper", "props": {"type": "ElectricParallelGripper"},
                  "params": {"max_position_m": MAX_POSITION, "speed_mps": list(SPEED_RANGE)}}
        self.device = GripperDevice(name, sigs, config, self)
        self.device.writer = self._check
        self.device.on_applied = self._applied
        self.object_width: float | None = None
        self.position = 0.0  # where the fingers are (m, 0 closed), before calibration: unknown to the user
        self._calibrating = False

    def _sig(self, name):
        return self.device.signals[name]

    def _check(self, changes) -> None:
        """A ``set`` before it is applied: refuse what the gripper cannot do (nothing changes)."""
        names = {s.name for s, _ in changes}
        calibrated = self._sig("is_calibrated").value
        for s, v in changes:
            if s.name in ("position_m", "cmd_grip") and not calibrated and "calibrate" not in names:
                raise ValueError(f"{s.name}: the gripper is not calibrated (set calibrate true first)")
            if s.name == "position_m" and self._sig("has_error").value:
                raise ValueError("position_m: the gripper is in error (reboot it)")

    def _applied(self, changes) -> None:
        """A ``set`` was applied: start what it asked for."""
        d = self.device.signals
        for sig, v in changes:
            if sig.name == "reboot" and v:
                sig.value = False
                d["is_calibrated"].value = d["has_error"].value = d["calibrate"].value = False
                self._calibrating = False
                d["position_m"].value = self.position
            elif sig.name == "calibrate" and v:
                self._calibrating = True
                d["is_calibrated"].value = False
            elif sig.name == "cmd_grip":
                d["position_m"].value = 0.0 if v else MAX_POSITION

    def step(self, dt: float) -> bool:
        """Advance the fingers by ``dt`` s; True when a state message must show a change."""
        d = self.device.signals
        before = (d["is_moving"].value, d["is_gripping"].value, d["is_calibrated"].value, d["calibrate"].value,
                  round(self.position, 5), d["force_response_n"].value)
        moving = False
        if d["has_error"].value:
            self._calibrating = False
        elif self._calibrating:
            self.position = min(MAX_POSITION, self.position + CALIBRATION_SPEED * dt)
            moving = self.position < MAX_POSITION
            if not moving:
                self._calibrating = False
                d["calibrate"].value = False
                d["is_calibrated"].value = True
                d["position_m"].value = MAX_POSITION
        elif d["is_calibrated"].value and d["go"].value:
            target = d["position_m"].value
            stop = max(target, self.object_width) if self.object_width is not None and \
                self.object_width <= self.position + 1e-9 else target
            step = d["speed_mps"].value * dt
            if abs(stop - self.position) > 1e-9:
                self.position += max(-step, min(step, stop - self.position))
                moving = abs(stop - self.position) > 1e-9
        gripping = (self.object_width is not None and not moving and d["is_calibrated"].value
                    and abs(self.position - self.object_width) < 1e-6
                    and d["position_m"].value < self.object_width - d["dead_zone_m"].value)
        d["is_moving"].value = moving
        d["is_gripping"].value = gripping
        d["force_response_n"].value = HOLD_FORCE if gripping else 0.0
        d["position_response_m"].value = round(self.position, 6)
        after = (moving, gripping, d["is_calibrated"].value, d["calibrate"].value, round(self.position, 5),
                 d["force_response_n"].value)
        if after != before:
            self.device.version += 1
            return True
        return False
