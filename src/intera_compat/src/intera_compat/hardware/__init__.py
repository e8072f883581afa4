"""Hardware backends behind one interface (``Backend``); the loop never sees what is behind it."""
from .base import Backend, Capability, HardwareCommand, HardwareState  # noqa: F401
