"""intera_compat: the robot side of a Rethink Sawyer for ROS 1.

The pure core (model, kinematics, control, safety, hardware, loop) never imports rospy;
only ``intera_compat.ros`` and the thin executables in ``nodes/`` do.
"""
