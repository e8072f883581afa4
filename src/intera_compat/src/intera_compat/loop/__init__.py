"""The realtime loop: one cycle as a pipeline, its scheduler, and the channel to the ROS side.

    backend.read → SafetyChain.on_state (a non-finite reading is repaired, the robot faults)
      → intake (control record; ring: JointCommands, events, trajectories)
      → robot state (enable / stop / reset / E-stop, faults)
      → Arbiter: brakes | override slots (zero-G, interaction) | the requested setpoint source
        (``sources``: hold, POSITION, VELOCITY, TORQUE, TRAJECTORY stream, whole trajectory;
        the head keeps its own hold)
      → SafetyChain.on_setpoint (``safety``: finite_guard, joint_limits (range, velocity,
        acceleration: jumps are shaped into ramps), following_error, …)
      → control law picked by the BackendAdapter (``control``: inverse dynamics + PID on torque
        arms, direct setpoints on position / velocity arms)
      → SafetyChain.on_output (finite_guard, torque_guard) → backend.write
      → state record; results and faults on the return ring

``cycle.LoopCycle.step`` is that function; ``process`` runs it at the backend's rate in its own
process (no rospy), ``offline.OfflineLoop`` runs the very same function synchronously for
tests. ``channel`` holds the seqlock records (latest values) and SPSC rings (everything that
must arrive, in order) between the two processes.
"""
