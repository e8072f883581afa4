"""Safety: the robot enable/stop/E-stop state machine and the plugins of the loop's safety chain.

``finite_guard`` (no NaN/inf in or out), ``following_error`` (reference kept near the arm),
``joint_limits`` (range, velocity and acceleration of the reference; shapes jumps), and
``torque_guard`` (soft limits and speed cap in TORQUE_MODE, effort clamp). ``base`` has the plugin
interface (``on_state`` → ``on_setpoint`` → ``on_output``) and the chain; ``faults`` the codes.
"""
