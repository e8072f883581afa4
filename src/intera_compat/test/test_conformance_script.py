"""The conformance tool's typist (``conformance/script.py``) against the SDK's own ``getch``: a key that arrives
while the terminal is cooked between two reads is flushed by the next read, and the tool presses it again."""
import importlib.util
import sys

import pytest

from intera_compat.conformance import script as S

pytestmark = pytest.mark.skipif(importlib.util.find_spec("intera_external_devices") is None,
                                reason="Intera SDK not built here (./setup.sh --minimal leaves it out)")

READER = """import time
from intera_external_devices import getch
print("ready", flush=True)
n = 0
while n < 3:
    time.sleep(0.05)  # (cooked between reads, as the SDK's examples are while they work: a key typed now is flushed)
    c = getch(0.05)
    if c:
        print("read", repr(c))  # (no flush: the tool runs it unbuffered, as it does the SDK's scripts)
        n += 1
"""


def test_press_types_again_a_key_the_terminal_threw_away(tmp_path, monkeypatch):
    prog = tmp_path / "reader.py"
    prog.write_text(f"#!{sys.executable}\n{READER}")
    prog.chmod(0o755)
    monkeypatch.setattr(S, "executable", lambda pkg, name: str(prog))
    with S.Script("none", "reader.py", keys=True, logdir=str(tmp_path)) as s:
        assert S.wait_printed(s, "ready", 60.0), s.tail()
        for k in "1q?":
            assert s.press(k, lambda k=k: f"read {k!r}" in s.output(), again=0.5), s.tail()
        assert s.wait(60.0) == 0, s.tail()
        # each key read once: a key that was read is not typed again (the reader takes three and ends)
        assert [ln for ln in s.output().splitlines() if ln.startswith("read '")] == \
            ["read '1'", "read 'q'", "read '?'"]
