"""IO node ``end_effector`` (contract §1.11, §2.9): the tool on the flange, simulated — Rethink's electric gripper
(``right_gripper``), a ClickSmart plate, or nothing (``~tool``: electric_gripper | clicksmart | none).

What intera_interface's Gripper, SimpleClickSmartGripper and GripperFactory wait for: ``/io/end_effector/config``
with the tool as ``devices[0]`` (its config JSON's ``props.type``), ``/io/end_effector/state`` with its status tag
(``unready`` until calibrated / activated, ``ready``, ``error``), the device's config / state / command topics, and
the node commands ``activate`` / ``reconfigure`` for a ClickSmart. The tool is stepped at 100 Hz on the ROS clock
(simulated time included); its state goes out on every change, at most every ``STATE_PERIOD`` s while it moves.
"""
from __future__ import annotations

import rospy

from ..io.clicksmart import ClickSmart
from ..io.gripper import ElectricGripper
from .io_server import IONodeServer
from .node_init import init_node

TOOLS = ("electric_gripper", "clicksmart", "none")
STEP = 0.01  # s
STATE_PERIOD = 0.05  # s between state messages while the tool moves (a flag that changes goes out at once)


class EndEffectorNode:
    def __init__(self, tool: str):
        if tool not in TOOLS:
            raise ValueError(f"~tool is {tool!r}: one of {', '.join(TOOLS)}")
        self.tool = {"electric_gripper": ElectricGripper, "clicksmart": ClickSmart}.get(tool, lambda: None)()
        devices = [self.tool.device] if self.tool is not None else []
        self._sync_tag()
        self.server = IONodeServer("end_effector", devices, sim=True, node_command=self._node_command)
        self._last = rospy.get_time()
        self._published = self._last
        self._tag = self.tool.device.tag if self.tool is not None else ""
        self._flags = ()
        if self.tool is not None:
            self._timer = rospy.Timer(rospy.Duration(STEP), self._step)
        self.server.publish_node()

    def _sync_tag(self) -> None:
        """The electric gripper's tag follows its calibration (GripperFactory calibrates an ``unready`` one)."""
        if isinstance(self.tool, ElectricGripper):
            sig = self.tool.device.signals
            self.tool.device.tag = ("error" if sig["has_error"].value else
                                    "ready" if sig["is_calibrated"].value else "unready")
        elif isinstance(self.tool, ClickSmart):
            self.tool.device.tag = self.tool.tag

    def _node_command(self, op: str, args: dict) -> None:
        """activate / reconfigure (a ClickSmart's); ValueError names what cannot be done."""
        name = self.tool.name if self.tool is not None else None
        devices = args.get("devices")
        if op == "activate":
            if not isinstance(devices, list) or not devices:
                raise ValueError('args must be {"devices": ["<device id>"]}')
            unknown = [d for d in devices if d != name]
            if unknown:
                raise ValueError(f"no device {unknown[0]!r} on end_effector")
            if isinstance(self.tool, ClickSmart):
                with self._srv.lock:
                    self.tool.activate()
        elif op == "reconfigure":
            if not isinstance(devices, dict) or set(devices) != {name}:
                raise ValueError(f'args must be {{"devices": {{"{name}": <configuration>}}, "write_config": true}}')
            if not isinstance(self.tool, ClickSmart):
                raise ValueError(f"{name} is not a ClickSmart plate: its configuration is fixed")
            with self._srv.lock:
                self.tool.reconfigure(devices[name])
            self._srv.publish_config()
        else:
            raise ValueError(f"op {op!r} is not supported (activate, reconfigure)")
        self._sync_tag()
        self._srv.publish_state()

    @property
    def _srv(self):
        return self.server.devices[0]

    def _step(self, _event) -> None:
        now = rospy.get_time()
        dt = min(max(now - self._last, 0.0), 0.1)  # (a stalled process catches up at most 0.1 s)
        self._last = now
        srv = self._srv
        with srv.lock:
            changed = self.tool.step(dt)
            self._sync_tag()
            flags = tuple(s.value for s in srv.dev.signals.values() if s.type == "bool")
        if srv.dev.tag != self._tag:
            self._tag = srv.dev.tag
            self.server.publish_node()
        if changed and (flags != self._flags or now - self._published >= STATE_PERIOD):
            self._flags, self._published = flags, now
            srv.publish_state()


def main() -> None:
    init_node("io_end_effector")
    try:
        EndEffectorNode(rospy.get_param("~tool", "electric_gripper"))
    except ValueError as e:
        rospy.logfatal(str(e))
        raise SystemExit(1) from None
    rospy.spin()
