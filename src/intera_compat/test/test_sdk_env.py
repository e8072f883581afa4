"""The environment ``./setup.sh`` leaves for the Intera SDK (skipped without the SDK: ``./setup.sh --minimal``).

An SDK script's first line is ``import intera_interface``; whatever that prints on stderr (a NumPy
ABI warning, a Traceback from a module built for numpy 1.x) every user sees on every run.
"""
import importlib.util
import subprocess
import sys

import pytest

SDK_MISSING = importlib.util.find_spec("intera_interface") is None
pytestmark = pytest.mark.skipif(
    SDK_MISSING, reason="Intera SDK not built here (./setup.sh --minimal leaves it out): ./setup.sh installs it "
                        "into src/intera_sdk")


def run(code: str) -> str:
    """Run ``code`` in a fresh interpreter (a numpy-1.x extension can crash the one that imports it)."""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    return p.stdout


def test_import_intera_interface_is_silent():
    run("import intera_interface")


def test_cv_bridge_shadows_debians_numpy1_build():
    where = run("import cv_bridge; print(cv_bridge.__file__)")
    assert "/usr/lib/python3/dist-packages" not in where, where


CONVERT = """
import sys
import cv2, numpy as np
from cv_bridge import CvBridge
bridge = CvBridge()
img = (np.arange(6 * 7 * 3) % 256).astype(np.uint8).reshape(6, 7, 3)
path = sys.argv[1]
assert cv2.imwrite(path, img)
msg = bridge.cv2_to_imgmsg(cv2.imread(path), encoding="bgr8")
assert (msg.encoding, msg.height, msg.width, msg.step) == ("bgr8", 6, 7, 21), msg
np.testing.assert_array_equal(bridge.imgmsg_to_cv2(msg, "bgr8"), img)
mono = bridge.cv2_to_imgmsg(img[:, :, 1].copy(), encoding="mono8")  # the hand camera's encoding
as_bgr = bridge.imgmsg_to_cv2(mono, "bgr8")
assert as_bgr.shape == (6, 7, 3), as_bgr.shape
np.testing.assert_array_equal(as_bgr[:, :, 0], img[:, :, 1])
print("ok")
"""


def test_cv_bridge_converts_what_the_sdk_sends(tmp_path):
    """HeadDisplay: cv2.imread → cv2_to_imgmsg(bgr8); camera_display: imgmsg_to_cv2(msg, 'bgr8')."""
    p = subprocess.run([sys.executable, "-c", CONVERT, str(tmp_path / "face.png")], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and p.stdout == "ok\n", p.stderr


OPTIONAL = {"xacro_jade"}  # (send_urdf_fragment.py falls back to xacro without it)


def sdk_script_imports() -> list[str]:
    """Every module the SDK's 33 scripts import (intera_examples/scripts, intera_interface/scripts)."""
    import ast
    import glob
    import os

    import rospkg
    rp = rospkg.RosPack()
    mods = set()
    for pkg in ("intera_examples", "intera_interface"):
        for path in glob.glob(os.path.join(rp.get_path(pkg), "scripts", "*.py")):
            for node in ast.walk(ast.parse(open(path).read(), path)):
                if isinstance(node, ast.Import):
                    mods.update(a.name for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    mods.add(node.module)
    return sorted(mods - OPTIONAL)


def test_every_module_the_sdk_scripts_import_imports():
    """go_to_cartesian_pose.py: PyKDL, tf_conversions; send_urdf_fragment.py: xacro; the rest: ours, ROS's, the
    SDK's own."""
    mods = sdk_script_imports()
    assert {"PyKDL", "xacro", "intera_interface"} <= set(mods) and len(mods) > 20
    out = run("import importlib, sys\nbad = []\n"
              f"for m in {mods!r}:\n"
              "    try:\n        importlib.import_module(m)\n"
              "    except Exception as e:\n        bad.append(f'{m}: {e!r}')\n"
              "print('\\n'.join(bad))")
    assert out.strip() == "", out


def test_yaml_load_without_a_loader_works_as_on_noetic():
    """send_traj_from_file.py: ``yaml.load(f)`` — PyYAML 5.x's FullLoader default, with its warning."""
    p = subprocess.run([sys.executable, "-c", "import yaml; print(yaml.load('a: [1, 2]'))"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and p.stdout == "{'a': [1, 2]}\n", p.stderr
    assert "YAMLLoadWarning" in p.stderr  # (as 5.x warned)
