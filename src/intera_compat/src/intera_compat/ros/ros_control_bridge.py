"""The ROS half of the ros_control backend (``hardware/ros_control.py`` is the loop's half), in the realtime_loop
node: ``/joint_states`` in (reordered to the config's joints, written to the loop's record, one poke per sample),
the loop's commands out as ``std_msgs/Float64MultiArray`` to the configured JointGroup*Controller, and the
optional speed-scaling topic (the UR driver's ``/speed_scaling_factor``).

Callbacks only copy: the joint-name → index map is built once per distinct name list.
"""
from __future__ import annotations

import os
import threading

import numpy as np
import rospy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray, MultiArrayDimension

from ..hardware.ros_control import RosControlSettings, in_layout, out_layout
from ..loop.shm import SeqlockRecord
from ..safety.faults import FAULT_CONTROLLER_ERROR


class RosControlBridge:
    def __init__(self, cfg, interface: str = "", rate: float = 0.0):
        self.s = s = RosControlSettings.from_config(cfg, interface, rate)
        self.interface, self.rate = interface, rate
        self.joints = list(s.joints)
        n = self.n = len(self.joints)
        self.hw_in = SeqlockRecord(in_layout(n), create=True)
        self.hw_out = SeqlockRecord(out_layout(n), create=True)
        self.hw_in.local.speed_scaling[0] = 1.0
        self.wake_r, self.wake_w = os.pipe()
        self.command_r, self.command_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        self._lock = threading.Lock()  # joint states and speed scaling write the same record
        self._maps: dict = {}  # tuple(msg.name) -> (their indices in config order, which of ours are missing)
        self._missing_logged = False
        self.samples = 0
        self.sent = 0
        self.stale = 0  # speed-scaling messages that were not finite numbers
        self._field = s.interface  # the out record's array that goes to the controller
        self.msg = Float64MultiArray()
        self.msg.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
        self.pub = rospy.Publisher(s.command_topic, Float64MultiArray, queue_size=1, tcp_nodelay=True)
        rospy.Subscriber(s.joint_states, JointState, self._on_joint_states, queue_size=1, tcp_nodelay=True)
        if s.speed_scaling:
            rospy.Subscriber(s.speed_scaling, Float64, self._on_scaling, queue_size=1, tcp_nodelay=True)
        self._sender = threading.Thread(target=self._send_loop, daemon=True)

    @property
    def link(self) -> dict:
        """What the loop process needs (pipe ends it inherits: ``pass_fds``)."""
        return {"in": self.hw_in.name, "out": self.hw_out.name, "wake_fd": self.wake_r, "command_fd": self.command_w,
                "interface": self.interface, "rate": self.rate}

    @property
    def child_fds(self) -> tuple:
        return self.wake_r, self.command_w

    def start(self) -> None:
        self._sender.start()

    # ---- arm → loop -------------------------------------------------------------------------------
    def _map(self, names) -> tuple:
        key = tuple(names)
        m = self._maps.get(key)
        if m is None:
            where = {name: k for k, name in enumerate(names)}
            idx = np.array([where.get(j, -1) for j in self.joints])
            m = self._maps[key] = (idx, np.flatnonzero(idx < 0))
        return m

    def _on_joint_states(self, msg: JointState) -> None:
        idx, missing = self._map(msg.name)
        if len(missing) == len(idx):
            return  # another publisher's joints (a gripper's, say): not this arm's message
        o = self.hw_in.local
        with self._lock:
            if len(missing):
                o.fault[0], o.fault_joint[0] = FAULT_CONTROLLER_ERROR, missing[0]
                if not self._missing_logged:
                    self._missing_logged = True
                    rospy.logerr(f"ros_control: {self.s.joint_states} lacks {[self.joints[i] for i in missing]}: "
                                 f"the robot stops (controller error) until the arm reports every joint")
            else:
                o.fault[0] = 0.0
                try:
                    o.position[:] = np.take(msg.position, idx)
                    o.velocity[:] = np.take(msg.velocity, idx) if len(msg.velocity) else 0.0
                    o.effort[:] = np.take(msg.effort, idx) if len(msg.effort) else 0.0
                except IndexError:  # arrays shorter than name: a malformed message is not a sample
                    o.fault[0], o.fault_joint[0] = FAULT_CONTROLLER_ERROR, -1
            self.samples += 1
            o.sample[0] = self.samples
            self.hw_in.publish_local()
        try:
            os.write(self.wake_w, b"\x01")
        except BlockingIOError:
            pass  # the loop is behind: it reads the newest sample anyway

    def _on_scaling(self, msg: Float64) -> None:
        v = msg.data
        if not np.isfinite(v):
            self.stale += 1
            return
        with self._lock:
            self.hw_in.local.speed_scaling[0] = min(max(v, 0.0), 1.0)
            self.hw_in.publish_local()

    # ---- loop → arm -------------------------------------------------------------------------------
    def _send_loop(self) -> None:
        out = self.hw_out
        arr = getattr(out.local, self._field)
        last = 0.0
        while not rospy.is_shutdown():
            try:
                if not os.read(self.command_r, 4096):
                    return  # the loop's end closed
            except OSError:
                return
            if not out.read() or out.local.command[0] == last:
                continue
            last = out.local.command[0]
            self.msg.data = arr.tolist()
            self.pub.publish(self.msg)
            self.sent += 1

    def close(self) -> None:
        for fd in (self.wake_r, self.wake_w, self.command_r, self.command_w):
            try:
                os.close(fd)
            except OSError:
                pass
        for rec in (self.hw_in, self.hw_out):
            try:
                rec.close()
            except (BufferError, FileNotFoundError):
                pass
