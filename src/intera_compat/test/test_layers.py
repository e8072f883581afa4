"""The package's folders are floors (docs/architecture.md): a module imports only from its own folder and the floors
below it — never up, never from a peer on its floor. Read from the source (every import statement, at any depth)."""
import ast
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parents[1] / "src" / "intera_compat"
# from the ground up; folders on one floor are peers (none imports another)
FLOORS = [
    {"config", "data"},  # the robot's configuration; the cycle's data (state, setpoint, codes, faults, shm records)
    {"model", "trajectory"},  # maths: the robot model, splines, stops, interpolation, resampling
    {"sources", "control", "safety", "hardware"},  # the cycle's stages
    {"loop"},  # the cycle that composes them, its process, channel and client
]
# above the loop: the ROS nodes and the programs beside them, which may import any floor below
TOP = {"ros", "motion", "kinematics", "io", "emulator", "conformance", "testing", "wire_md5"}
PEERS_ALLOWED = {("model", "trajectory"), ("trajectory", "model")}  # (the maths floor is one library)
GENERATED = {"msg", "srv"}  # the package's ROS messages and services (catkin's, imported by the ROS side)


def floor(unit: str) -> int:
    for k, f in enumerate(FLOORS):
        if unit in f:
            return k
    assert unit in TOP, f"{unit}: a folder on no floor (add it to test_layers.FLOORS or TOP)"
    return len(FLOORS)


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imports(path: pathlib.Path):
    rel = path.relative_to(PKG.parent).with_suffix("")
    package = list(rel.parts[:-1]) if path.name != "__init__.py" else list(rel.parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                names = [target + "." + a.name for a in node.names] if not node.module else [target]
            else:
                names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name.startswith("intera_compat.") and name.count(".") >= 1:
                yield node.lineno, name


def modules():
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts and p != PKG / "__init__.py")


def violations():
    out = []
    for path in modules():
        rel = path.relative_to(PKG)
        here = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        for line, name in imports(path):
            there = unit_of(name)
            if there == here or there in GENERATED:
                continue
            fh, ft = floor(here), floor(there)
            if ft > fh or (ft == fh and fh < len(FLOORS) and (here, there) not in PEERS_ALLOWED):
                out.append(f"{rel}:{line}: {here} (floor {fh}) imports {name} (floor {ft})")
    return out


def test_no_import_runs_up_a_floor_or_across_to_a_peer():
    bad = violations()
    assert not bad, "imports against the floors:\n" + "\n".join(bad)


def test_every_folder_is_on_a_floor():
    for p in PKG.iterdir():
        if p.name not in GENERATED and ((p.is_dir() and (p / "__init__.py").exists()) or
                                        (p.suffix == ".py" and p.name != "__init__.py")):
            floor(p.stem if p.suffix else p.name)


def test_the_check_sees_an_import_that_runs_up():
    """(the check itself: a stage importing the loop is caught)"""
    bad = PKG / "safety" / "_layers_probe.py"
    bad.write_text("from ..loop.layouts import MSG_STOP\nfrom ..sources.base import SetpointSource\n")
    try:
        assert sum("_layers_probe" in v for v in violations()) == 2  # (up to the loop; across to a peer)
    finally:
        bad.unlink()


# the orchestrator stays thin: features go into the stages and parts.py's wiring, not into LoopCycle (issue 34)
CYCLE_CLASS_LINES, STEP_LINES = 250, 80


def sizes(path: pathlib.Path = PKG / "loop" / "cycle.py") -> tuple[int, int]:
    cls = next(n for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef) and n.name == "LoopCycle")
    step = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "step")
    return cls.end_lineno - cls.lineno + 1, step.end_lineno - step.lineno + 1


def test_the_cycle_is_an_orchestrator_of_stages():
    cls, step = sizes()
    assert cls <= CYCLE_CLASS_LINES and step <= STEP_LINES, \
        f"LoopCycle {cls} lines (at most {CYCLE_CLASS_LINES}), its step {step} (at most {STEP_LINES})"


def test_the_size_check_sees_a_long_step(tmp_path):
    body = "".join(f"        x{k} = {k}\n" for k in range(STEP_LINES))
    probe = tmp_path / "cycle.py"
    probe.write_text(f"class LoopCycle:\n    def step(self):\n{body}")
    assert sizes(probe) == (STEP_LINES + 2, STEP_LINES + 1)


if __name__ == "__main__":
    print("\n".join(violations()) or "clean")
    pytest.main([__file__, "-q"])
