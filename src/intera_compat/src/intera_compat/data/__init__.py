"""The ground floor: the cycle's data every stage reads and writes — the measured state and the command
(``state``), the setpoint (``setpoint``), fault codes (``faults``), the codes stages and the loop exchange
(``codes``: JointCommand modes, requests to the arm's controller, trajectory results) and the shared-memory records
between processes (``shm``). It imports nothing of the package but ``config``."""
