"""The rest of the robot's IO on the simulated Sawyer: the legacy DigitalIO interface (intera_interface.DigitalIO:
a component's state within 2 s, set_output re-sent at 100 Hz until the state matches) kept one with the IO
framework's devices.

One launch of the simulated Sawyer (without its cameras) for the module's tests that use it, each from the robot
reset, enabled and the arm where it started; the calibration test starts its own (no end effector)."""
import json

import pytest
from intera_core_msgs.msg import DigitalIOState, DigitalOutputCommand, IOComponentCommand, IODeviceStatus
from ros_helpers import IOClient, Latest, io_value, publisher, wait_for
from shared_robot import DIGITAL_IO_KEYS, LoopCounters, delta, shared_launch

pytestmark = pytest.mark.node
shared = shared_launch("robot_io_sim")


@pytest.fixture
def sim(shared):
    js = shared.up("sawyer_sim.launch", "no_rt:=true", "cameras:=false")
    shared.home()
    return js


@pytest.fixture
def launch(shared, launch):
    """conftest's, the shared launch stopped first (the same node names)."""
    shared.stop()
    yield launch


def test_legacy_digital_io_shows_buttons_and_switches_lights(sim):
    light = Latest("/robot/digital_io/head_green_light/state", DigitalIOState)
    ok = Latest("/robot/digital_io/right_button_ok/state", DigitalIOState)
    lights = Latest("/io/robot/robot/state", IODeviceStatus)
    assert light.wait(2.0) and ok.wait(2.0) and lights.wait(10)  # DigitalIO(): a state within 2 s
    assert not light.msg.isInputOnly and ok.msg.isInputOnly and ok.msg.state == DigitalIOState.UNPRESSED
    cmd = publisher("/robot/digital_io/command", DigitalOutputCommand)
    for on in (True, False, True):  # DigitalIO.set_output: re-sent until the state says so
        want = DigitalIOState.ON if on else DigitalIOState.OFF
        msg = DigitalOutputCommand(name="head_green_light", value=on)
        assert wait_for(lambda: light.msg.state == want, 60, every=lambda: cmd.publish(msg))
        assert wait_for(lambda: io_value(lights.msg, "head_green_light") is on, 60)  # the same light
    press = publisher("/robot/sim/io/navigator", IOComponentCommand)  # the sim presses OK on the arm's navigator
    press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {"right_button_ok": {"data": [1]}}})))
    assert wait_for(lambda: ok.msg.state == DigitalIOState.PRESSED, 60)
    # bad ones: they arrive (the legacy interface's diagnostics status counts them), each is refused, nothing changes
    bad = (DigitalOutputCommand(name="right_button_ok", value=False),  # input only
           DigitalOutputCommand(name="no_such_light", value=True))
    counts = LoopCounters(DIGITAL_IO_KEYS)
    before = counts.next()

    def send():
        for m in bad:
            cmd.publish(m)
    after = counts.until(lambda c: delta(c, before, "received", "digital_io_commands") >= 20, every=send,
                         period=0.02)
    counts.close()
    assert delta(after, before, "refused", "digital_io_commands") == delta(after, before, "received",
                                                                            "digital_io_commands")
    assert delta(after, before, "applied", "digital_io_commands") == 0
    assert ok.msg.state == DigitalIOState.PRESSED and light.msg.state == DigitalIOState.ON
    press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {"right_button_ok": {"data": [0]}}})))
    assert wait_for(lambda: ok.msg.state == DigitalIOState.UNPRESSED, 60)  # (let go, for the module's next test)
    for holder in (light, ok, lights):
        holder.close()


def test_calibration_refuses_with_a_gripper_on(sim):
    import actionlib
    import rospy
    from intera_core_msgs.msg import CalibrationCommandAction, CalibrationCommandGoal, CalibrationCommandResult
    import rosgraph
    from intera_core_msgs.msg import IONodeStatus
    client = actionlib.SimpleActionClient("/calibration_command", CalibrationCommandAction)
    assert client.wait_for_server(rospy.Duration(60))  # (calibrate_arm.py waits 10 s)
    # the server hears of the end effector: it subscribes to the IO node's state (published at its rate), and
    # three of those come after it did
    master = rosgraph.Master(rospy.get_name())
    assert wait_for(lambda: any(t == "/io/end_effector/state" and "/calibration_server" in nodes
                                for t, nodes in master.getSystemState()[1]), 60)
    ee = Latest("/io/end_effector/state", IONodeStatus)
    assert wait_for(lambda: ee.count >= 3, 60)
    ee.close()
    client.send_goal(CalibrationCommandGoal(command=CalibrationCommandGoal.CALIBRATION_START))
    assert client.wait_for_result(rospy.Duration(60))
    res = client.get_result()
    assert not res.result and res.statusId == CalibrationCommandResult.GRIPPER_ON


def test_gripper_cuff_control_closes_the_gripper_on_the_cuff_button(sim):
    """gripper_cuff_control.py's shape: the cuff's upper button (pressed by the sim) → the gripper closes and the
    red lights go on; the lower button → it opens, green lights."""
    import rospy
    cuff = Latest("/io/robot/cuff/state", IODeviceStatus)
    lights = Latest("/io/robot/robot/state", IODeviceStatus)
    assert cuff.wait(10) and lights.wait(10)
    g = IOClient("end_effector", "right_gripper")
    if not g.get("is_calibrated"):  # get_current_gripper_interface → Gripper(calibrate=needs_init)
        assert g.set("calibrate", True, "bool") == ""
        assert wait_for(lambda: g.get("is_calibrated"), 5)
    light_pub = publisher("/io/robot/robot/command", IOComponentCommand)

    def set_light(name, on):  # Lights.set_light_state: re-sent until acknowledged
        stamp = rospy.Time.now()
        cmd = IOComponentCommand(time=stamp, op="set", args=json.dumps(
            {"signals": {name: {"format": {"type": "bool"}, "data": [on]}}}))
        assert wait_for(lambda: stamp in lights.msg.commands, 5, period=0.1, every=lambda: light_pub.publish(cmd))

    press = publisher("/robot/sim/io/cuff", IOComponentCommand)
    for button, target, color in (("right_button_upper", 0.0, "red"), ("right_button_lower", 0.041667, "green")):
        press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {button: {"data": [1]}}})))
        assert wait_for(lambda: io_value(cuff.msg, button) == 1, 60)  # (the script polls the cuff at 10 Hz)
        assert g.set("position_m", target, "float") == ""  # close() / open()
        for part in ("head", "right_hand"):
            set_light(f"{part}_{color}_light", True)
        press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {button: {"data": [0]}}})))
        assert wait_for(lambda: abs(g.get("position_response_m") - target) < 1e-4 and not g.get("is_moving"), 60)
        assert io_value(lights.msg, f"head_{color}_light") is True and io_value(lights.msg, f"right_hand_{color}_light")
    g.close()


def test_navigator_io_sees_every_button_and_the_wheel(sim):
    """navigator_io.py's shape: the six right_button_* and right_wheel seen in the device's state."""
    nav = Latest("/io/robot/navigator/state", IODeviceStatus)
    assert nav.wait(10)
    press = publisher("/robot/sim/io/navigator", IOComponentCommand)
    for name, v in [(f"right_button_{b}", 1) for b in ("back", "circle", "ok", "show", "square", "triangle")] + \
            [("right_wheel", 17), ("right_wheel", 250)]:
        press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {name: {"data": [v]}}})))
        assert wait_for(lambda: io_value(nav.msg, name) == v, 60), name
    nav.close()


# (last: a launch of its own)
def test_calibration_visits_its_poses_with_feedback_and_stops_on_stop(launch):
    import actionlib
    import numpy as np
    import rospy
    from actionlib_msgs.msg import GoalStatus
    from conftest import _start_robot
    from intera_core_msgs.msg import CalibrationCommandAction, CalibrationCommandGoal, CalibrationCommandResult
    from ros_helpers import arm_positions, enabled
    robot = enabled(_start_robot(launch, "sim", "end_effector:=none"))
    _, js, _ = next(robot)
    start = CalibrationCommandGoal(command=CalibrationCommandGoal.CALIBRATION_START)
    client = actionlib.SimpleActionClient("/calibration_command", CalibrationCommandAction)
    assert client.wait_for_server(rospy.Duration(60))
    feedback = []
    q0 = arm_positions(js)
    client.send_goal(start, feedback_cb=feedback.append)
    assert wait_for(lambda: any(f.currentState.startswith("measuring") for f in feedback), 120)
    moved = np.abs(arm_positions(js) - q0).max()
    stopper = actionlib.SimpleActionClient("/calibration_command", CalibrationCommandAction)  # calibrate_arm's Ctrl-C
    stopper.send_goal(CalibrationCommandGoal(command=CalibrationCommandGoal.CALIBRATION_STOP))
    assert client.wait_for_result(rospy.Duration(60)) and stopper.wait_for_result(rospy.Duration(60))
    assert client.get_state() == GoalStatus.PREEMPTED and client.get_result().statusId == \
        CalibrationCommandResult.STOPPED and not client.get_result().result
    assert stopper.get_result().result and stopper.get_result().statusId == CalibrationCommandResult.STOPPED
    assert moved > 0.05  # it had gone to its first pose
    feedback.clear()
    client.send_goal(start, feedback_cb=feedback.append)
    assert client.wait_for_result(rospy.Duration(90))
    res = client.get_result()
    assert res.result and res.statusId == CalibrationCommandResult.SUCCESS
    assert wait_for(lambda: feedback and feedback[-1].currentState == "done", 60)  # (feedback: its own topic)
    numbers = [f.currentPoseNumber for f in feedback]
    assert numbers == sorted(numbers) and numbers[-1] == feedback[-1].numberOfPoses >= 5
    robot.close()
