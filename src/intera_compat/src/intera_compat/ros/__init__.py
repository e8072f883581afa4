"""ROS edge: message conversions and node wiring (the only package that imports rospy)."""
