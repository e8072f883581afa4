"""Setpoint sources: each turns one kind of input into the joint setpoint of a cycle.

``hold`` (and brakes), the four JointCommand modes (``position``, ``velocity``, ``torque``,
``stream`` for TRAJECTORY_MODE), and ``trajectory`` (a whole trajectory sampled on a speed-scaled
time base). The loop's ``Arbiter`` decides which one drives the arm each cycle.
"""
