"""The interaction controller's ROS side, in the realtime_loop node: ``interaction_control_command`` in (validated
here, latched in the loop), ``interaction_control_state`` out (100 Hz while interaction control is on); an
"Interaction control" status on ``/diagnostics`` once a second of loop time counts the commands received and what
became of each: forwarded to the loop, unchanged (the command already in force, re-sent) or refused — what shows that a
command that changed nothing arrived."""
from __future__ import annotations

import threading

import rospy
from intera_core_msgs.msg import InteractionControlCommand, InteractionControlState

from ..control.interaction import InteractionLimits, pack
from ..loop.layouts import MSG_INTERACTION
from .command_counts import CommandCounts


def pack_message(msg: InteractionControlCommand, n: int, endpoint: str, limits: InteractionLimits):
    """The loop's words for ``msg`` (and notes on capped values); ValueError naming a bad field."""
    fp, fo = msg.interaction_frame.position, msg.interaction_frame.orientation
    return pack(msg.interaction_control_active, msg.interaction_control_mode, msg.K_impedance, msg.max_impedance,
                msg.D_impedance, msg.K_nullspace, msg.force_command, (fp.x, fp.y, fp.z), (fo.x, fo.y, fo.z, fo.w),
                msg.endpoint_name, msg.in_endpoint_frame, msg.disable_damping_in_force_control,
                msg.disable_reference_resetting, msg.rotations_for_constrained_zeroG, n, endpoint, limits)


SETTLE = 0.05  # s of loop time after a command is forwarded before a record without interaction says it ended
STATUS_PERIOD = 1.0  # s of loop time between two "Interaction control" diagnostics statuses


class InteractionTopics:
    def __init__(self, limb_ns: str, n: int, endpoint: str, limits: InteractionLimits, post, available: bool):
        """``post(words) -> bool`` hands a packed command to the loop; ``available``: the arm takes joint torques."""
        self.n, self.endpoint, self.limits, self.post, self.available = n, endpoint, limits, post, available
        self.lock = threading.Lock()
        self.last_words = None  # the last command given to the loop (the SDK re-sends the same one at 10 Hz)
        self.loop_time = 0.0  # the loop's time in the last state record published
        self.forwarded_at = 0.0  # ... when ``last_words`` went to the loop
        self.accepted: InteractionControlCommand | None = None
        self.pub = rospy.Publisher(f"{limb_ns}/interaction_control_state", InteractionControlState, queue_size=1)
        self.counts = CommandCounts("Interaction control", endpoint, "interaction",
                                    ("forwarded", "unchanged", "refused"))
        self._next_status = None
        rospy.Subscriber(f"{limb_ns}/interaction_control_command", InteractionControlCommand, self._on_command,
                         queue_size=1, tcp_nodelay=True)

    def apply(self, msg: InteractionControlCommand) -> bool:
        """Hand ``msg`` to the loop unless it is the command already in force (False then). ValueError naming a
        bad field, or saying why the loop cannot take it; nothing changes then."""
        words, notes = pack_message(msg, self.n, self.endpoint, self.limits)
        with self.lock:
            if self.last_words is not None and (words == self.last_words).all():
                return False  # the same command again (the SDK re-sends it at 10 Hz): nothing to tell the loop
            if not self.available and words[0] > 0.5:
                raise ValueError("interaction control needs an arm that takes joint torques; this backend does not")
            if not self.post(words):
                raise ValueError("the realtime loop did not take it (command ring full)")
            self.last_words = words
            self.forwarded_at = self.loop_time
            self.accepted = msg if msg.interaction_control_active else None
        for note in notes:
            rospy.logwarn(f"interaction_control_command: {note}")
        rospy.loginfo("interaction control " + ("on" if msg.interaction_control_active else "off: position hold"))
        return True

    def _on_command(self, msg: InteractionControlCommand) -> None:
        try:
            outcome = "forwarded" if self.apply(msg) else "unchanged"
        except ValueError as e:
            outcome = "refused"
            rospy.logerr_throttle(1.0, f"interaction_control_command refused: {e}; nothing changed")
        self.counts.count(outcome)

    def _ended(self, loop_time: float) -> None:
        """The loop has no interaction on (a stop, disable, fault, E-stop or collision ended it, or it refused it):
        the command last forwarded is forgotten, so the same command sent again begins it again. Only in a record
        the loop wrote ``SETTLE`` s after the command was forwarded: an older one predates it (the loop takes a
        command within a cycle)."""
        if self.last_words is not None and self.last_words[0] > 0.5 and loop_time > self.forwarded_at + SETTLE:
            with self.lock:
                self.last_words = None
                self.accepted = None

    def publish(self, st, stamp) -> None:
        """InteractionControlState from the loop's record (what is in effect) while interaction control is on."""
        self.loop_time = float(st.time[0])
        if self._next_status is None or self.loop_time >= self._next_status:
            self._next_status = self.loop_time + STATUS_PERIOD
            self.counts.publish(stamp)
        if st.interaction_on[0] < 0.5:
            self._ended(self.loop_time)
            return
        msg = self.accepted
        if msg is None:
            return
        s = InteractionControlState()
        s.header.stamp = stamp
        s.header.frame_id = "base"
        s.interaction_control_active = bool(st.interaction_engaged[0] > 0.5)
        s.K_impedance = st.interaction_k.tolist()
        s.D_impedance = st.interaction_d.tolist()
        s.endpoint_force_command = st.interaction_wrench.tolist()
        s.endpoint_name = self.endpoint
        s.in_endpoint_frame = msg.in_endpoint_frame
        s.disable_damping_in_force_control = msg.disable_damping_in_force_control
        s.disable_reference_resetting = msg.disable_reference_resetting
        s.rotations_for_constrained_zeroG = msg.rotations_for_constrained_zeroG
        self.pub.publish(s)
