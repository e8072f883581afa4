"""``realtime_loop`` node: the joint control listeners and state publishers (layer 3) around the
realtime process (layer 2, ``intera_compat.loop.process``), exchanging state through shared memory.

Callbacks only validate and store; publishing happens on a thread woken by the loop's ticks.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import rospy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Twist, Wrench, WrenchStamped
from intera_compat.msg import SafetyStatus
from intera_compat.srv import ApplyWrench, ApplyWrenchResponse, InjectFault, InjectFaultResponse
from intera_core_msgs.msg import (CollisionAvoidanceState, CollisionDetectionState, EndpointState, EndpointStates,
                                  HomingCommand, HomingState, JointCommand, JointLimits, RobotAssemblyState,
                                  SEAJointState)
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Empty, Float64, UInt16
from std_srvs.srv import SetBool, SetBoolResponse
from visualization_msgs.msg import MarkerArray

from ..config import load_config
from ..control.interaction import InteractionLimits
from ..data.faults import describe
from ..data.state import Capability
from ..hardware.cobot import cobot_settings
from ..hardware.registry import declared_capabilities, declared_requests
from ..hardware.sim import fault_words, push_words, pushable_links
from ..io.device import cuff, lights, navigator
from ..loop.adapter import mode_refusal
from ..loop.channel import Channel
from ..loop.client import TrajectoryClient
from ..loop.commands import bypass_tolerance, make_validator
from ..loop.layouts import (MSG_ARM_REQUEST, MSG_BYPASS, MSG_CUFF, MSG_ENABLE, MSG_ESTOP, MSG_HEAD, MSG_INTERACTION,
                            MSG_RESET, MSG_SAFETY_ESTOP, MSG_SIM_FAULT, MSG_SIM_WRENCH, MSG_STOP, MSG_SUPPRESS,
                            SUPPRESS_COLLISION_AVOIDANCE, SUPPRESS_CONTACT_SAFETY, SUPPRESS_CUFF, SUPPRESS_GRAVITY,
                            TICK_DIAGNOSTICS, TICK_JOINT_STATES, TICK_SAFETY, TICK_STATE_100HZ)
from ..loop.scheduler import keep_off_cpu, loop_cpu, raise_priority
from ..model.robot_model import RobotModel
from ..safety.collision_detection import CAUSES, OVER_WRENCH, SQUISH
from .arm_services import ArmServices
from .conversions import pose_msg
from .digital_io import LegacyDigitalIO
from .head import HeadTopics
from .interaction import InteractionTopics
from .io_server import IONodeServer
from .markers import CollisionMarkers
from .node_init import init_node
from .ros_control_bridge import RosControlBridge
from .trajectory_server import ExecuteTrajectoryServer
from .urdf_fragments import UrdfFragmentWatcher
from .wrench import WrenchEstimator

SUPPRESS_TOPICS = {
    "suppress_gravity_compensation": SUPPRESS_GRAVITY,
    "suppress_collision_avoidance": SUPPRESS_COLLISION_AVOIDANCE,
    "suppress_contact_safety": SUPPRESS_CONTACT_SAFETY,
    "suppress_cuff_interaction": SUPPRESS_CUFF,
}
EVENT_PATIENCE = 0.1  # s: how long an enable / E-stop / bypass / cuff event waits for room in a full ring


def _percentile(hist: np.ndarray, p: float) -> float:
    total = hist.sum()
    if total <= 0:
        return 0.0
    return float(np.searchsorted(np.cumsum(hist), p * total))


class RealtimeLoopNode:
    _closed = False  # shutdown closed the channel: callbacks that come after are quiet no-ops

    def __init__(self):
        self.cfg = cfg = load_config(rospy.get_param("~config", None) or None)
        self.rm = RobotModel(cfg)
        self.names = cfg.all_joints
        n = self.n = len(self.names)
        self.n_arm = cfg.n_arm
        self.limb = cfg.limb
        self.loop_hz = float(cfg.rates["loop_hz"])
        self.pair_names = [f"{a}:{b}" for a, b in self.rm.pair_names()]
        self.channel = ch = Channel(n, create=True, pairs=len(self.pair_names))
        self.sim_time = bool(rospy.get_param("/use_sim_time", False))
        self.speedup = float(rospy.get_param("~speedup", 1.0))
        self.unpaced = self.sim_time and self.speedup <= 0  # (the loop waits for what is published: loop.process)
        ch.set_control(speed_ratio=float(cfg.control["speed_ratio"]),
                       command_timeout=float(cfg.control["command_timeout"]),
                       joint_state_hz=float(cfg.rates["joint_states_hz"]))
        self.validator = make_validator(cfg)
        self._bypass_seen = False
        self.trajectories = TrajectoryClient(ch, cfg)
        self._faults_seen = 0
        self.commands_received = 0
        self._count_lock = threading.Lock()
        self._homing_div = 0
        start_enabled = bool(rospy.get_param("~start_enabled", cfg.sim.get("start_enabled", True)))
        rospy.set_param("/robot/armnav_robot_description", self.rm.avoidance_urdf)
        self.backend = backend = rospy.get_param("~backend", "sim")
        self.bridge = None
        options, fds = {}, ()
        if backend == "ros_control":  # the arm's topics, for the loop process (which has no rospy)
            self.bridge = RosControlBridge(cfg, rospy.get_param("~ros_control_interface", ""),
                                           float(rospy.get_param("~ros_control_rate", 0.0)),
                                           float(rospy.get_param("~ros_control_link_timeout", 0.0)))
            options, fds = self.bridge.link, self.bridge.child_fds
        elif backend == "ur":  # launch arguments over the config's ur section ("" / 0: the config's)
            options = {k: rospy.get_param(f"~ur_{k}", "")
                       for k in ("robot_ip", "rate", "link_timeout", "interface", "torque_watchdog_hz")}
            options = {k: v for k, v in options.items() if v not in ("", 0, 0.0)}
        elif backend in ("sim", "sim_position"):  # where the arm starts ("": the config's sim.initial_pose)
            options = {"initial_pose": str(rospy.get_param("~initial_pose", ""))}
            try:
                cfg.start_pose(options["initial_pose"])
            except ValueError as e:
                rospy.logfatal(f"realtime_loop: ~initial_pose refused: {e}")
                raise SystemExit(2) from None
        elif backend == "cobot":  # launch arguments over the config's cobot section ("": the config's)
            options = {k: rospy.get_param(f"~cobot_{k}", "") for k in ("endpoint", "execution_mode", "settle_timeout")}
            options = {k: v for k, v in options.items() if v != ""}
        self.caps = declared_capabilities(backend, cfg, options)
        self.arm_services = ArmServices(declared_requests(backend),
                                        lambda a: self._event(MSG_ARM_REQUEST, a, EVENT_PATIENCE),
                                        self.trajectories.arm_answers, float(cfg.raw.get("payload_max", 1000.0)),
                                        backend, cobot_settings(cfg, options) if backend == "cobot" else None)
        self._refused_modes: set = set()
        self.read_fd, write_fd = os.pipe()
        argv = [sys.executable, "-m", "intera_compat.loop.process", "--channel", json.dumps(ch.names),
                "--tick-fd", str(write_fd),
                "--speedup", str(self.speedup if self.sim_time else 1.0), "--start-enabled", str(int(start_enabled)),
                "--backend", backend, "--scene", rospy.get_param("~scene", ""),
                "--backend-options", json.dumps(options)]
        if cfg.path:
            argv += ["--config", cfg.path]
        if self.sim_time:
            argv.append("--sim-time")
        if rospy.get_param("~no_rt", False):
            argv.append("--no-rt")
        self.proc = subprocess.Popen(argv, pass_fds=(write_fd, *fds))
        os.close(write_fd)
        if self.bridge is not None:
            self.bridge.start()
        if not self.sim_time and not rospy.get_param("~no_rt", False):
            keep_off_cpu(loop_cpu())  # the loop process has that core to itself
        self._make_publishers()
        self._make_subscribers()
        # interaction control: impedance on torque arms, admittance on position/velocity arms with a wrist F/T
        caps = self.caps
        interaction = Capability.TORQUE in caps or (Capability.WRENCH in caps and bool(
            caps & {Capability.POSITION, Capability.VELOCITY}))
        self.interaction = InteractionTopics(f"/robot/limb/{self.limb}", cfg.n_arm, cfg.tips[0],
                                             InteractionLimits.from_config(cfg.control.get("interaction")),
                                             lambda w: self._event(MSG_INTERACTION, w, EVENT_PATIENCE),
                                             available=interaction)
        self.trajectory_server = ExecuteTrajectoryServer(self.trajectories, f"/robot/limb/{self.limb}",
                                                         self.interaction)
        # IO node "robot" (cuff, navigator, lights), in this process like on the robot; the sim presses its buttons
        self._cuff = False  # the level last given to the loop
        self._cuff_lock = threading.Lock()
        self.digital_io = None
        self.io = IONodeServer("robot", [cuff(), navigator(), lights()], self._on_io_change,
                               sim=backend in ("sim", "sim_position"))
        self.digital_io = LegacyDigitalIO(self.io, self._on_io_change)  # the same buttons and lights, the old way
        self.head = None
        if cfg.head_joint:  # the head pan: a joint of the plant, turned by the loop
            self.head = HeadTopics(lambda w: self._event(MSG_HEAD, w, EVENT_PATIENCE),
                                   cfg.all_joints.index(cfg.head_joint))
        self.wrench = WrenchEstimator(self.rm, cfg.tips[0])
        # URDF fragments' links, tips of tip_states too (their model: kinematics only; the loop's dynamics keep
        # the arm's own)
        self._fragment_tips = (None, [])
        UrdfFragmentWatcher(cfg, lambda rm, links: setattr(self, "_fragment_tips", (rm, list(links))), log=False)
        self._diag_prev = None
        self._collisions_seen = 0
        self._safety_div = 0
        self._safety_last = None
        self._state_thread = threading.Thread(target=self._publish_loop, daemon=True)
        self._state_thread.start()

    # ---------------------------------------------------------------- wiring
    def _make_publishers(self):
        L = f"/robot/limb/{self.limb}"
        self.pub_js = rospy.Publisher("/robot/joint_states", JointState, queue_size=1, tcp_nodelay=True)
        self.pub_sea = rospy.Publisher(f"{L}/gravity_compensation_torques", SEAJointState, queue_size=1,
                                       tcp_nodelay=True)
        self.pub_ep = rospy.Publisher(f"{L}/endpoint_state", EndpointState, queue_size=1, tcp_nodelay=True)
        self.pub_tips = rospy.Publisher(f"{L}/tip_states", EndpointStates, queue_size=1, tcp_nodelay=True)
        self.pub_wrench = rospy.Publisher(f"{L}/endpoint_wrench", WrenchStamped, queue_size=1)  # (for RViz)
        self.pub_state = rospy.Publisher("/robot/state", RobotAssemblyState, queue_size=1)
        self.pub_homing = rospy.Publisher("/robot/homing_states", HomingState, queue_size=1)
        self.pub_diag = rospy.Publisher("/diagnostics", DiagnosticArray, queue_size=2)
        self.pub_clock = rospy.Publisher("/clock", Clock, queue_size=1) if self.sim_time else None
        self.pub_limits = rospy.Publisher("/robot/joint_limits", JointLimits, queue_size=1, latch=True)
        self.pub_detect = rospy.Publisher(f"{L}/collision_detection_state", CollisionDetectionState, queue_size=1,
                                          tcp_nodelay=True)
        self.pub_avoid = rospy.Publisher(f"{L}/collision_avoidance_state", CollisionAvoidanceState, queue_size=1)
        self.pub_safety = rospy.Publisher(f"{L}/safety_status", SafetyStatus, queue_size=1, latch=True)
        self.markers = None
        if rospy.get_param("~debug_visualize_collisions", False):
            ca = self.cfg.control.get("collision_avoidance", {})
            band = float(ca.get("safety_zone", 0.05)) + float(ca.get("braking_band", 0.05))
            self.markers = CollisionMarkers(self.rm, self.cfg.base_frame, band,
                                            self.cfg.scene_obstacles(rospy.get_param("~scene", "")))
            self.pub_markers = rospy.Publisher("~collision_markers", MarkerArray, queue_size=1)
        lim = self.cfg.limits
        self.pub_limits.publish(JointLimits(joint_names=self.names, position_lower=lim.lower.tolist(),
                                            position_upper=lim.upper.tolist(), velocity=lim.velocity.tolist(),
                                            accel=lim.accel.tolist(), effort=lim.effort.tolist()))

    def _make_subscribers(self):
        L = f"/robot/limb/{self.limb}"
        # queue: a burst of commands while this process is busy is kept (the ring keeps them in order)
        rospy.Subscriber(f"{L}/joint_command", JointCommand, self._on_command, queue_size=50, tcp_nodelay=True)
        rospy.Subscriber(f"{L}/joint_command_timeout", Float64, self._on_timeout, queue_size=1)
        rospy.Subscriber(f"{L}/set_speed_ratio", Float64, self._on_speed_ratio, queue_size=1)
        # an operator's speed slider (a teach pendant's, or a test's): scales the trajectory time base
        rospy.Subscriber("~speed_override", Float64, self._on_speed_override, queue_size=1)
        rospy.Subscriber("/robot/set_super_enable", Bool, self._on_enable, queue_size=1)
        rospy.Subscriber("/robot/set_super_stop", Empty, lambda _: self._event(MSG_STOP, 0.0, EVENT_PATIENCE),
                         queue_size=1)
        rospy.Subscriber("/robot/set_super_reset", Empty, lambda _: self._event(MSG_RESET, 0.0, EVENT_PATIENCE),
                         queue_size=1)
        rospy.Subscriber("/robot/joint_state_publish_rate", UInt16, self._on_rate, queue_size=1)
        rospy.Subscriber("/robot/set_homing_mode", HomingCommand, lambda _: None, queue_size=1)
        for topic, key in SUPPRESS_TOPICS.items():
            rospy.Subscriber(f"{L}/{topic}", Empty, lambda _, k=key: self._event(MSG_SUPPRESS, k), queue_size=1,
                             tcp_nodelay=True)
        rospy.Service("/robot/sim/set_estop", SetBool, self._on_estop)
        if Capability.SIM_TIME in self.caps:  # (a simulated arm, ours to push: the viewer's mouse, tests)
            self._links, self._fixed = pushable_links(self.rm)
            rospy.Service("/robot/sim/apply_wrench", ApplyWrench, self._on_push)
            rospy.Service("/robot/sim/inject_fault", InjectFault, self._on_fault)
        rospy.Subscriber("~safety_estop", Bool, self._on_safety_estop, queue_size=10)
        rospy.Service("~bypass_safety_checks", SetBool, self._on_bypass)

    # ---------------------------------------------------------------- listeners (store only)
    def _event(self, kind: int, value=0.0, patience: float = 0.0) -> bool:
        """Post an event (one value or an array of them) to the loop; a full ring (whole trajectories share it,
        the loop drains it every cycle) is retried for ``patience`` seconds — a stop-class event (stop, reset,
        enable, E-stops: ``Channel.STOP_CLASS``) waits in the channel's backlog instead, and is refused only if
        that is full too. False (logged): the loop never got it."""
        if self._closed:
            return False  # (the node shuts down: rospy may still deliver a message or two)
        payload = value if isinstance(value, np.ndarray) else (value,)
        try:
            if self.channel.post(kind, payload, patience=patience):
                return True
        except Exception:  # (closed between the check and the post: shutdown closes it under the channel's lock)
            if self._closed:
                return False
            raise
        rospy.logerr_throttle(1.0, f"realtime loop command ring full: event {kind} dropped (is the loop running?)")
        return False

    def _on_enable(self, msg: Bool) -> None:
        self._event(MSG_ENABLE, 1.0 if msg.data else 0.0, EVENT_PATIENCE)

    def _on_estop(self, req):
        if not self._event(MSG_ESTOP, 1.0 if req.data else 0.0, EVENT_PATIENCE):
            return SetBoolResponse(False, "the realtime loop did not take the request (command ring full)")
        return SetBoolResponse(True, "E-stop " + ("pressed" if req.data else "released"))

    def _on_push(self, req):
        f, t = req.wrench.force, req.wrench.torque
        try:
            words = push_words(self._links, req.link, (f.x, f.y, f.z, t.x, t.y, t.z), req.duration, self._fixed)
        except ValueError as e:
            rospy.logerr(f"/robot/sim/apply_wrench refused: {e}; nothing pushed")
            return ApplyWrenchResponse(False, str(e))
        if not self._event(MSG_SIM_WRENCH, words, EVENT_PATIENCE):
            return ApplyWrenchResponse(False, "the realtime loop did not take the request (command ring full)")
        return ApplyWrenchResponse(True, f"pushing on {req.link} for {req.duration:g} s" if req.duration > 0
                                   else f"push on {req.link} ended")

    def _on_fault(self, req):
        try:
            words = fault_words(req.fault, req.duration)
        except ValueError as e:
            rospy.logerr(f"/robot/sim/inject_fault refused: {e}")
            return InjectFaultResponse(False, str(e))
        if not self._event(MSG_SIM_FAULT, words, EVENT_PATIENCE):
            return InjectFaultResponse(False, "the realtime loop did not take the request (command ring full)")
        rospy.logwarn(f"simulated fault: the arm reports {req.fault} for {req.duration:g} s")
        return InjectFaultResponse(True, f"the arm reports {req.fault} for {req.duration:g} s")

    def _on_safety_estop(self, msg: Bool) -> None:
        self._event(MSG_SAFETY_ESTOP, 1.0 if msg.data else 0.0, EVENT_PATIENCE)

    def _on_io_change(self, dev) -> None:
        if self.digital_io is not None:
            self.digital_io.publish()
        if dev.name == "cuff":
            with self._cuff_lock:  # (two subscriber threads change the cuff: compare and post as one)
                pressed = bool(dev.value("right_cuff"))
                if pressed != self._cuff and self._event(MSG_CUFF, 1.0 if pressed else 0.0, EVENT_PATIENCE):
                    self._cuff = pressed
                    rospy.loginfo("cuff " + ("squeezed: zero-G" if pressed else "released"))

    def _repost_cuff(self) -> None:
        """The cuff's level again (10 Hz): the loop converges on the device's state even if an edge was lost."""
        with self._cuff_lock:
            self._event(MSG_CUFF, 1.0 if self._cuff else 0.0)

    def _on_bypass(self, req):
        t = float(self.cfg.control.get("bypass_timeout", 60.0))
        if not self._event(MSG_BYPASS, t if req.data else 0.0, EVENT_PATIENCE):
            return SetBoolResponse(False, "the realtime loop did not take the request (command ring full); "
                                          "nothing changed")
        self.validator.relax(req.data)  # (and from the safety record, which also tells of the timeout)
        if req.data:
            tol = 100.0 * bypass_tolerance(self.cfg)
            rospy.logwarn(f"safety bypass ON for {t:g} s: collision avoidance off, joint limits widened by {tol:g} %")
            return SetBoolResponse(True, f"safety bypass on for {t:g} s (collision avoidance off, joint limits "
                                         f"widened by {tol:g} % of their range)")
        rospy.loginfo("safety bypass off")
        return SetBoolResponse(True, "safety bypass off")

    def _control(self, **values) -> None:
        """Set the loop's control record (nothing once shutdown closed it)."""
        if self._closed:
            return
        try:
            self.channel.set_control(**values)
        except Exception:
            if not self._closed:
                raise

    def _on_timeout(self, msg: Float64) -> None:
        t = msg.data
        if not np.isfinite(t):
            rospy.logerr_throttle(1.0, f"joint_command_timeout rejected: data is {t}; keeping the previous value")
            return
        if t < 0.0 or t > 1.0:
            rospy.logwarn_throttle(1.0, f"joint_command_timeout {t} s outside [0, 1] s; clamped")
        self._control(command_timeout=min(max(t, 0.0), 1.0))

    def _on_speed_ratio(self, msg: Float64) -> None:
        r = msg.data
        if not np.isfinite(r):
            rospy.logerr_throttle(1.0, f"set_speed_ratio rejected: data is {r}; keeping the previous ratio")
            return
        self._control(speed_ratio=min(max(r, 0.0), 1.0))

    def _on_speed_override(self, msg: Float64) -> None:
        f = msg.data
        if not (np.isfinite(f) and 0.0 <= f <= 1.0):
            rospy.logerr_throttle(1.0, f"speed_override rejected: data is {f}, give 0..1; keeping the previous factor")
            return
        self._control(speed_override=f)

    def _on_rate(self, msg: UInt16) -> None:
        if msg.data == 0:
            rospy.logerr_throttle(1.0, "joint_state_publish_rate rejected: data is 0 Hz")
            return
        hz = min(float(msg.data), self.loop_hz)
        self._control(joint_state_hz=hz)
        rospy.loginfo(f"/robot/joint_states now at {hz:.0f} Hz")

    def _on_command(self, msg: JointCommand) -> None:
        if self._closed:
            return  # (the node shuts down: rospy may still deliver a command or two)
        with self._count_lock:  # one callback thread per publisher connection
            self.commands_received += 1
        stamp = msg.header.stamp.to_sec() or rospy.get_time()  # (TRAJECTORY_MODE velocities from positions)
        v = self.validator.check(msg.mode, msg.names, {"position": msg.position, "velocity": msg.velocity,
                                                       "acceleration": msg.acceleration, "effort": msg.effort}, stamp)
        if not v.ok:
            rospy.logerr_throttle_identical(1.0, f"JointCommand rejected: {v.error}; holding last command")
            return
        why = mode_refusal(v.mode, self.caps)
        if why is not None:  # (the loop would ignore it too): said once per mode, not at the client's rate
            if v.mode not in self._refused_modes:
                self._refused_modes.add(v.mode)
                rospy.logerr(f"JointCommand refused: {why} (backend {self.backend}); the arm holds. Said once.")
            return
        if v.warnings:
            rospy.logwarn_throttle_identical(1.0, "JointCommand: " + "; ".join(v.warnings))
        try:
            posted = self.channel.post_command(v.mode, v.mask, v.arrays)
        except Exception:  # (closed between the check and the post)
            if self._closed:
                return
            raise
        if not posted:
            rospy.logerr_throttle(1.0, "realtime loop command ring full: JointCommand dropped")

    # ---------------------------------------------------------------- publishers
    def _stamp(self, st) -> rospy.Time:
        return rospy.Time.from_sec(st.time[0]) if self.sim_time else rospy.Time.now()

    def _publish_loop(self):
        buf = bytearray(256)
        while not rospy.is_shutdown() and not self._closed:
            try:
                k = os.readv(self.read_fd, [buf])
            except OSError:
                return
            if k == 0:  # loop process gone
                self._loop_exited()
                return
            flags = 0
            for i in range(k):
                flags |= buf[i]
            state = self.channel.state
            # (the writer holds the record for one copy only, unless it died in the middle of one)
            if not state.wait_read(self._loop_alive):
                if not rospy.is_shutdown():
                    self._loop_exited()
                return
            st = state.local
            try:
                self._check_faults(st)
                self.trajectory_server.tick(st, bool(flags & TICK_JOINT_STATES))
                if self.pub_clock is not None:
                    self.pub_clock.publish(Clock(clock=rospy.Time.from_sec(st.time[0])))
                stamp = self._stamp(st)
                if flags & TICK_JOINT_STATES:
                    self._publish_joint_states(st, stamp)
                if flags & TICK_STATE_100HZ:
                    g_model = self._publish_sea(st, stamp)
                    self._publish_endpoint(st, stamp, g_model)
                    self._publish_robot_state(st)
                    self.interaction.publish(st, stamp)
                    if self.head is not None:
                        self.head.publish(st)
                if flags & (TICK_STATE_100HZ | TICK_SAFETY):
                    self._publish_safety(st, stamp, bool(flags & TICK_SAFETY))
                if flags & TICK_DIAGNOSTICS:
                    self._publish_diagnostics(st, stamp)
                if self.unpaced and flags & TICK_STATE_100HZ:
                    self.channel.set_control(published_time=float(st.time[0]))
            except Exception as e:  # (a robot whose state is no longer published must not run on unseen)
                # (publishing into a node going down, or reading the channel it closed, raises: that is no failure)
                if not rospy.is_shutdown() and not self._closed:
                    rospy.logfatal(f"realtime_loop: publishing the robot's state failed ({e!r}); shutting down")
                    rospy.signal_shutdown("state publisher failed")
                return

    def _loop_alive(self) -> bool:
        return self.proc.poll() is None and not rospy.is_shutdown()

    def _loop_exited(self) -> None:
        """The loop process is gone (its tick pipe closed, or it died in the middle of a state record's write):
        say how it ended and shut this node down."""
        try:
            code = self.proc.wait(2)
        except subprocess.TimeoutExpired:
            code = "unknown (still running, pipe closed)"
        # (a Ctrl-C reaches the loop process too: its clean exit then is no fault)
        (rospy.loginfo if code == 0 else rospy.logerr)(f"realtime loop process exited (exit code {code})")
        rospy.signal_shutdown("realtime loop process exited")

    def _publish_joint_states(self, st, stamp):
        js = JointState()
        js.header.stamp = stamp
        js.name = self.names
        js.position = st.position.tolist()
        js.velocity = st.velocity.tolist()
        js.effort = st.effort.tolist()
        self.pub_js.publish(js)

    def _publish_sea(self, st, stamp) -> np.ndarray:
        """gravity_compensation_torques: the arm's setpoint beside its measured state, at a fixed 100 Hz
        (whatever joint_state_publish_rate says — the motion controller reads the setpoint from it). Returns the
        model's torques for the measured state and the commanded accelerations (the wrench estimate's too)."""
        a = self.n_arm
        q, v = st.position, st.velocity
        g = self.rm.gravity(q)
        g_model = self.rm.rnea(q, v, st.cmd_acceleration)
        sea = SEAJointState()
        sea.header.stamp = stamp
        sea.name = self.names[:a]
        sea.commanded_position = st.cmd_position[:a].tolist()
        sea.commanded_velocity = st.cmd_velocity[:a].tolist()
        sea.commanded_acceleration = st.cmd_acceleration[:a].tolist()
        sea.commanded_effort = st.cmd_effort[:a].tolist()
        sea.actual_position = q[:a].tolist()
        sea.actual_velocity = v[:a].tolist()
        sea.actual_effort = st.effort[:a].tolist()
        sea.gravity_only = ([0.0] * a) if st.gravity_suppressed[0] else g[:a].tolist()
        sea.gravity_model_effort = ([0.0] * a) if st.gravity_suppressed[0] else g_model[:a].tolist()
        sea.interaction_torque = (st.effort[:a] - g_model[:a]).tolist()
        sea.hysteresis_model_effort = [0.0] * a
        sea.crosstalk_model_effort = [0.0] * a
        sea.hystState = 0.0
        self.pub_sea.publish(sea)
        return g_model

    def _endpoint(self, q, v, tip, stamp, wrench=None, rm=None, pose=None) -> EndpointState:
        """``pose``: the tip's placement when the caller has it already."""
        rm = rm or self.rm
        es = EndpointState()
        es.header.stamp = stamp
        es.header.frame_id = self.cfg.base_frame
        es.pose = pose_msg(pose if pose is not None else rm.fk(q, tip))
        tw = rm.frame_velocity(q, v, tip)
        es.twist = Twist()
        es.twist.linear.x, es.twist.linear.y, es.twist.linear.z = tw.linear
        es.twist.angular.x, es.twist.angular.y, es.twist.angular.z = tw.angular
        es.wrench = Wrench()
        if wrench is not None:
            es.wrench.force.x, es.wrench.force.y, es.wrench.force.z = wrench[:3]
            es.wrench.torque.x, es.wrench.torque.y, es.wrench.torque.z = wrench[3:]
        es.valid = True
        return es

    def _publish_endpoint(self, st, stamp, tau_model: np.ndarray):
        q, v = st.position.copy(), st.velocity.copy()
        w = self.wrench.update(q, v, st.cmd_acceleration, st.effort, tau_model)  # (every tick: a filter)
        tip0 = self.cfg.tips[0]
        M = self.rm.fk(q, tip0)
        ep = self._endpoint(q, v, tip0, stamp, w, pose=M)
        self.pub_ep.publish(ep)
        if self.pub_wrench.get_num_connections():
            # the same wrench in the tip's own axes, for RViz (a WrenchStamped is drawn at its frame's origin)
            R = M.rotation
            ws = WrenchStamped()
            ws.header.stamp, ws.header.frame_id = stamp, tip0
            ws.wrench.force.x, ws.wrench.force.y, ws.wrench.force.z = R.T @ w[:3]
            ws.wrench.torque.x, ws.wrench.torque.y, ws.wrench.torque.z = R.T @ w[3:]
            self.pub_wrench.publish(ws)
        if not self.pub_tips.get_num_connections():
            return  # (nobody listens: the tips' kinematics are not worked out)
        tips = EndpointStates()
        tips.header.stamp = stamp
        tips.header.frame_id = self.cfg.base_frame
        rm, extra = self._fragment_tips  # (one tuple, swapped whole by the /robot/urdf subscriber)
        tips.names = list(self.cfg.tips) + extra
        tips.states = ([ep] + [self._endpoint(q, v, t, stamp) for t in self.cfg.tips[1:]]
                       + [self._endpoint(q, v, t, stamp, rm=rm) for t in extra])
        self.pub_tips.publish(tips)

    def _publish_robot_state(self, st):
        rs = RobotAssemblyState()
        rs.homed = bool(st.homed[0])
        rs.ready = bool(st.ready[0])
        rs.enabled = bool(st.enabled[0])
        rs.stopped = bool(st.stopped[0])
        rs.error = bool(st.error[0])
        rs.lowVoltage = False
        rs.estop_button = int(st.estop_button[0])
        rs.estop_source = int(st.estop_source[0])
        self.pub_state.publish(rs)
        self._homing_div = (self._homing_div + 1) % 10
        if self._homing_div == 0:  # 10 Hz
            self.pub_homing.publish(HomingState(name=self.names, state=[HomingState.HOMED] * self.n))

    def _publish_safety(self, st, stamp, changed: bool) -> None:
        """collision_detection_state / collision_avoidance_state at 100 Hz (and at once on a change),
        the Sawyer-style warning for each new detection, SafetyStatus (latched) at 10 Hz and on changes."""
        rec = self.channel.safety
        if not rec.read():
            return
        o = rec.local
        bypass = bool(o.bypass[0] > 0.5)
        if bypass != self._bypass_seen:  # on its edges only: a record older than a service call must not undo it
            self._bypass_seen = bypass
            self.validator.relax(bypass)
        hdr = rospy.Header(stamp=stamp)
        self.pub_detect.publish(CollisionDetectionState(header=hdr, collision_state=bool(o.collision_state[0])))
        active = [self.pair_names[k] for k in np.flatnonzero(o.pair_active > 0.5)]
        if self.pub_avoid.get_num_connections():
            self.pub_avoid.publish(CollisionAvoidanceState(header=hdr, other_arm=False, collision_object=active))
        count = int(o.collisions[0])
        if count > self._collisions_seen:
            self._collisions_seen = count
            rospy.logwarn(self._detection_message(o))
        self._safety_div = (self._safety_div + 1) % 10
        if changed or self._safety_div == 0:
            self._publish_safety_status(o, hdr, active)
        if self._safety_div == 3:
            self._repost_cuff()
        if self.markers is not None and self._safety_div == 5:  # 10 Hz, between the status ticks
            self.pub_markers.publish(self.markers.build(st.position.copy(), o.pair_active, stamp))

    def _detection_message(self, o) -> str:
        cause, j = int(o.collision_cause[0]), int(o.collision_joint[0])
        joint = self.names[j] if 0 <= j < self.n else ""
        value, thr, metric = o.collision_value[0], o.collision_threshold[0], o.collision_metric[0]
        if cause == SQUISH:
            return f"squish on joint {joint} - {abs(value):.3f} > {thr:.3f}"
        if cause == OVER_WRENCH:
            return f"hand over-wrench: {value:.3f} > {thr:.3f} (N or Nm at {self.cfg.tips[0]})"
        return (f"impact: {metric:.6f} > 1.000000, largest contributor: {joint}, with value: {value:.6f} "
                f"(threshold {thr:.3f} Nm)")

    def _publish_safety_status(self, o, hdr, active) -> None:
        k = int(o.min_pair[0])
        j = int(o.collision_joint[0])
        self.pub_safety.publish(SafetyStatus(
            header=hdr, collision_avoidance_active=bool(o.avoid_engaged[0]),
            min_collision_distance=float(o.min_distance[0]),
            closest_pair=self.pair_names[k] if 0 <= k < len(self.pair_names) else "",
            distance_scale=float(o.distance_scale[0]), effective_scale=float(o.effective_scale[0]),
            worst_directional_derivative=float(o.worst_derivative[0]), num_pairs_in_safety_zone=int(o.pairs_in_zone[0]),
            num_pairs_repelling=int(o.repelling[0]), active_pairs=active,
            collision_detection_active=bool(o.detect_engaged[0]), collision_detected=bool(o.collision_state[0]),
            collision_cause=CAUSES.get(int(o.collision_cause[0]), ""),
            collision_joint=self.names[j] if 0 <= j < self.n else "", collision_value=float(o.collision_value[0]),
            collision_threshold=float(o.collision_threshold[0]), collisions=int(o.collisions[0]),
            external_torque=o.residual.tolist(), external_wrench=o.wrench.tolist(),
            safety_estop=bool(o.estop[0]), bypass=bool(o.bypass[0]), bypass_remaining=float(o.bypass_remaining[0]),
            zero_g=bool(o.zero_g[0])))

    def _check_faults(self, st) -> None:
        self.trajectories.poll()
        while self._faults_seen < len(self.trajectories.faults):
            code, joint, t = self.trajectories.faults[self._faults_seen]
            self._faults_seen += 1
            name = self.names[joint] if 0 <= joint < self.n else ""
            rospy.logerr(f"realtime loop fault at t={t:.3f} s: {describe(code, name)}; robot stopped "
                         "(error). Reset and enable to continue.")

    def _publish_diagnostics(self, st, stamp):
        # (a snapshot the loop kept busy: the last one stands in; the command and fault counters come from ``st``)
        self.channel.stats.read()
        sx = self.channel.stats.local
        now = np.r_[sx.stat_cycles[0], sx.stat_late[0], sx.stat_skipped[0], sx.stat_compute_sum_us[0]]
        hists = (sx.jitter_hist.copy(), sx.compute_hist.copy())
        # (the first status counts from the loop's start: a client need not wait two periods for one)
        prev = self._diag_prev or (np.zeros_like(now), (np.zeros_like(hists[0]), np.zeros_like(hists[1])))
        self._diag_prev = (now, hists)
        d = now - prev[0]
        jh, ch = hists[0] - prev[1][0], hists[1] - prev[1][1]
        cycles = max(d[0], 1.0)
        status = DiagnosticStatus(name="Realtime Control Loop", hardware_id=self.cfg.robot_class)
        late_pct = 100.0 * d[1] / cycles
        status.level = DiagnosticStatus.OK if late_pct < 1.0 else DiagnosticStatus.WARN
        status.message = f"{d[0]:.0f} cycles, {late_pct:.2f} % > 100 us late"
        if st.fault_code[0]:
            j = int(st.fault_joint[0])
            status.level = DiagnosticStatus.ERROR
            status.message = "fault: " + describe(int(st.fault_code[0]), self.names[j] if 0 <= j < self.n else "")
        vals = {
            "cycles": d[0], "compute_mean_us": d[3] / cycles, "compute_p50_us": _percentile(ch, 0.5),
            "compute_p99_us": _percentile(ch, 0.99),
            "compute_max_us": sx.stat_compute_max_us[0], "jitter_p50_us": _percentile(jh, 0.5),
            "jitter_p99_us": _percentile(jh, 0.99), "overruns": d[1], "overrun_pct": late_pct,
            "skipped_ticks": d[2], "sched_fifo": sx.rt_fifo[0], "cpu": sx.rt_cpu[0], "idle_poll": sx.idle_poll[0],
            "realtime": sx.realtime[0], "timeouts_total": st.timeouts[0],
            "clamped_effort_total": st.clamped_effort[0], "commands_received_total": self.commands_received,
            "commands_applied_total": st.commands[0], "commands_superseded_total": st.commands_superseded[0],
            "commands_ignored_total": st.commands_ignored[0], "commands_refused_ring_full": self.channel.refused,
            "faults_total": st.faults[0], "limit_interventions": st.limit_interventions[0],
            "following_error_interventions": st.following_interventions[0],
            "torque_guard_interventions": st.torque_guard_interventions[0],
            "loop_results_dropped_ring_full": sx.ring_full[0], "state_reads_given_up": self.channel.state.failed_reads,
            "listener_pace_given_up": sx.pace_given_up[0],
            "stop_messages_waited_ring_full": self.channel.backlogged,
        }
        status.values = [KeyValue(k, f"{v:.3f}" if isinstance(v, float) else str(v)) for k, v in vals.items()]
        arr = DiagnosticArray(status=[status])
        arr.header.stamp = stamp
        self.pub_diag.publish(arr)

    def shutdown(self):
        self.channel.set_control(shutdown=1.0)
        try:
            self.proc.wait(3)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        with self.channel.lock:  # (no post is halfway through: every one holds this lock while it writes the ring)
            self._closed = True
            self.channel.close()
        if self.bridge is not None:
            self.bridge.close()


LISTENER_NICE = -5  # the listener (and the ros_control bridge in it): after the loop (-10), before other nodes (0)


def main():
    raise_priority(LISTENER_NICE)
    init_node("realtime_loop")
    node = RealtimeLoopNode()
    rospy.on_shutdown(node.shutdown)
    rospy.spin()
