"""The realtime loop: scheduler, command arbitration, timing statistics, shared-memory exchange."""
