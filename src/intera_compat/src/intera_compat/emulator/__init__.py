"""Controller emulators: real vendor clients connect to them over loopback (test fixtures and demos)."""
