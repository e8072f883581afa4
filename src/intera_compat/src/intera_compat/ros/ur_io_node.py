"""A UR's IO as Intera IO devices (node ``ur``): ``/io/ur/{standard_io,tool_io}/{config,state,command}``.

The arm's IO state comes from its own RTDE stream (``RTDEReceiveInterface`` at ``~rate``: digital input and
output bits, analog inputs and outputs); ``set`` commands on output signals go to ``RTDEIOInterface``
(standard, configurable and tool digital outputs; analog outputs as a ratio of their span, 0..1), which the
controller applies without any program running. A command is acknowledged once the IO interface took it (a
refusal is the command's error and changes nothing); the state shows what the arm reports, except that a
digital output the arm has not confirmed yet keeps its commanded value for ``CONFIRM`` s. Analog outputs:
``analog_out_N`` is the ratio last commanded, ``analog_out_N_reported`` what the arm reports (V or mA, as its
output is configured on the pendant).

Bits of ``actual_digital_{input,output}_bits``: 0-7 standard, 8-15 configurable, 16-17 tool.
"""
from __future__ import annotations

import threading
import time

import rospy

from ..config import load_config
from ..hardware.ur import URSettings
from ..io.device import IODevice, Signal
from .io_server import IONodeServer
from .node_init import init_node

CONFIRM = 0.5  # s a commanded output keeps its value in the state before the arm's report wins
VARIABLES = ["timestamp", "actual_digital_input_bits", "actual_digital_output_bits", "standard_analog_input0",
             "standard_analog_input1", "standard_analog_output0", "standard_analog_output1"]


def standard_io() -> IODevice:
    sigs = [Signal(f"digital_in_{i}", "bool") for i in range(8)]
    sigs += [Signal(f"digital_out_{i}", "bool", role="output", writable=True) for i in range(8)]
    sigs += [Signal(f"configurable_in_{i}", "bool") for i in range(8)]
    sigs += [Signal(f"configurable_out_{i}", "bool", role="output", writable=True) for i in range(8)]
    sigs += [Signal(f"analog_in_{i}", "float") for i in range(2)]
    sigs += [Signal(f"analog_out_{i}", "float", role="output", writable=True, span=(0.0, 1.0)) for i in range(2)]
    sigs += [Signal(f"analog_out_{i}_reported", "float") for i in range(2)]
    return IODevice("standard_io", sigs, {"type": "URControlBox", "analog_out": "ratio of the span (0..1)"})


def tool_io() -> IODevice:
    sigs = [Signal(f"tool_digital_in_{i}", "bool") for i in range(2)]
    sigs += [Signal(f"tool_digital_out_{i}", "bool", role="output", writable=True) for i in range(2)]
    return IODevice("tool_io", sigs, {"type": "URTool"})


def reported(bits_in: int, bits_out: int, ain, aout) -> dict:
    """The signals' values from one RTDE sample."""
    v = {}
    for i in range(8):
        v[f"digital_in_{i}"] = bool(bits_in >> i & 1)
        v[f"digital_out_{i}"] = bool(bits_out >> i & 1)
        v[f"configurable_in_{i}"] = bool(bits_in >> (8 + i) & 1)
        v[f"configurable_out_{i}"] = bool(bits_out >> (8 + i) & 1)
    for i in range(2):
        v[f"tool_digital_in_{i}"] = bool(bits_in >> (16 + i) & 1)
        v[f"tool_digital_out_{i}"] = bool(bits_out >> (16 + i) & 1)
        v[f"analog_in_{i}"] = float(ain[i])
        v[f"analog_out_{i}_reported"] = float(aout[i])
    return v


class URIONode:
    def __init__(self):
        import rtde_io

        self.ip = rospy.get_param("~robot_ip", "") or URSettings.from_config(
            load_config(rospy.get_param("~config", None))).robot_ip
        self.rate = float(rospy.get_param("~rate", 50.0))
        self.period = 1.0 / self.rate
        end = time.monotonic() + float(rospy.get_param("~startup_timeout", 30.0))
        while True:
            try:
                self.recv = self._receive_interface()
                self.io = rtde_io.RTDEIOInterface(self.ip)
                break
            except RuntimeError as e:
                if time.monotonic() > end or rospy.is_shutdown():
                    raise RuntimeError(f"no UR controller at {self.ip}: {e}") from e
                time.sleep(0.5)
        self.pending: dict = {}  # digital output → (value, until): commanded, not yet reported by the arm
        self.devices = [standard_io(), tool_io()]
        for d in self.devices:
            d.writer = self._write  # (called under the device server's lock, before the set is applied)
        self.server = IONodeServer("ur", self.devices, sim=False)
        threading.Thread(target=self._poll, daemon=True, name="ur-io-poll").start()
        rospy.loginfo(f"UR IO on /io/ur/standard_io and /io/ur/tool_io ({self.ip})")

    def _write(self, changes) -> None:
        """A ``set`` about to be applied: each output to the arm (ValueError: refused, nothing changes)."""
        until = time.monotonic() + CONFIRM
        done = []
        for sig, v in changes:
            if not self._send(sig.name, v):
                for s, old in reversed(done):  # (all or nothing: the ones sent go back)
                    self._send(s.name, old)
                raise ValueError(f"the arm's IO interface did not take {sig.name} = {v!r} (link down?)")
            done.append((sig, sig.value))
        for sig, v in changes:
            if not sig.name.startswith("analog"):
                self.pending[sig.name] = (v, until)

    def _send(self, name: str, value) -> bool:
        kind, _, idx = name.rpartition("_")
        i = int(idx)
        try:
            if kind == "digital_out":
                return self.io.setStandardDigitalOut(i, value)
            if kind == "configurable_out":
                return self.io.setConfigurableDigitalOut(i, value)
            if kind == "tool_digital_out":
                return self.io.setToolDigitalOut(i, value)
            if kind == "analog_out":
                return self.io.setAnalogOutputVoltage(i, value)
        except RuntimeError:
            return False
        raise ValueError(f"{name} is not an output")

    def _poll(self) -> None:
        last_stamp = None
        while not rospy.is_shutdown():
            time.sleep(self.period)
            try:
                r = self.recv
                stamp = r.getTimestamp()
                if stamp == last_stamp:
                    continue
                last_stamp = stamp
                values = reported(r.getActualDigitalInputBits(), r.getActualDigitalOutputBits(),
                                  (r.getStandardAnalogInput0(), r.getStandardAnalogInput1()),
                                  (r.getStandardAnalogOutput0(), r.getStandardAnalogOutput1()))
            except RuntimeError:
                rospy.logerr_throttle(5.0, f"UR IO: no RTDE data from {self.ip}; reconnecting")
                self._reconnect()
                continue
            try:
                self._show(values)
            except Exception as e:  # (the thread must live on: a broken sample is logged and skipped)
                rospy.logerr_throttle(5.0, f"UR IO: a sample could not be shown: {e}")

    def _show(self, values: dict) -> None:
        """The arm's report into the devices' states (under each device's lock, as commands are applied: a state
        never acknowledges a command without its value)."""
        now = time.monotonic()
        for srv in self.server.devices:
            d = srv.dev
            with srv.lock:
                mine = {}
                for k in d.signals:
                    if k not in values:
                        continue  # (analog_out_N: the commanded ratio stays)
                    v = values[k]
                    if k in self.pending:
                        want, until = self.pending[k]
                        if v == want or now > until:
                            del self.pending[k]
                        else:
                            v = want  # (commanded, not yet reported)
                    mine[k] = v
                changed = any(d.signals[k].value != v for k, v in mine.items())
                if changed:
                    d.set_inputs(mine)
            if changed:
                srv.publish_state()

    def _receive_interface(self):
        import rtde_receive

        return rtde_receive.RTDEReceiveInterface(self.ip, self.rate, VARIABLES)

    def _reconnect(self) -> None:
        try:
            old, self.recv = self.recv, self._receive_interface()
            old.disconnect()  # (a new one, not reconnect(): that would drop the rate asked for)
            if not self.io.isConnected():
                self.io.reconnect()
        except RuntimeError:
            time.sleep(1.0)


def main():
    init_node("ur_io")
    URIONode()
    rospy.spin()
