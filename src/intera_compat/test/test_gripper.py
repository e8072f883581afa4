"""The simulated end effectors without ROS: the electric gripper (calibration, targets at the commanded speed, an
object stopping the fingers and held, reboot, go, refusals) and the ClickSmart plate (activation, grip timing,
reconfiguration and its checks), driven by the IO commands intera_interface sends."""
import itertools
import json

import pytest

from intera_compat.io.clicksmart import ClickSmart, default_config
from intera_compat.io.gripper import HOLD_FORCE, MAX_POSITION, ElectricGripper

STAMP = itertools.count(1)


def set_signal(dev, name, value, kind):
    """IODeviceInterface.set_signal_value's command; (new, error)."""
    args = json.dumps({"signals": {name: {"format": {"type": kind}, "data": [value]}}})
    return dev.command((next(STAMP), 0), "set", args)


def run(tool, seconds, dt=0.01):
    for _ in range(int(round(seconds / dt))):
        tool.step(dt)


def value(tool, name):
    return tool.device.value(name)


@pytest.fixture
def gripper():
    g = ElectricGripper()
    assert set_signal(g.device, "calibrate", True, "bool") == (True, "")  # Gripper(): calibrate unless calibrated
    run(g, 1.5)
    assert value(g, "is_calibrated") and not value(g, "calibrate") and not value(g, "is_moving")
    return g


def test_calibration_opens_the_fingers_and_nothing_moves_before_it():
    g = ElectricGripper()
    new, err = set_signal(g.device, "position_m", 0.01, "float")
    assert new and "not calibrated" in err and value(g, "position_m") == pytest.approx(MAX_POSITION)
    set_signal(g.device, "calibrate", True, "bool")
    g.step(0.01)
    assert value(g, "is_moving") and not value(g, "is_calibrated")
    run(g, 1.5)
    assert value(g, "is_calibrated") and value(g, "position_response_m") == pytest.approx(MAX_POSITION, abs=1e-6)


def test_the_fingers_move_at_the_commanded_speed_to_the_target(gripper):
    g = gripper
    assert set_signal(g.device, "speed_mps", 0.2, "float") == (True, "")
    set_signal(g.device, "position_m", 0.0, "float")  # close()
    run(g, 0.1)
    assert value(g, "position_response_m") == pytest.approx(MAX_POSITION - 0.02, abs=1e-4)  # 0.2 m/s
    assert value(g, "is_moving")
    run(g, 0.2)
    assert value(g, "position_response_m") == 0.0 and not value(g, "is_moving") and not value(g, "is_gripping")
    set_signal(g.device, "cmd_grip", False, "bool")  # opens
    run(g, 0.3)
    assert value(g, "position_response_m") == pytest.approx(MAX_POSITION, abs=1e-6)


def test_an_object_stops_the_fingers_and_is_held_until_opened(gripper):
    g = gripper
    g.device.set_inputs({"object_width_m": 0.02})  # the simulator puts an object between the fingers
    set_signal(g.device, "cmd_grip", True, "bool")
    run(g, 0.5)
    assert value(g, "position_response_m") == pytest.approx(0.02) and value(g, "is_gripping")
    assert value(g, "force_response_n") == HOLD_FORCE and not value(g, "is_moving")
    set_signal(g.device, "position_m", 0.03, "float")
    run(g, 0.5)
    assert not value(g, "is_gripping") and value(g, "force_response_n") == 0.0
    assert value(g, "position_response_m") == pytest.approx(0.03)


def test_go_false_stops_the_fingers_and_reboot_forgets_the_calibration(gripper):
    g = gripper
    set_signal(g.device, "speed_mps", 0.15, "float")
    set_signal(g.device, "position_m", 0.0, "float")
    run(g, 0.1)
    set_signal(g.device, "go", False, "bool")  # stop()
    p = value(g, "position_response_m")
    run(g, 0.2)
    assert value(g, "position_response_m") == p and not value(g, "is_moving")
    set_signal(g.device, "go", True, "bool")  # start(): on to the target
    run(g, 0.5)
    assert value(g, "position_response_m") == 0.0
    g.device.set_inputs({"has_error": True})  # the simulator's fault
    assert "in error" in set_signal(g.device, "position_m", 0.02, "float")[1]
    set_signal(g.device, "reboot", True, "bool")
    assert not value(g, "has_error") and not value(g, "is_calibrated") and not value(g, "reboot")


@pytest.mark.parametrize("name, data, words", [
    ("position_m", 0.05, "must lie in"), ("speed_mps", 0.01, "must lie in"), ("is_gripping", True, "read-only"),
    ("position_m", "open", "is float"), ("finger", 1.0, "does not exist"),
    ("right_gripper_tip_object_kg", 9.0, "must lie in"),
])
def test_a_bad_set_is_refused_and_changes_nothing(gripper, name, data, words):
    before = {k: s.value for k, s in gripper.device.signals.items()}
    new, err = set_signal(gripper.device, name, data, "float")
    assert new and words in err
    assert {k: s.value for k, s in gripper.device.signals.items()} == before


def test_a_clicksmart_grips_after_activation_and_its_actuation_time():
    c = ClickSmart()
    ep = default_config()["params"]["endpoints"]["vacuum_cup"]
    assert c.tag == "unready" and "not activated" in set_signal(c.device, ep["grip"], True, "bool")[1]
    c.activate()
    assert set_signal(c.device, ep["grip"], True, "bool") == (True, "")
    run(c, 0.2)
    assert value(c, ep["open"]) and not value(c, ep["closed"])  # 0.3 s to actuate
    run(c, 0.2)
    assert value(c, ep["closed"]) and not value(c, ep["open"])
    assert set_signal(c.device, ep["object_kg"], 0.5, "float") == (True, "")


def test_a_clicksmart_reconfigure_is_checked_and_needs_activating_again():
    c = ClickSmart()
    c.activate()
    cfg = default_config()
    cfg["params"]["endpoints"] = {"fingers": {"endpoint_id": "fingers", "label": "Fingers", "type": "parallel",
                                              "actuationTimeS": 0.1, "grip": "grip_fingers",
                                              "closed": "fingers_closed"}}
    c.reconfigure(cfg)
    assert c.tag == "unready" and set(c.device.signals) == {"grip_fingers", "fingers_closed"}
    for bad, words in (({"props": {"type": "ElectricParallelGripper"}}, "props.type"),
                       ({**cfg, "params": {"endpoints": {}}}, "params.endpoints"),
                       ({**cfg, "params": {"endpoints": {"a": {"squeeze": "x"}}}}, "unknown EE signal type"),
                       ({**cfg, "params": {"endpoints": {"a": {"grip": "x", "closed": "x"}}}}, "of its own")):
        with pytest.raises(ValueError, match=words):
            c.reconfigure(bad)
    assert set(c.device.signals) == {"grip_fingers", "fingers_closed"}  # unchanged
