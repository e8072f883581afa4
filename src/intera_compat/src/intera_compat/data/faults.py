"""Fault codes the loop raises: any of them stops the robot (stopped + error, brakes) until reset.

The code and the joint it concerns are published in the state record; the listener logs the
message once and reports it in /diagnostics.
"""
FAULT_NONE = 0
FAULT_NON_FINITE_STATE = 1
FAULT_NON_FINITE_SETPOINT = 2
FAULT_NON_FINITE_OUTPUT = 3
FAULT_INTERPOLATOR = 4
FAULT_FOLLOWING_ERROR = 5
# reported by the backend (HardwareState.fault)
FAULT_LINK_LOST = 10
FAULT_PROTECTIVE_STOP = 11
FAULT_HARDWARE_ESTOP = 12
FAULT_CONTROLLER_ERROR = 13

MESSAGES = {
    FAULT_NONE: "no fault",
    FAULT_NON_FINITE_STATE: "the backend reported a non-finite joint state or wrench; the last finite measurement "
                            "stands in for it and the brakes hold",
    FAULT_NON_FINITE_SETPOINT: "a setpoint source produced a non-finite value",
    FAULT_NON_FINITE_OUTPUT: "a non-finite command (the control law's, or a safety stage's addition to it); "
                             "no non-finite value was sent and the brakes hold",
    FAULT_INTERPOLATOR: "the position interpolator rejected its input; holding the current position",
    FAULT_FOLLOWING_ERROR: "following error beyond the fault window (the arm does not follow its reference)",
    FAULT_LINK_LOST: "the link to the arm is lost (no state from it within its link timeout); reset and enable once "
                     "it is back",
    FAULT_PROTECTIVE_STOP: "the arm's controller made a protective stop",
    FAULT_HARDWARE_ESTOP: "the arm's hardware E-stop is pressed",
    FAULT_CONTROLLER_ERROR: "the arm's controller reports an error (or a state message without every joint)",
}


def describe(code: int, joint: str = "") -> str:
    msg = MESSAGES.get(code, f"fault {code}")
    return f"{msg} ({joint})" if joint else msg
