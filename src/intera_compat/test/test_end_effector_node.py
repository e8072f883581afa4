"""IO node end_effector as intera_interface uses it: GripperFactory (node state / config, the tag that makes it
calibrate), Gripper (calibrate, open / close with every command acknowledged in the state that already shows it,
an object gripped with force), a malformed command answered with its error and nothing changed, the ClickSmart's
activate / grip / reconfigure (io_config_editor.py's save and load), and a robot with no tool."""
import json

import pytest
import rospy
from intera_core_msgs.msg import IOComponentCommand, IONodeConfiguration, IONodeStatus
from ros_helpers import IOClient, Latest, publisher, wait_for

pytestmark = pytest.mark.node
EE = "/io/end_effector"


def start(launch, tool):
    launch("rosrun", "intera_compat", "io_end_effector", f"_tool:={tool}", log_name="ee.log")
    node = Latest(f"{EE}/state", IONodeStatus)
    config = Latest(f"{EE}/config", IONodeConfiguration)
    assert node.wait(30) and config.wait(10)
    return node, config


def test_the_electric_gripper_as_gripper_factory_and_gripper_use_it(launch):
    node, config = start(launch, "electric_gripper")
    assert config.msg.devices[0].name == "right_gripper"  # Gripper(): devices[0]
    assert json.loads(config.msg.devices[0].config)["props"]["type"] == "ElectricParallelGripper"
    assert node.msg.devices[0].name == "right_gripper" and node.msg.devices[0].status.tag == "unready"  # → calibrate
    g = IOClient("end_effector", "right_gripper")
    assert not g.get("is_calibrated") and not g.get("has_error")
    assert "not calibrated" in g.set("position_m", 0.0, "float")  # nothing moves before calibration
    assert g.set("calibrate", True, "bool") == ""
    assert wait_for(lambda: g.get("is_calibrated"), 5)  # (Gripper.calibrate waits 5 s)
    assert wait_for(lambda: node.msg.devices[0].status.tag == "ready", 2)
    assert g.get("position_response_m") == pytest.approx(0.041667, abs=1e-5)
    assert g.set("speed_mps", 0.15, "float") == "" and g.get("speed_mps") == 0.15  # already in the acknowledging state
    assert g.set("position_m", 0.0, "float") == ""  # close()
    assert wait_for(lambda: g.get("is_moving"), 2)
    assert wait_for(lambda: g.get("position_response_m") == 0.0 and not g.get("is_moving"), 3)
    assert not g.get("is_gripping")
    sim = publisher("/robot/sim/io/right_gripper", IOComponentCommand)  # the simulator's object between the fingers
    sim.publish(IOComponentCommand(op="set", args=json.dumps({"signals": {"object_width_m": {"data": [0.025]}}})))
    assert g.set("position_m", 0.041667, "float") == ""  # open() ...
    assert wait_for(lambda: g.get("position_response_m") > 0.04 and not g.get("is_moving"), 3)
    assert g.set("cmd_grip", True, "bool") == ""  # ... and grip it
    assert wait_for(lambda: g.get("is_gripping") and g.get("force_response_n") > 0.0, 3)
    assert g.get("position_response_m") == pytest.approx(0.025)
    assert g.set("right_gripper_tip_object_kg", 0.3, "float") == "" and g.get("right_gripper_tip_object_kg") == 0.3
    # malformed: acknowledged with its error, nothing changes
    for args, words in (('{"signals": {"position_m": {"data": [0.01]', "not JSON"),
                        (json.dumps({"signals": {"fingers": {"data": [1.0]}}}), "does not exist"),
                        (json.dumps({"signals": {"position_m": {"data": ["wide"]}}}), "is float"),
                        (json.dumps({"signals": {"position_m": {"data": [0.5]}}}), "must lie in")):
        assert words in g.send(args)
    assert g.get("is_gripping") and g.get("position_m") == 0.0
    g.close()


def test_a_clicksmart_activates_grips_and_is_reconfigured_as_io_config_editor_does(launch):
    node, config = start(launch, "clicksmart")
    name = node.msg.devices[0].name
    device_cfg = json.loads(config.msg.devices[0].config)
    assert device_cfg["props"]["type"] == "SmartToolPlate" and node.msg.devices[0].status.tag == "unready"
    cmd = publisher(f"{EE}/command", IOComponentCommand)

    def node_command(op, args):
        stamp = rospy.Time.now()
        msg = IOComponentCommand(time=stamp, op=op, args=json.dumps(args))
        assert wait_for(lambda: stamp in node.msg.commands, 5, period=0.1, every=lambda: cmd.publish(msg))
        return json.loads(node.msg.node.status.detail).get("last_command_error", "")

    tool = IOClient("end_effector", name)
    ep = next(iter(json.loads(tool.config.msg.device.config)["params"]["endpoints"].values()))
    assert "not activated" in tool.set(ep["grip"], True, "bool")
    assert node_command("activate", {"devices": [name]}) == ""  # SimpleClickSmartGripper.initialize()
    assert wait_for(lambda: node.msg.devices[0].status.tag == "ready", 5)
    assert tool.set(ep["grip"], True, "bool") == ""
    assert wait_for(lambda: tool.get(ep["closed"]) and not tool.get(ep["open"]), 3)
    # io_config_editor.py -s: the device's config; -l: a changed one sent back (reconfigure, write_config)
    saved = json.loads(tool.config.msg.device.config)
    saved["params"]["endpoints"] = {"fingers": {"endpoint_id": "fingers", "label": "Fingers", "type": "parallel",
                                                "actuationTimeS": 0.2, "grip": "fingers_grip",
                                                "closed": "fingers_closed", "open": "fingers_open"}}
    t_cfg = tool.config.msg.time
    assert node_command("reconfigure", {"devices": {name: saved}, "write_config": True}) == ""
    assert wait_for(lambda: tool.config.msg.time > t_cfg, 5)
    assert [s.name for s in tool.config.msg.signals] and {s.name for s in tool.config.msg.signals} == \
        {"fingers_grip", "fingers_closed", "fingers_open"}
    assert wait_for(lambda: node.msg.devices[0].status.tag == "unready", 5)  # needs_init → initialize()
    assert "params.endpoints" in node_command("reconfigure", {"devices": {name: {"props": {"type": "SmartToolPlate"}}}})
    assert "no device" in node_command("activate", {"devices": ["right_gripper"]})
    assert node_command("activate", {"devices": [name]}) == ""
    assert wait_for(lambda: node.msg.devices[0].status.tag == "ready", 5)
    assert tool.set("fingers_grip", True, "bool") == ""
    assert wait_for(lambda: tool.get("fingers_closed"), 3)
    tool.close()


def test_no_tool_means_no_gripper_for_the_factory(launch):
    node, config = start(launch, "none")
    assert node.msg.devices == [] and config.msg.devices == []  # GripperFactory: "No gripper attached"
