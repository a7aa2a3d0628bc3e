"""The example scripts run as a user would run them, and say what they claim."""

import ast
import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(script, *args):
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_quickstart_agrees_with_pinocchio():
    out = run("quickstart.py")
    errors = [float(x) for x in re.findall(r"max \|Δ\| = ([0-9.e+-]+)", out)]
    assert len(errors) == 3 and max(errors) < 1e-9


def test_stick_slip_example_stops_joints_and_plots(tmp_path):
    out = run("friction_stick_slip.py", str(tmp_path / "stick.png"))
    # what the example's comment says: joints 4 and 5 stop for good, joint 6 still slides at t = 1 s
    assert re.search(r"joint4: .* and stays", out) and re.search(r"joint5: .* and stays", out), out
    assert re.search(r"joint6: .* keeps moving", out), out
    assert "never increases: True" in out
    assert (tmp_path / "stick.png").stat().st_size > 10_000


def test_computed_torque_with_friction_model_tracks_ten_times_better(tmp_path):
    """PUMA-560 in pybullet with Corke's friction injected: computed torque with our
    friction model tracks at least 10x better (RMS) than with the rigid body alone."""
    out = run("computed_torque_pybullet.py", "--plot", str(tmp_path / "tracking.png"))
    rigid, full = (float(x) for x in re.findall(r"RMS error = ([0-9.e+-]+) rad", out))
    ratio = float(re.search(r"RMS ratio rigid only / full model = ([0-9.e+-]+)", out).group(1))
    assert abs(ratio - rigid / full) <= 1e-3 * ratio + 0.1      # the printed ratio is the printed errors'
    assert ratio >= 10
    assert full < 1e-2                                          # rad: it really tracks
    assert (tmp_path / "tracking.png").stat().st_size > 10_000


def test_scara_stepper_matches_pybullet_in_one_scene(tmp_path):
    """A SCARA stepped by DynamicsStepper moves with a pybullet-stepped twin, rigid and
    with Coulomb friction (stick-slip), to rounding error."""
    out = run("scara_stepper_pybullet.py", "--plot", str(tmp_path / "scara.png"))
    differences = [float(x) for x in re.findall(r"max \|Δq\| = ([0-9.e+-]+)", out)]
    assert len(differences) == 2 and max(differences) <= 1e-8
    travel = [float(x) for x in re.search(r"joint travel: ([0-9. ]+)", out).group(1).split()]
    assert min(travel) > 0.05                                   # both bodies really moved
    phases = [int(x) for x in re.search(r"stick phases \[([0-9, ]+)\]", out).group(1).split(",")]
    assert min(phases) >= 2                                     # every joint sticks again after slipping
    assert (tmp_path / "scara.png").stat().st_size > 10_000


# The modules a user imports, as the README shows them; their public names are their __all__.
PUBLIC_MODULES = ("dyn_plugin", "dyn_plugin.pybullet_bridge", "dyn_plugin.identification")


def _dyn_plugin_names(tree) -> list:
    """(module, name) for every name an example takes from dyn_plugin: ``from M import name``
    and ``alias.name`` where ``alias`` is an imported dyn_plugin module."""
    aliases, used = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update({a.asname or a.name: a.name for a in node.names if a.name.startswith("dyn_plugin")})
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dyn_plugin"):
            for a in node.names:
                submodule = f"{node.module}.{a.name}"
                if _is_module(submodule):
                    aliases[a.asname or a.name] = submodule
                used.append((node.module, a.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            used.append((aliases[node.value.id], node.attr))
    return used


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _public(module: str, name: str) -> bool:
    if f"{module}.{name}" in PUBLIC_MODULES:
        return True
    return module in PUBLIC_MODULES and name in importlib.import_module(module).__all__


@pytest.mark.parametrize("script", [p.name for p in sorted(EXAMPLES.glob("*.py"))])
def test_examples_use_only_public_names(script):
    """Examples are copied by users: every dyn_plugin name they use is in the public API
    (dyn_plugin or dyn_plugin.pybullet_bridge, and in its __all__)."""
    tree = ast.parse((EXAMPLES / script).read_text())
    internal = [f"{module}.{name}" for module, name in _dyn_plugin_names(tree) if not _public(module, name)]
    assert not internal, f"{script} uses names outside the public API: {sorted(set(internal))}"
