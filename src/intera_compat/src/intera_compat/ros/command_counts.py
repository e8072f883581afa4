"""A node's command counters on ``/diagnostics``: how many commands it received and what became of each (refused,
applied, forwarded...), so that a client — or a test proving that "nothing happened" — can see that a command
arrived and what the node did with it. Counted from any callback thread; published when the node says."""
import threading

import rospy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue


class CommandCounts:
    """``received`` and one counter per outcome; ``publish`` sends them as one DiagnosticStatus whose values are
    ``<prefix>_commands_<counter>_total``."""

    def __init__(self, name: str, hardware_id: str, prefix: str, outcomes: tuple, what: str = "commands"):
        self.name, self.hardware_id, self.prefix, self.what = name, hardware_id, prefix, what
        self.counts = dict.fromkeys(("received", *outcomes), 0)
        self._lock = threading.Lock()  # (one callback thread per publisher connection)
        self._pub = rospy.Publisher("/diagnostics", DiagnosticArray, queue_size=2)

    def count(self, outcome: str) -> None:
        with self._lock:
            self.counts["received"] += 1
            self.counts[outcome] += 1

    def publish(self, stamp=None) -> None:
        with self._lock:
            counts = dict(self.counts)
        status = DiagnosticStatus(level=DiagnosticStatus.OK, name=self.name, hardware_id=self.hardware_id,
                                  message=f"{counts['received']} {self.what}, {counts.get('refused', 0)} refused")
        status.values = [KeyValue(f"{self.prefix}_commands_{k}_total", str(v)) for k, v in counts.items()]
        arr = DiagnosticArray(status=[status])
        arr.header.stamp = rospy.Time.now() if stamp is None else stamp
        self._pub.publish(arr)
