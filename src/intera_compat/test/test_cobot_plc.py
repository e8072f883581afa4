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


def test_a_stall_of_the_plcs_own_server_is_no_silence_of_the_clients_lifebit():
    """The lifebit's value reaches the watch through the server's reads (every PUBLISH_PERIOD). With the loop and the
    emulator on one loaded machine the server stalled (a 0.5 s watch tripped 0.14 s into a motion on a client that
    toggled on): time while it cannot read the value is not counted, before or after it reads again; a client that
    really goes quiet is still stopped after the timeout of the time the PLC could see."""
    from intera_compat.emulator.cobot_plc import FEED_STALL, LIFEBIT_ERROR, PUBLISH_PERIOD
    plc = CobotPLC(lifebit_timeout=0.2)
    clock = [0.0]
    plc.clock = lambda: clock[0]

    def at(t, value=None):  # the PLC's cycle at t, the server's read before it (value None: no read)
        clock[0] = t
        if value is not None:
            plc.feed_lifebit(value)
        plc.now = t
        plc._watch_lifebit()
    plc.mode = MOVING  # (a motion under way: the watch stops it)
    bit, t = False, 0.0
    for _ in range(10):  # a client toggling every 20 ms, read every 10 ms
        t += PUBLISH_PERIOD
        bit = not bit if round(t / PUBLISH_PERIOD) % 2 == 0 else bit
        at(t, bit)
    assert plc.lifebit_armed
    for k in range(1, 30):  # the server stalls 0.3 s (longer than the timeout): no reads while the arm's cycles go on
        at(t + k * PUBLISH_PERIOD)
    t += 0.3
    at(t, bit)  # it reads again: the same value (an even number of toggles meanwhile), and the next one changes
    at(t + PUBLISH_PERIOD, not bit)
    assert plc.error_code == 0 and plc.lifebit_armed
    t += PUBLISH_PERIOD
    for k in range(1, 40):  # the client goes quiet; the server keeps reading
        at(t + k * PUBLISH_PERIOD, not bit)
        if plc.error_code:
            break
    assert plc.error_code == LIFEBIT_ERROR and 0.2 < k * PUBLISH_PERIOD <= 0.2 + FEED_STALL
    assert plc.trip["forgiven"] == 0.0  # (nothing stalled since the last change)


def test_a_plc_server_that_stops_reading_the_lifebit_still_stops_the_motion():
    """The server's own stalls are forgiven up to one timeout only: one that never reads the value again (its task
    gone) still stops a moving arm, after twice the timeout of the last change."""
    from intera_compat.emulator.cobot_plc import LIFEBIT_ERROR, PUBLISH_PERIOD
    plc = CobotPLC(lifebit_timeout=0.2)
    clock = [0.0]
    plc.clock = lambda: clock[0]
    plc.mode = MOVING
    for k in range(1, 11):  # toggled and read every 10 ms
        clock[0] = plc.now = k * PUBLISH_PERIOD
        plc.feed_lifebit(k % 2 == 0)
        plc._watch_lifebit()
    last = plc._lifebit_at
    t = clock[0]
    while plc.error_code == 0 and t < 5.0:  # the client and the reads stop together
        t += PUBLISH_PERIOD
        plc.now = t
        plc._watch_lifebit()
    assert plc.error_code == LIFEBIT_ERROR and 0.4 < t - last <= 0.4 + PUBLISH_PERIOD + 1e-9
    assert plc.trip["before"] == last and plc.trip["forgiven"] == 0.2
