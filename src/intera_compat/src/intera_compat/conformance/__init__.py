"""``rosrun intera_compat conformance``: the Intera SDK's own scripts, unmodified, against whatever robot is running.

* ``robot.py`` — what the running robot has (joints, neutral pose, head, gripper, capabilities) and its time;
* ``script.py`` — one SDK script as a process (a pty for keyboard scripts, SIGINT to stop it, its output);
* ``cases.py`` — one case per SDK script: its arguments and input, its robot-time budget, what it needs, its check;
* ``runner.py`` — runs the cases it is asked for, in order, each from the neutral pose;
* ``report.py`` — the console table, ``report.md`` and a joint plot per motion case.

A tool on top of the robot: it uses ``intera_compat.testing``'s recorder and event log; nothing imports it.
"""
