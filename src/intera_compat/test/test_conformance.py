"""``rosrun intera_compat conformance`` on each emulator backend (wall time): every case the backend can do passes.

One launch per backend, one run of the tool on it, one test per case (``conformance_run``); the simulated Sawyer's run
is ``test_conformance_sim.py`` (simulated time, on the other test worker)."""
from __future__ import annotations

import pytest
from conformance_run import MARKS, Conformance, conformance, per_backend_table  # noqa: F401 (the fixtures)
from conftest import ROBOT_LAUNCHES

pytestmark = MARKS


class TestRosControl(Conformance):
    backend = "ros_control"
    launch = (*ROBOT_LAUNCHES["ros_control"], "no_rt:=true")


class TestUR(Conformance):
    backend = "ur"
    launch = (*ROBOT_LAUNCHES["ur"], "no_rt:=true")


class TestCobot(Conformance):
    backend = "cobot"
    launch = (*ROBOT_LAUNCHES["cobot"], "no_rt:=true")
