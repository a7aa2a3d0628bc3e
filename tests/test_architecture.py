"""The house's rules, measured on the source: imports point down, no circles, rooms of a
readable size (CONTRIBUTING.md, "The house"; issue #29).

Every import counts: at module level, inside functions and under ``TYPE_CHECKING``.  A
module's import of its own package (``from . import x`` inside ``friction/``) is the package
importing itself and is not an edge.
"""

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dyn_plugin"

# The floors of the house, bottom to top (CONTRIBUTING.md lists the same).  A module may import
# from its own floor or below; the package's own __init__ (the public façade) stands above all.
FLOORS = (
    ("ground", ("errors", "_version", "arrays", "terms", "datafile", "loops", "mimic")),
    ("robot", ("kinematics", "joints", "model", "configuration", "urdf", "dh", "locking", "floating", "multi_dof",
               "frames", "body_sums", "external", "sampling", "robots", "bundled")),
    ("algorithms", ("algorithms",)),
    ("compiled", ("compiled",)),
    ("friction", ("friction",)),
    ("symbolic", ("symbolic", "parallel")),
    ("backends", ("backends",)),
    ("using the dynamics", ("simulate", "pybullet_bodies", "pybullet_layout", "pybullet_state", "pybullet_jacobian", "pybullet_friction",
                            "pybullet_bridge", "cluster", "dataset",
                            "identification", "studies")),
    ("tools", ("tools",)),
)
MAX_LAYERS = 10
MAX_LINES = 600            # a hand-written module; generated code may reach 800
MAX_GENERATED_LINES = 800


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _resolve(name: str):
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imported_names(module: str, path: Path):
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            yield source
            yield from (f"{source}.{alias.name}" for alias in node.names)


def module_graph() -> dict:
    """{module: set of dyn_plugin modules it imports}."""
    graph = {}
    for module, path in MODULES.items():
        targets = {_resolve(name) for name in _imported_names(module, path) if name.startswith("dyn_plugin")}
        graph[module] = {t for t in targets if t and t != module and not module.startswith(t + ".")}
    return graph


def room(module: str) -> str:
    """The top-level module or sub-package a module belongs to (``friction`` for
    ``dyn_plugin.friction.models``); the package itself for ``dyn_plugin``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "dyn_plugin"


def room_graph() -> dict:
    """Rooms importing rooms, without the package's façade (it imports every room)."""
    graph = {}
    for module, targets in module_graph().items():
        if room(module) != "dyn_plugin":
            graph.setdefault(room(module), set()).update(room(t) for t in targets if room(t) != room(module))
    return graph


def _circle(graph: dict):
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        return error.args[1]
    return None


def floor(module: str) -> int:
    if room(module) == "dyn_plugin":
        return len(FLOORS)
    found = [i for i, (_, rooms) in enumerate(FLOORS) if room(module) in rooms]
    assert found, f"room {room(module)!r} has no floor in FLOORS"
    return found[0]


def test_every_room_has_a_floor():
    rooms = {room(m) for m in MODULES} - {"dyn_plugin"}
    placed = {r for _, rs in FLOORS for r in rs}
    assert rooms <= placed, f"rooms without a floor in FLOORS: {sorted(rooms - placed)}"


def test_no_import_circle_between_modules():
    assert _circle(module_graph()) is None


def test_no_import_circle_between_rooms():
    assert _circle(room_graph()) is None


def test_imports_point_down():
    upward = sorted(f"{a} -> {b}" for a, targets in module_graph().items() for b in targets if floor(b) > floor(a))
    assert not upward, "imports that run up to a higher floor:\n" + "\n".join(upward)


def test_at_most_ten_layers():
    """The longest chain of rooms importing rooms (the façade aside)."""
    graph = room_graph()
    depth = {}
    for node in graphlib.TopologicalSorter(graph).static_order():
        depth[node] = 1 + max((depth[t] for t in graph.get(node, ())), default=0)
    assert max(depth.values()) <= MAX_LAYERS


@pytest.mark.parametrize("module", sorted(MODULES))
def test_room_of_a_readable_size(module):
    text = MODULES[module].read_text(encoding="utf-8")
    limit = MAX_GENERATED_LINES if "generated" in text[:400].lower() and "do not edit" in text[:400].lower() \
        else MAX_LINES
    assert len(text.splitlines()) <= limit
