"""The reference cobot PLC's own motion planning, cycle by cycle without its thread or OPC UA server (the PLC over
OPC UA: test_cobot_node.py)."""
import numpy as np

from intera_compat.emulator.cobot_plc import ERROR, IDLE, MOVING, CobotPLC


def test_a_point_the_arm_is_at_but_for_round_off_is_reached_not_an_error():
    """Conformance on cobot_emulator.launch (go_to_cartesian_pose.py): the last point of a Cartesian path was where
    the arm already was but for 1e-17 rad, its velocity 2e-16 rad/s — ruckig's synchronisation failed on it and the
    PLC went to error 100 ("the motion could not be planned"): the robot stopped with an error at the path's end."""
    plc = CobotPLC()
    target = np.array([0.0, 0.5, 0.0, -1.5, 0.0, 1.1, 0.0])
    # (the state as the PLC logged it: ruckig fails on exactly these round-off values, not on any tiny ones)
    plc._inp.current_position = [4.517340301048816e-17, 0.5, 4.517340301048816e-17, -1.5, -2.168404344971009e-17,
                                 1.1, -2.0851978029267274e-17]
    plc._inp.current_velocity = [2.220446049250313e-16, -1.1102230246251565e-16, 2.220446049250313e-16,
                                 5.551115123125783e-17, 0.0, 5.551115123125783e-17, -1.1102230246251565e-16]
    plc._inp.current_acceleration = [0.0] * 7
    plc.points, plc.mode = [target], MOVING
    for _ in range(5):
        plc._plan()
    assert plc.mode == IDLE and plc.error_code == 0, plc.error_text
    assert np.allclose(plc.cmd.position[:7], target, atol=1e-12) and not plc.points


def test_a_point_out_of_reach_of_the_planner_is_still_an_error():
    """The snap is for round-off only: a planner failure elsewhere stays error 100 (not a silent skip)."""
    plc = CobotPLC()
    q = np.array(plc._inp.current_position)
    plc._inp.max_velocity = [0.0] * 7  # (no speed at all: nothing can be planned)
    plc._limit[:] = 0.0
    plc.points, plc.mode = [q + 0.1], MOVING
    plc._plan()
    assert plc.mode == ERROR and plc.error_code == 100
