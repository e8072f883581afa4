"""Every intera_core_msgs / intera_motion_msgs / control_msgs type has the original robot's md5.

The reference values are the md5 sums of Intera 5.3 / control_msgs 1.5.2 as built by genmsg; a
client built against the originals only talks to us if these agree exactly.
"""
import importlib

import pytest

from intera_compat.wire_md5 import REFERENCE

PAIRS = [line.split() for line in REFERENCE.strip().splitlines()]


def _load(type_name):
    pkg, name = type_name.split("/")
    for sub in ("msg", "srv"):
        mod = importlib.import_module(f"{pkg}.{sub}")
        if hasattr(mod, name):
            return getattr(mod, name)
    raise AssertionError(f"{type_name} is not generated")


def test_all_116_types_listed():
    assert len(PAIRS) == 116


@pytest.mark.parametrize("type_name,md5", PAIRS, ids=[p[0] for p in PAIRS])
def test_md5_matches_reference(type_name, md5):
    assert _load(type_name)._md5sum == md5
