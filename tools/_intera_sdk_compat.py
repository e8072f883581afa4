"""What a Noetic robot computer's Python gave the Intera SDK's scripts and Debian 12's does not, put back in the
venv by ``./setup.sh --with-sdk`` (a ``.pth`` line imports this module at start-up). Only with the SDK.

* PyYAML: Noetic shipped 5.3, where ``yaml.load(stream)`` without a Loader used FullLoader and warned; Debian's 6.0
  raises TypeError (send_traj_from_file.py calls it so, then finds the trajectory "empty"). No PyYAML 5.x installs
  on this Python from the package index here, so ``yaml.load`` / ``yaml.load_all`` get 5.x's default back, with its
  warning — the rest of PyYAML 6 is untouched. The patch is applied when ``yaml`` is first imported (nothing is
  imported at start-up).
"""
import importlib.abc
import importlib.util
import sys
import warnings


class YAMLLoadWarning(RuntimeWarning):
    """PyYAML 5.x's warning for a load without a Loader."""


def _patch(yaml) -> None:
    if getattr(yaml.load, "_intera_sdk_compat", False):
        return

    def defaulted(fn):
        def call(stream, Loader=None):
            if Loader is None:
                warnings.warn(f"calling yaml.{fn.__name__}() without Loader=... is unsafe; FullLoader used (PyYAML "
                              f"5.x's default, restored for the Intera SDK)", YAMLLoadWarning, stacklevel=2)
                Loader = yaml.FullLoader
            return fn(stream, Loader)
        call.__name__, call.__doc__, call._intera_sdk_compat = fn.__name__, fn.__doc__, True
        return call

    yaml.load, yaml.load_all = defaulted(yaml.load), defaulted(yaml.load_all)
    if not hasattr(yaml, "YAMLLoadWarning"):  # (5.x had it: a script may filter it)
        yaml.YAMLLoadWarning = YAMLLoadWarning


class _YamlFinder(importlib.abc.MetaPathFinder):
    """Patches ``yaml`` when it is first executed (a mere ``find_spec`` leaves the hook in place)."""

    def __init__(self):
        self._looking = False

    def find_spec(self, name, path=None, target=None):
        if name != "yaml" or self._looking:
            return None
        self._looking = True
        try:
            spec = importlib.util.find_spec("yaml")  # (the real one: this finder steps aside meanwhile)
        finally:
            self._looking = False
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _patch(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
        spec.loader.exec_module = exec_and_patch
        return spec


if "yaml" in sys.modules:
    _patch(sys.modules["yaml"])
else:
    sys.meta_path.insert(0, _YamlFinder())
