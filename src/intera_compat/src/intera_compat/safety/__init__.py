"""Safety plugins: robot enable/stop/E-stop state machine, joint limits."""
