"""The legacy DigitalIO interface (contract §1.13; intera_interface's DigitalIO, used by no example): every button
and light of an IO node's devices as a component ``/robot/digital_io/<name>/state`` (DigitalIOState: 1 on / pressed,
``isInputOnly``; latched, on every change and at ``RATE_HZ``), lights switched by ``/robot/digital_io/command``
(DigitalOutputCommand) through the same devices the IO framework serves — one state, two interfaces. A "Legacy
digital IO" status on ``/diagnostics`` once a second counts the commands received, refused and applied (what shows
that a refused command arrived)."""
from __future__ import annotations

import threading

import rospy
from intera_core_msgs.msg import DigitalIOState, DigitalOutputCommand

from .command_counts import CommandCounts

RATE_HZ = 10.0
STATUS_EVERY = 10  # state ticks between two diagnostics statuses (1 s)


class LegacyDigitalIO:
    """``server``: an IONodeServer; ``on_change(dev)``: what a change of a device must also do (the cuff's zero-G)."""

    def __init__(self, server, on_change=None):
        self.server, self.on_change = server, on_change
        self.components = {}  # name → (device server, signal)
        for srv in server.devices:
            for sig in srv.dev.signals.values():
                if sig.type == "bool" or (sig.type == "int" and "data_type" not in sig.extra):  # (not the wheels)
                    self.components[sig.name] = (srv, sig)
        self.pubs = {name: rospy.Publisher(f"/robot/digital_io/{name}/state", DigitalIOState, queue_size=1,
                                           latch=True) for name in self.components}
        self._last: dict = {}
        self._lock = threading.Lock()  # (the timer and the subscribers publish: a newer state never overtaken)
        self.counts = CommandCounts("Legacy digital IO", "digital_io", "digital_io", ("refused", "applied"))
        self._ticks = 0
        rospy.Subscriber("/robot/digital_io/command", DigitalOutputCommand, self._on_command, queue_size=10)
        self.publish(force=True)
        self._timer = rospy.Timer(rospy.Duration(1.0 / RATE_HZ), self._tick)

    def _tick(self, _event) -> None:
        self._ticks += 1
        try:
            self.publish(force=True)
            if self._ticks % STATUS_EVERY == 1:
                self.counts.publish()
        except rospy.ROSException:  # (publishing into a node going down: its timer fires once more)
            if not rospy.core.is_shutdown_requested():
                raise

    def publish(self, force: bool = False) -> None:
        """Each component's state (those that changed, or all)."""
        with self._lock:
            for name, (_, sig) in self.components.items():
                on = int(bool(sig.value))
                if force or self._last.get(name) != on:
                    self._last[name] = on
                    self.pubs[name].publish(DigitalIOState(state=on, isInputOnly=not sig.writable))

    def _on_command(self, msg: DigitalOutputCommand) -> None:
        comp = self.components.get(msg.name)
        if comp is None:
            self.counts.count("refused")
            rospy.logerr(f"/robot/digital_io/command refused: name {msg.name!r} is no component "
                         f"(one of {sorted(self.components)})")
            return
        srv, sig = comp
        if not sig.writable:
            self.counts.count("refused")
            rospy.logerr(f"/robot/digital_io/command refused: {msg.name} is input only")
            return
        with srv.lock:
            srv.dev.set_inputs({msg.name: bool(msg.value) if sig.type == "bool" else int(msg.value)})
        srv.publish_state()
        self.counts.count("applied")
        if self.on_change is not None:
            self.on_change(srv.dev)  # (which publishes the legacy states too)
        else:
            self.publish()
