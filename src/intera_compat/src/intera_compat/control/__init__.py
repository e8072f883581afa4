"""Per-cycle control laws (pure numpy/pinocchio/ruckig)."""
