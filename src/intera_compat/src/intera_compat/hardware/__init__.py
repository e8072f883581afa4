"""Hardware backends behind one interface (``Backend``, ``base.py``); the loop never sees what is behind it."""
