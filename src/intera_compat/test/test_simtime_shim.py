"""tools/_intera_compat_simtime.py (installed into the venv by setup.sh): rospy.init_node on simulated time waits for
the first /clock when someone else publishes it, and only then."""
import importlib.util
import os

import pytest

PATH = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools", "_intera_compat_simtime.py")


@pytest.fixture
def shim(monkeypatch):
    monkeypatch.syspath_prepend(os.path.dirname(PATH))  # (its _intera_compat_hooks: this tree's, not the venv's)
    spec = importlib.util.spec_from_file_location("simtime_shim_under_test", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class FakeRospy:
    def __init__(self, wallclock, times):
        self.times, self.calls = list(times), 0
        self.rostime = type("T", (), {"is_wallclock": staticmethod(lambda: wallclock)})

    def get_name(self):
        return "/me"

    def is_shutdown(self):
        return False

    def get_rostime(self):
        self.calls += 1
        t = self.times.pop(0) if len(self.times) > 1 else self.times[0]
        return type("R", (), {"is_zero": lambda _self, t=t: t == 0})()


@pytest.mark.parametrize("wallclock, clock_pubs, waits", [
    (True, ["/realtime_loop"], False),  # wall time: nothing to wait for
    (False, None, False),  # nobody publishes /clock (yet): the clock's own publisher, or a node beside it
    (False, ["/me"], False),  # this node's own registration (a killed predecessor's name): never wait for oneself
    (False, ["/realtime_loop"], True)])
def test_init_node_waits_for_someone_elses_first_clock(shim, monkeypatch, wallclock, clock_pubs, waits):
    import rosgraph
    pubs = [["/rosout", ["/x"]]] + ([["/clock", clock_pubs]] if clock_pubs else [])
    monkeypatch.setattr(rosgraph, "Master", lambda _name: type("M", (), {"getSystemState": lambda _s: (pubs, [], [])})())
    rospy = FakeRospy(wallclock, [0, 0, 12.5])
    shim._wait_for_clock(rospy)
    assert (rospy.calls == 3) if waits else (rospy.calls == 0)


def test_the_patched_init_node_calls_the_original_then_waits(shim):
    seen = []
    rospy = type("R", (), {})()
    rospy.init_node = lambda *a, **k: seen.append(("init", a, k)) or "node"
    shim._wait_for_clock = lambda r: seen.append("wait")
    shim._patch(rospy)
    assert rospy.init_node("n", anonymous=True) == "node" and seen == [("init", ("n",), {"anonymous": True}), "wait"]
    seen.clear()
    rospy.init_node("n", disable_rostime=True)
    assert seen == [("init", ("n",), {"disable_rostime": True})]  # (no time: nothing to wait for)
    shim._patch(rospy)  # (twice: once)
    rospy.init_node("n")
    assert seen.count("wait") == 1
