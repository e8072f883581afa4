"""``rosrun intera_compat conformance`` on the simulated Sawyer: every case passes (but the two whose SDK script fails
on Python 3 before it commands anything, SKIP in the tool's report).

The sim runs on simulated time (``sawyer_test.launch``), so this module runs on the worker of the simulated-time tests
(``worker_roles``): the tool and the SDK's scripts take the robot's time from its ``/clock``, as on any robot that
publishes one. At most at real-time speed (``speedup:=1``): the SDK's scripts were written for a robot on the wall
clock, and a script's own latencies (its start, a goal's way through actionlib) cost it that much more of the robot's
time on a faster one — at flat out (~3x with the scripts beside it) ``joint_trajectory_client.py`` stopped waiting
before its trajectory ended and ``stop_motion_trajectory.py``'s stop came after the motion it was to stop had ended.
On a loaded machine the sim slows down rather than running late."""
from __future__ import annotations

from conformance_run import MARKS, Conformance, conformance, per_backend_table  # noqa: F401 (the fixtures)

pytestmark = MARKS


class TestSim(Conformance):
    backend = "sim"
    launch = ("sawyer_test.launch", "speedup:=1")
