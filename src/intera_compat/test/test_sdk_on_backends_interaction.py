"""Issue 33: go_to_joint_angles_in_contact.py on an arm that senses no force (ros_control.launch fake:=true: a
position interface, no joint torques, no wrist F/T). Its trajectory came back FAILED_TO_PARAMETERIZE: the loop's
ExecuteTrajectory server handed the goal's interaction parameters to the interaction controller, which refused
them on such an arm, and the motion controller reported the refusal as a planning failure. The script's defaults
(IMPEDANCE with max_impedance on every axis) ask for the stiffest arm there is — that arm's position control —
so the trajectory runs; anything softer is refused as the request's fault (INVALID_TRAJECTORY_MESSAGE)."""
import threading
from types import SimpleNamespace

import pytest
from geometry_msgs.msg import Pose
from intera_core_msgs.msg import InteractionControlCommand

from intera_compat.config import load_config
from intera_compat.control.interaction import InteractionLimits, InteractionParams, refusal_without_force_sensing
from intera_compat.loop.client import TrajectoryError
from intera_compat.ros.interaction import InteractionTopics, pack_message
from intera_compat.ros.trajectory_server import ExecuteTrajectoryServer

CFG = load_config()
N = CFG.n_arm
LIMITS = InteractionLimits.from_config(CFG.control.get("interaction"))


def in_contact_defaults(**changes) -> InteractionControlCommand:
    """What go_to_joint_angles_in_contact.py puts in trajectory_options.interaction_params by default."""
    frame = Pose()
    frame.orientation.w = 1.0
    msg = InteractionControlCommand(
        interaction_control_active=True, K_impedance=[1300.0, 1300.0, 1300.0, 30.0, 30.0, 30.0],
        max_impedance=[True] * 6, K_nullspace=[5.0, 10.0, 5.0, 10.0, 5.0, 10.0, 5.0], force_command=[0.0] * 6,
        interaction_frame=frame, endpoint_name="right_hand", interaction_control_mode=[1] * 6)
    for k, v in changes.items():
        setattr(msg, k, v)
    return msg


def params(msg) -> InteractionParams:
    words, _ = pack_message(msg, N, CFG.tips[0], LIMITS)
    return InteractionParams(words, N)


def test_every_axis_at_max_impedance_runs_rigid_only_where_the_integrator_allows_it():
    """A Sawyer's max_impedance is a bounded spring; a position arm that cannot feel the contact would push into it
    without bound (review): refused by default, naming the option; run as position control when it is set."""
    why = refusal_without_force_sensing(params(in_contact_defaults()))
    assert why is not None and "rigid_without_force_sensing" in why and "without bound" in why
    assert refusal_without_force_sensing(params(in_contact_defaults()), rigid_ok=True) is None
    off = params(in_contact_defaults(interaction_control_active=False))  # (switching it off is always fine)
    assert refusal_without_force_sensing(off) is None and refusal_without_force_sensing(off, rigid_ok=True) is None
    assert LIMITS.rigid_without_force_sensing is False  # (the shipped config's default)


@pytest.mark.parametrize("changes, named", [
    ({"max_impedance": [True, True, False, True, True, True], "K_impedance": [500.0] * 3 + [10.0] * 3},
     "max_impedance[2]"),
    ({"interaction_control_mode": [1, 1, 2, 1, 1, 1]}, "interaction_control_mode[2] is FORCE"),
    ({"interaction_control_mode": [3] * 6, "force_command": [5.0] * 6}, "IMPEDANCE_WITH_FORCE_LIMIT"),
])
def test_anything_softer_needs_a_measured_force(changes, named):
    for rigid_ok in (False, True):
        why = refusal_without_force_sensing(params(in_contact_defaults(**changes)), rigid_ok)
        assert why is not None and named in why


def _server_on_an_arm_without_force_sensing(rigid_ok: bool = False):
    """The realtime_loop node's ExecuteTrajectory server on such an arm, its interaction side the node's own
    (``available`` False as realtime_node computes it for a position arm without a wrench), recording what it
    would hand to the loop."""
    topics = InteractionTopics.__new__(InteractionTopics)
    posted = []
    limits = InteractionLimits.from_config({**CFG.control.get("interaction"), "rigid_without_force_sensing": rigid_ok})
    topics.n, topics.endpoint, topics.limits, topics.available = N, CFG.tips[0], limits, False
    topics.post = lambda w: posted.append(w) or True
    topics.lock, topics.last_words, topics.loop_time, topics.forwarded_at = threading.Lock(), None, 0.0, 0.0
    return SimpleNamespace(interaction=topics), posted


def test_the_in_contact_trajectory_is_refused_on_a_position_arm_unless_rigid_is_allowed():
    server, posted = _server_on_an_arm_without_force_sensing()
    with pytest.raises(TrajectoryError, match=r"^interaction: this arm senses no force.*rigid_without_force_sensing"):
        ExecuteTrajectoryServer._interaction(server, in_contact_defaults())
    server, posted = _server_on_an_arm_without_force_sensing(rigid_ok=True)
    ExecuteTrajectoryServer._interaction(server, in_contact_defaults())
    assert posted == []  # the loop is left without interaction: the trajectory runs as position control


def test_a_compliant_trajectory_is_refused_there_naming_why():
    server, posted = _server_on_an_arm_without_force_sensing()
    with pytest.raises(TrajectoryError, match=r"^interaction: max_impedance\[0\] is False"):
        ExecuteTrajectoryServer._interaction(server, in_contact_defaults(max_impedance=[False] * 6))
    assert posted == []
