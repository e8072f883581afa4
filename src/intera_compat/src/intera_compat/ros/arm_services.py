"""Services that reach the arm's own controller through the loop (``Backend.request``), for the arms that have
them (``Backend.requests``): ``/robot/arm/zero_ft_sensor`` (std_srvs/Trigger), ``/robot/arm/set_payload``
(intera_compat/SetPayload) — both with the robot disabled only (the controller takes its time over them, and the
loop's own model and wrench baseline are not told) — and ``/robot/arm/tool_contact`` (intera_compat/ToolContact).
A Cobot's ``execution_mode`` (single_point | full_trajectory) and ``resampling_delta`` (rad) are the parameters
``/robot/cobot/execution_mode`` and ``/robot/cobot/resampling_delta``, changeable at run time (``rosparam set``;
watched twice a second, a bad value refused with a log naming it and set back).

Arguments are checked here (a refusal names the field and nothing is sent); the request goes to the loop, whose
backend asks the controller beside the cycle; the answer comes back on the loop's return ring (polled by the
listener's publisher thread into ``answers``)."""
from __future__ import annotations

import itertools
import math
import time

import numpy as np
import rospy
from std_srvs.srv import Trigger, TriggerResponse

from intera_compat.srv import SetPayload, SetPayloadResponse, ToolContact, ToolContactResponse

from ..data.codes import (ARM_COBOT_SETTINGS, ARM_REQUESTS, ARM_RESULT_ENABLED, ARM_RESULT_OK, ARM_RESULT_UNSUPPORTED,
                          ARM_SET_PAYLOAD, ARM_TOOL_CONTACT, ARM_ZERO_FT)
from ..hardware.cobot import EXECUTION_MODES, check_delta, check_mode

ANSWER_TIMEOUT = 10.0  # s
COBOT_MODE, COBOT_DELTA = "/robot/cobot/execution_mode", "/robot/cobot/resampling_delta"


class ArmServices:
    def __init__(self, requests: frozenset, post, answers: dict, payload_max: float, backend: str,
                 cobot: tuple | None = None):
        """``post(array) -> bool``: a MSG_ARM_REQUEST to the loop; ``answers``: request id → (result, value)."""
        self.post, self.answers, self.payload_max, self.backend = post, answers, payload_max, backend
        self._ids = itertools.count(1)
        unknown = set(requests) - set(ARM_REQUESTS)
        if unknown:
            raise ValueError(f"backend {backend} declares unknown arm requests {sorted(unknown)}")
        if "zero_ft_sensor" in requests:
            rospy.Service("/robot/arm/zero_ft_sensor", Trigger, self._zero_ft)
        if "set_payload" in requests:
            rospy.Service("/robot/arm/set_payload", SetPayload, self._payload)
        if "tool_contact" in requests:
            rospy.Service("/robot/arm/tool_contact", ToolContact, self._contact)
        if "cobot_settings" in requests and cobot is not None:
            self._cobot = cobot
            rospy.set_param(COBOT_MODE, cobot[0])
            rospy.set_param(COBOT_DELTA, cobot[1])
            self._watch = rospy.Timer(rospy.Duration(0.5), self._cobot_settings)

    def _ask(self, code: int, args=()) -> tuple[bool, float, str]:
        rid = next(self._ids)
        for old in [k for k in self.answers if k < rid - 100]:  # (answers that came after their caller gave up)
            self.answers.pop(old, None)
        if not self.post(np.array([rid, code, *args], dtype=float)):
            return False, 0.0, "the realtime loop did not take the request (is it running?)"
        end = time.monotonic() + ANSWER_TIMEOUT
        while rid not in self.answers:
            if time.monotonic() > end or rospy.is_shutdown():
                return False, 0.0, f"no answer from the arm within {ANSWER_TIMEOUT:g} s"
            time.sleep(0.005)
        result, value = self.answers.pop(rid)
        if result == ARM_RESULT_OK:
            return True, value, ""
        if result == ARM_RESULT_ENABLED:
            return False, value, ("disable the robot first (the controller stops executing motion while it does "
                                  "this)")
        if result == ARM_RESULT_UNSUPPORTED:
            return False, value, f"the {self.backend} arm does not serve this request"
        why = " (its control script does not run: enable the robot once)" if value == -1.0 else ""
        return False, value, f"the arm's controller refused or failed it{why}"

    def _zero_ft(self, _req):
        ok, _, why = self._ask(ARM_ZERO_FT)
        return TriggerResponse(ok, "F/T sensor zeroed" if ok else why)

    def _payload(self, req):
        c = req.center_of_gravity
        cog = (c.x, c.y, c.z)
        if not (math.isfinite(req.mass) and 0.0 <= req.mass <= self.payload_max):
            why = f"mass {req.mass} kg: give 0 .. {self.payload_max:g} kg (the arm's rated payload)"
        elif not all(math.isfinite(x) for x in cog) or math.hypot(*cog) > 1.0:
            why = f"center_of_gravity {cog}: give finite values within 1 m of the flange"
        else:
            ok, _, why = self._ask(ARM_SET_PAYLOAD, (req.mass, *cog))
            return SetPayloadResponse(ok, f"payload {req.mass:g} kg at {cog}" if ok else why)
        rospy.logerr(f"/robot/arm/set_payload refused: {why}")
        return SetPayloadResponse(False, why)

    def _contact(self, req):
        d = list(req.direction)
        if len(d) != 6 or not all(math.isfinite(x) for x in d):
            why = f"direction has {len(d)} values {d}: give 6 finite ones"
            rospy.logerr(f"/robot/arm/tool_contact refused: {why}")
            return ToolContactResponse(0, False, why)
        ok, value, why = self._ask(ARM_TOOL_CONTACT, d)
        return ToolContactResponse(int(value) if ok else 0, ok, why)

    def _cobot_settings(self, _event=None) -> None:
        """The Cobot's parameters changed: each checked (a bad one is refused and set back, naming it), then handed
        to the loop (for the next trajectory)."""
        values = list(self._cobot)
        for i, (name, check) in enumerate(((COBOT_MODE, check_mode), (COBOT_DELTA, check_delta))):
            asked = rospy.get_param(name, self._cobot[i])
            if asked == self._cobot[i]:
                continue
            try:
                values[i] = check(asked)
            except ValueError as e:
                rospy.logerr(f"{name}: {e}; kept {self._cobot[i]}")
                rospy.set_param(name, self._cobot[i])
        mode, delta = values
        if (mode, delta) == self._cobot:
            return
        ok, _, why = self._ask(ARM_COBOT_SETTINGS, (EXECUTION_MODES.index(mode), delta))
        if ok:
            self._cobot = (mode, delta)
            rospy.loginfo(f"Cobot: execution_mode {mode}, resampling_delta {delta:g} rad from the next trajectory")
        else:
            rospy.logerr(f"Cobot settings not taken: {why}; kept {self._cobot[0]}, {self._cobot[1]:g}")
            rospy.set_param(COBOT_MODE, self._cobot[0])
            rospy.set_param(COBOT_DELTA, self._cobot[1])
