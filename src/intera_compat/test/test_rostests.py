"""Every ``*.test`` of the workspace runs through rostest (its own master on a random port)."""
import glob
import os
import subprocess

import pytest

WS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TESTS = sorted(glob.glob(os.path.join(WS, "src", "*", "test", "**", "*.test"), recursive=True))


@pytest.mark.parametrize("launch_file", TESTS, ids=[os.path.basename(t) for t in TESTS])
def test_rostest(launch_file, tmp_path):
    r = subprocess.run(["rostest", "--results-base-dir", str(tmp_path), launch_file], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=280)
    assert r.returncode == 0, r.stdout[-6000:]
