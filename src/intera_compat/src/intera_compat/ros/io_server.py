"""The IO framework over ROS (contract §1.10, §2.9): ``/io/<node>/<device>/{config,state,command}``
for each ``io.device.IODevice``, and ``/io/<node>/{config,state}`` for the node.

* config: latched, once (a ``time`` with ``secs != 0``);
* state: latched, on every change and at ``state_pub_rate_hz``, every message with a new ``time``;
  ``commands``/``responses``: the last 100 command stamps and their errors ('' = applied);
* command: de-duplicated by ``time``, applied before the state that acknowledges it goes out;
* the simulated hardware presses buttons through ``/robot/sim/io/<device>`` (an IOComponentCommand
  like a ``set``, which may also change the device's inputs).
"""
from __future__ import annotations

import json
import threading
from collections import deque

import rospy
from intera_core_msgs.msg import (IOComponentCommand, IOComponentConfiguration, IOComponentStatus, IODataStatus,
                                  IODeviceConfiguration, IODeviceStatus, IONodeConfiguration, IONodeStatus, IOStatus)

from ..io.device import COMMAND_HISTORY, IODevice

_READY = IOStatus(tag=IOStatus.READY, id="", detail="{}")
ONE_NS = rospy.Duration(0, 1)


class Stamper:
    """Strictly increasing stamps with ``secs != 0`` (the client ignores a repeated or zero time,
    and a simulated clock starts at 0)."""

    def __init__(self):
        self.last = rospy.Time(0)
        self.lock = threading.Lock()

    def __call__(self) -> rospy.Time:
        with self.lock:
            t = max(rospy.Time.now(), rospy.Time(1), self.last + ONE_NS)
            self.last = t
            return t


class IODeviceServer:
    def __init__(self, node: str, device: IODevice, stamp: Stamper, on_change=None, sim: bool = True):
        self.node, self.dev, self.stamp, self.on_change = node, device, stamp, on_change
        base = f"/io/{node}/{device.name}"
        self.lock = threading.Lock()
        self.pub_config = rospy.Publisher(f"{base}/config", IODeviceConfiguration, queue_size=1, latch=True)
        self.pub_state = rospy.Publisher(f"{base}/state", IODeviceStatus, queue_size=10, latch=True)
        self.publish_config()
        rospy.Subscriber(f"{base}/command", IOComponentCommand, self._on_command, queue_size=20)
        if sim:
            rospy.Subscriber(f"/robot/sim/io/{device.name}", IOComponentCommand, self._on_sim_input, queue_size=20)
        self.publish_state()

    def publish_config(self) -> None:
        """The device's configuration (latched, a new time): at start and whenever it changes (a reconfigure)."""
        with self.lock:
            d = self.dev
            cfg = json.dumps(d.config, sort_keys=True)
            signals = [IOComponentConfiguration(name=s.name, config=json.dumps({"format": json.loads(s.format)}))
                       for s in d.signals.values()]
            self.pub_config.publish(IODeviceConfiguration(
                time=self.stamp(), commanded=cfg, upgraded=cfg, device=IOComponentConfiguration(name=d.name, config=cfg),
                ports=[], signals=signals))

    def _on_command(self, msg: IOComponentCommand) -> None:
        with self.lock:
            new, err = self.dev.command((msg.time.secs, msg.time.nsecs), msg.op, msg.args)
        if not new:
            return
        if err:
            rospy.logerr(f"/io/{self.node}/{self.dev.name}/command refused: {err}; nothing changed")
        elif self.on_change is not None:
            self.on_change(self.dev)
        self.publish_state()

    def _on_sim_input(self, msg: IOComponentCommand) -> None:
        try:
            args = json.loads(msg.args)
            values = {k: v["data"][0] for k, v in args["signals"].items()}
            with self.lock:
                self.dev.set_inputs(values)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
            rospy.logerr(f"/robot/sim/io/{self.dev.name} refused: {e} (args: {msg.args!r}); expected "
                         '{"signals": {"<name>": {"data": [<value>]}}}')
            return
        if self.on_change is not None:
            self.on_change(self.dev)
        self.publish_state()

    def publish_state(self) -> None:
        with self.lock:
            d = self.dev
            st = IODeviceStatus(
                time=self.stamp(),
                device=IOComponentStatus(name=d.name, status=IOStatus(tag=d.tag, id="", detail=d.detail)),
                ports=[],
                signals=[IODataStatus(name=s.name, format=s.format, data=s.data, status=_READY if s.name not in
                                      d.signal_errors else IOStatus(tag=IOStatus.ERROR, id="", detail=json.dumps(
                                          {"last_command_error": d.signal_errors[s.name]})))
                         for s in d.signals.values()],
                commands=[rospy.Time(secs, nsecs) for (secs, nsecs), _ in d.commands],
                responses=[err for _, err in d.commands])
            # (published under the lock: three threads publish, and a state built earlier must not go out after a
            # newer one — clients drop only a repeated time, so they would take the older state; publish queues)
            self.pub_state.publish(st)


class IONodeServer:
    """A node's devices, plus its node-level config and state, published at ``rate_hz`` and on changes.

    ``node_command(op, args)`` (optional) handles ``/io/<node>/command`` (e.g. a ClickSmart's ``activate`` /
    ``reconfigure``): de-duplicated by ``time``, acknowledged in the node state's ``commands``; a ValueError it
    raises changes nothing and shows as the node status' ``detail``."""

    def __init__(self, node: str, devices: list[IODevice], on_change=None, rate_hz: float = 5.0, sim: bool = True,
                 node_command=None, plugins=()):
        self.node = node
        self.stamp = Stamper()
        self.lock = threading.Lock()
        self.devices = [IODeviceServer(node, d, self.stamp, on_change, sim) for d in devices]
        # not latched, as on the robot (5 Hz and on changes): a client that waits for the node's state before its
        # one node command (SimpleClickSmartGripper.initialize's activate) then waits long enough for its new
        # publisher to be connected; latched, the state came at once and the command went to nobody
        self.pub_config = rospy.Publisher(f"/io/{node}/config", IONodeConfiguration, queue_size=1)
        self.pub_state = rospy.Publisher(f"/io/{node}/state", IONodeStatus, queue_size=10)
        self._node_cfg = IOComponentConfiguration(name=node, config=json.dumps({"type": "RobotNode"}))
        self._node_command = node_command
        self._plugins = list(plugins)  # IOComponentConfiguration (e.g. the camera plugin's params.cameras)
        self._commands: deque = deque(maxlen=COMMAND_HISTORY)
        self._detail = "{}"
        if node_command is not None:
            rospy.Subscriber(f"/io/{node}/command", IOComponentCommand, self._on_command, queue_size=20)
        self._timer = rospy.Timer(rospy.Duration(1.0 / rate_hz), self._tick)

    def device(self, name: str) -> IODeviceServer:
        return next(s for s in self.devices if s.dev.name == name)

    def _on_command(self, msg: IOComponentCommand) -> None:
        key = (msg.time.secs, msg.time.nsecs)
        with self.lock:
            if key in self._commands:
                return
            try:
                args = json.loads(msg.args)
                if not isinstance(args, dict):
                    raise ValueError("args must be a JSON object")
                self._node_command(msg.op, args)
                self._detail = "{}"
            except ValueError as e:  # (json's errors are ValueErrors too)
                self._detail = json.dumps({"last_command_error": f"{msg.op}: {e}"})
                rospy.logerr(f"/io/{self.node}/command refused: {msg.op}: {e}; nothing changed")
            self._commands.append(key)
        self.publish_node()

    def publish_node(self) -> None:
        """The node's config and state (devices and their tags, recent commands), each with a new time."""
        with self.lock:
            devs = [s.dev for s in self.devices]
            t = self.stamp()
            self.pub_config.publish(IONodeConfiguration(
                time=t, node=self._node_cfg, plugins=self._plugins,
                devices=[IOComponentConfiguration(name=d.name, config=json.dumps(d.config, sort_keys=True))
                         for d in devs]))
            self.pub_state.publish(IONodeStatus(
                time=self.stamp(), node=IOComponentStatus(name=self.node, status=IOStatus(
                    tag=IOStatus.READY, id="", detail=self._detail)),
                devices=[IOComponentStatus(name=d.name, status=IOStatus(tag=d.tag, id="", detail="{}")) for d in devs],
                commands=[rospy.Time(secs, nsecs) for secs, nsecs in self._commands]))

    def _tick(self, _event) -> None:
        try:
            self.publish_node()
            for s in self.devices:
                s.publish_state()
        except rospy.ROSException:
            pass

    def shutdown(self) -> None:
        self._timer.shutdown()
