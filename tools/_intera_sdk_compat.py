"""What a Noetic robot computer's Python gave the Intera SDK's scripts and Debian 12's does not, put back in the
venv by ``./setup.sh`` (not ``--minimal``; a ``.pth`` line imports this module at start-up). Only with the SDK.

* PyYAML: Noetic shipped 5.3, where ``yaml.load(stream)`` without a Loader used FullLoader and warned; Debian's 6.0
  raises TypeError (send_traj_from_file.py calls it so, then finds the trajectory "empty"). No PyYAML 5.x installs
  on this Python from the package index here, so ``yaml.load`` / ``yaml.load_all`` get 5.x's default back, with its
  warning — the rest of PyYAML 6 is untouched. The patch is applied when ``yaml`` is first imported (nothing is
  imported at start-up).
"""
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


from _intera_compat_hooks import PatchOnImport  # noqa: E402 (./setup.sh installs it beside this module)

PatchOnImport.install("yaml", _patch)
