"""Robot enable / stop / reset / E-stop state machine (RobotAssemblyState semantics, contract §2.1)."""
from __future__ import annotations

from dataclasses import dataclass

# RobotAssemblyState constants
ESTOP_BUTTON_UNPRESSED, ESTOP_BUTTON_PRESSED, ESTOP_BUTTON_UNKNOWN, ESTOP_BUTTON_RELEASED = 0, 1, 2, 3
ESTOP_SOURCE_NONE, ESTOP_SOURCE_USER, ESTOP_SOURCE_UNKNOWN, ESTOP_SOURCE_FAULT, ESTOP_SOURCE_ENGINE = 0, 1, 2, 3, 4


@dataclass
class RobotStateMachine:
    enabled: bool = False
    stopped: bool = False
    error: bool = False
    homed: bool = True
    estop_button: int = ESTOP_BUTTON_UNPRESSED
    estop_source: int = ESTOP_SOURCE_NONE
    # the E-stop button is pressed while either is: the robot's own (/robot/sim/set_estop) or the arm's hardware
    # E-stop; released when both are
    user_button: bool = False
    hardware_button: bool = False

    @property
    def ready(self) -> bool:
        """MSG: enabled and ready to operate (not homing, not stopped)."""
        return self.enabled and self.homed and not self.stopped

    def set_enable(self, flag: bool) -> bool:
        """``/robot/set_super_enable``. Enabling is refused while stopped (clients reset first)."""
        if flag and (self.stopped or self.estop_button == ESTOP_BUTTON_PRESSED):
            return False
        self.enabled = bool(flag)
        if flag:
            self.error = False
        return True

    def stop(self) -> None:
        """``/robot/set_super_stop``: disable and latch *stopped* (source asserted by software)."""
        self.enabled = False
        self.stopped = True
        self.estop_source = ESTOP_SOURCE_UNKNOWN

    def reset(self) -> bool:
        """``/robot/set_super_reset``: clears a stop unless the E-stop button is still pressed.

        Leaves the robot *disabled* (RobotEnable.reset docstring); the client enables next.
        """
        if not self.stopped and not self.error:
            return False
        if self.estop_button == ESTOP_BUTTON_PRESSED:
            return False
        self.stopped = False
        self.error = False
        self.enabled = False
        self.estop_button = ESTOP_BUTTON_UNPRESSED
        self.estop_source = ESTOP_SOURCE_NONE
        return True

    def buttons(self, hardware: bool, user: bool) -> None:
        """The two E-stop buttons' states (the user's on each message, the arm's as it changes): pressed as either
        goes down (or is still down on a new message), released as the last comes up (still stopped until a reset)."""
        was = self.hardware_button or self.user_button
        self.hardware_button, self.user_button = hardware, user
        if hardware or user:
            if not was or self.estop_button != ESTOP_BUTTON_PRESSED:
                self.press_estop()
        elif was:
            self.release_estop()

    def press_estop(self) -> None:
        self.enabled = False
        self.stopped = True
        self.estop_button = ESTOP_BUTTON_PRESSED
        self.estop_source = ESTOP_SOURCE_USER

    def release_estop(self) -> None:
        if self.estop_button == ESTOP_BUTTON_PRESSED:
            self.estop_button = ESTOP_BUTTON_RELEASED  # still stopped until reset

    def fault(self) -> None:
        """A joint fault: stopped with error until reset (a pressed E-stop button stays pressed: no reset then)."""
        self.enabled = False
        self.stopped = True
        self.error = True
        if self.estop_button != ESTOP_BUTTON_PRESSED:
            self.estop_button = ESTOP_BUTTON_UNKNOWN
            self.estop_source = ESTOP_SOURCE_FAULT
