"""The IO framework's device state machine (pure): what intera_io's client relies on."""
import json

import pytest

from intera_compat.io.device import COMMAND_HISTORY, IODevice, Signal, cuff, lights, navigator


def set_args(**values):
    return json.dumps({"signals": {k: {"format": {"type": "bool"}, "data": [v]} for k, v in values.items()}})


def test_every_signal_states_type_and_role_and_data_is_an_array():
    for dev in (cuff(), navigator(), lights()):
        for s in dev.signals.values():
            fmt = json.loads(s.format)
            assert fmt["type"] in ("bool", "int") and fmt["role"] == "input"
            assert isinstance(json.loads(s.data), list) and len(json.loads(s.data)) == 1
    assert set(cuff().signals) == {"right_button_lower", "right_button_upper", "right_cuff"}
    nav = navigator().signals
    assert {"right_button_ok", "right_button_show", "right_wheel", "head_button_circle"} <= set(nav)
    assert json.loads(nav["right_wheel"].format)["data_type"] == "u8"
    assert sorted(s for s in lights().signals if "light" in s) == sorted(lights().signals)


def test_a_set_is_applied_acknowledged_once_and_resends_are_ignored():
    dev = lights()
    v0 = dev.version
    assert dev.command((10, 5), "set", set_args(head_red_light=True)) == (True, "")
    assert dev.value("head_red_light") is True and dev.version == v0 + 1
    assert [k for k, _ in dev.commands] == [(10, 5)]
    # the client re-sends the same command until it sees the ack: nothing happens again
    dev.signals["head_red_light"].value = False
    assert dev.command((10, 5), "set", set_args(head_red_light=True)) == (False, "")
    assert dev.value("head_red_light") is False and len(dev.commands) == 1


@pytest.mark.parametrize("op, args, why", [
    ("set", "{not json", "not JSON"),
    ("get", set_args(head_red_light=True), "op 'get'"),
    ("set", set_args(head_purple_light=True), "'head_purple_light' does not exist"),
    ("set", json.dumps({"signals": {"head_red_light": {"data": ["yes"]}}}), "is bool"),
    ("set", json.dumps({"signals": {"head_red_light": {"data": [True, False]}}}), "one-element"),
    ("set", json.dumps({"ports": {}}), "no ports"),
])
def test_a_malformed_command_changes_nothing_and_is_answered_with_its_error(op, args, why):
    dev = lights()
    assert dev.command((1, 0), "set", set_args(right_hand_green_light=True))[1] == ""
    before = {k: s.value for k, s in dev.signals.items()}
    new, err = dev.command((2, 0), op, args)
    assert new and why in err
    assert {k: s.value for k, s in dev.signals.items()} == before
    assert dev.commands[-1] == ((2, 0), err) and why in json.loads(dev.detail)["last_command_error"]


def test_inputs_are_read_only_to_commands_but_the_hardware_sets_them():
    dev = cuff()
    _, err = dev.command((1, 0), "set", json.dumps({"signals": {"right_cuff": {"data": [1]}}}))
    assert "read-only" in err and dev.value("right_cuff") == 0
    dev.set_inputs({"right_cuff": 1})
    assert dev.value("right_cuff") == 1
    with pytest.raises(ValueError, match="is int"):
        dev.set_inputs({"right_cuff": 0.5})
    with pytest.raises(ValueError, match="does not exist"):
        dev.set_inputs({"left_cuff": 1})


def test_the_command_history_keeps_the_last_hundred():
    dev = IODevice("d", [Signal("x", "int", writable=True)])
    for k in range(COMMAND_HISTORY + 20):
        dev.command((k, 0), "set", json.dumps({"signals": {"x": {"data": [k]}}}))
    assert len(dev.commands) == COMMAND_HISTORY and dev.commands[0][0] == (20, 0)
    assert dev.command((5, 0), "set", json.dumps({"signals": {"x": {"data": [-1]}}}))[0]  # forgotten: new again
    assert dev.value("x") == -1
