"""The rest of the robot's IO on the simulated Sawyer: the legacy DigitalIO interface (intera_interface.DigitalIO:
a component's state within 2 s, set_output re-sent at 100 Hz until the state matches) kept one with the IO
framework's devices."""
import json

import pytest
from intera_core_msgs.msg import DigitalIOState, DigitalOutputCommand, IOComponentCommand, IODeviceStatus
from ros_helpers import IOClient, Latest, io_value, publisher, wait_for

pytestmark = pytest.mark.node


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
        assert wait_for(lambda: light.msg.state == want, 2.0, every=lambda: cmd.publish(msg))
        assert wait_for(lambda: io_value(lights.msg, "head_green_light") is on, 2.0)  # the same light
    press = publisher("/robot/sim/io/navigator", IOComponentCommand)  # the sim presses OK on the arm's navigator
    press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {"right_button_ok": {"data": [1]}}})))
    assert wait_for(lambda: ok.msg.state == DigitalIOState.PRESSED, 2.0)
    for bad in (DigitalOutputCommand(name="right_button_ok", value=False),  # input only
                DigitalOutputCommand(name="no_such_light", value=True)):
        for _ in range(10):
            cmd.publish(bad)
    wait_for(lambda: False, 0.5)
    assert ok.msg.state == DigitalIOState.PRESSED and light.msg.state == DigitalIOState.ON
    for holder in (light, ok, lights):
        holder.close()


def test_calibration_refuses_with_a_gripper_on(sim):
    import actionlib
    import rospy
    from intera_core_msgs.msg import CalibrationCommandAction, CalibrationCommandGoal, CalibrationCommandResult
    client = actionlib.SimpleActionClient("/calibration_command", CalibrationCommandAction)
    assert client.wait_for_server(rospy.Duration(10))  # (calibrate_arm.py waits 10 s)
    rospy.sleep(1.0)  # (the server hears of the end effector)
    client.send_goal(CalibrationCommandGoal(command=CalibrationCommandGoal.CALIBRATION_START))
    assert client.wait_for_result(rospy.Duration(10))
    res = client.get_result()
    assert not res.result and res.statusId == CalibrationCommandResult.GRIPPER_ON


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
    assert client.wait_for_server(rospy.Duration(10))
    feedback = []
    q0 = arm_positions(js)
    client.send_goal(start, feedback_cb=feedback.append)
    assert wait_for(lambda: any(f.currentState.startswith("measuring") for f in feedback), 20)
    moved = np.abs(arm_positions(js) - q0).max()
    stopper = actionlib.SimpleActionClient("/calibration_command", CalibrationCommandAction)  # calibrate_arm's Ctrl-C
    stopper.send_goal(CalibrationCommandGoal(command=CalibrationCommandGoal.CALIBRATION_STOP))
    assert client.wait_for_result(rospy.Duration(10)) and stopper.wait_for_result(rospy.Duration(10))
    assert client.get_state() == GoalStatus.PREEMPTED and client.get_result().statusId == \
        CalibrationCommandResult.STOPPED and not client.get_result().result
    assert stopper.get_result().result and stopper.get_result().statusId == CalibrationCommandResult.STOPPED
    assert moved > 0.05  # it had gone to its first pose
    feedback.clear()
    client.send_goal(start, feedback_cb=feedback.append)
    assert client.wait_for_result(rospy.Duration(90))
    res = client.get_result()
    assert res.result and res.statusId == CalibrationCommandResult.SUCCESS
    assert wait_for(lambda: feedback and feedback[-1].currentState == "done", 2)  # (feedback: its own topic)
    numbers = [f.currentPoseNumber for f in feedback]
    assert numbers == sorted(numbers) and numbers[-1] == feedback[-1].numberOfPoses >= 5
    robot.close()


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
        assert wait_for(lambda: io_value(cuff.msg, button) == 1, 2.0)  # (the script polls the cuff at 10 Hz)
        assert g.set("position_m", target, "float") == ""  # close() / open()
        for part in ("head", "right_hand"):
            set_light(f"{part}_{color}_light", True)
        press.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {button: {"data": [0]}}})))
        assert wait_for(lambda: abs(g.get("position_response_m") - target) < 1e-4 and not g.get("is_moving"), 3)
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
        assert wait_for(lambda: io_value(nav.msg, name) == v, 2.0), name
    nav.close()
