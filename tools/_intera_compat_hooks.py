"""Patching a module when it is first imported, for the venv's shims (``_intera_compat_simtime``,
``_intera_sdk_compat``): put into the venv by ``./setup.sh`` beside them. No side effects of its own."""
import importlib.abc
import importlib.util
import sys


class PatchOnImport(importlib.abc.MetaPathFinder):
    """Calls ``patch(module)`` when module ``name`` is first executed, then steps aside (a mere ``find_spec``
    leaves it in place)."""

    def __init__(self, name: str, patch):
        self.name, self.patch = name, patch
        self._looking = False

    def find_spec(self, name, path=None, target=None):
        if name != self.name or self._looking:
            return None
        self._looking = True
        try:
            spec = importlib.util.find_spec(name)  # (the real one: this finder steps aside meanwhile)
        finally:
            self._looking = False
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            self.patch(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
        spec.loader.exec_module = exec_and_patch
        return spec

    @classmethod
    def install(cls, name: str, patch) -> None:
        """Patch ``name`` now if it is imported already, else when it is."""
        if name in sys.modules:
            patch(sys.modules[name])
        else:
            sys.meta_path.insert(0, cls(name, patch))
