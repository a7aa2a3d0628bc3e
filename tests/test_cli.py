"""The command line: a real (small) validation run, and one-line errors with exit code 2."""

import json
import subprocess
import sys

import pytest

from dyn_plugin.cli import main

FLOATING = """<robot name="floater"><link name="world"/><link name="body">
<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="free" type="floating"><parent link="world"/><child link="body"/></joint></robot>"""


def test_validate_quick_suite_passes_and_writes_json(tmp_path, capsys):
    out = tmp_path / "report.json"
    code = main(["validate", "--suite", "quick", "--samples", "5", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["passed"] is True
    results = report["results"]
    assert {r["robot"] for r in results} == {"puma560", "stanford", "scara"}
    assert {r["quantity"] for r in results} == {"tau", "M", "bias", "gravity", "Cqd", "qdd"}
    assert all(r["max_rel"] <= 1e-9 and r["samples"] == 5 for r in results)
    assert "all passed" in capsys.readouterr().out


def test_validate_fails_with_exit_1_when_tolerance_exceeded(capsys):
    """An impossible tolerance must fail: the comparison is real, not a formality."""
    assert main(["validate", "--robot", "puma560", "--against", "pinocchio", "--samples", "3",
                 "--rtol", "1e-300"]) == 1
    assert "FAIL" in capsys.readouterr().out


@pytest.mark.parametrize("argv, fragment", [
    (["validate", "--robot", "nosuchbot"], "puma560"),
    (["validate", "--robot", "/no/such/file.urdf"], "does not exist"),
    (["validate", "--backend", "warp_drive"], "available"),
    (["validate", "--samples", "0"], "at least 1"),
    (["info", "nosuchbot"], "bundled robots"),
])
def test_bad_input_exit_2(argv, fragment, capsys):
    assert run(argv) == 2
    assert fragment in capsys.readouterr().err


def run(argv) -> int:
    """main()'s exit code, whether it returns it or argparse exits with it."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_malformed_suite_file_exit_2(tmp_path, capsys):
    suite = tmp_path / "broken.toml"
    suite.write_text("robots = [")
    assert run(["validate", "--suite", str(suite)]) == 2
    assert "broken.toml" in capsys.readouterr().err


def test_floating_base_is_a_one_line_error(tmp_path):
    path = tmp_path / "floater.urdf"
    path.write_text(FLOATING)
    proc = subprocess.run([sys.executable, "-m", "dyn_plugin.cli", "validate", "--robot", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "'free'" in proc.stderr and "floating" in proc.stderr


def test_robots_backends_info(capsys):
    assert main(["robots"]) == 0
    assert "stanford" in capsys.readouterr().out
    assert main(["backends"]) == 0
    assert "lagrange_euler" in capsys.readouterr().out
    assert main(["info", "puma560"]) == 0
    assert "physically valid" in capsys.readouterr().out


def test_codegen_counts_are_within_the_published_customised_algorithms(capsys):
    """Dhanaraj Table 2.10: PUMA-560 208 mult / 152 add, Stanford 183 / 140 (customised N-E)."""
    for robot, mult, add in (("puma560", 208, 152), ("stanford", 183, 140)):
        assert main(["codegen", robot, "--counts"]) == 0
        first = capsys.readouterr().out.splitlines()[0]
        ours = [int(word) for word in first.replace(",", " ").split() if word.isdigit()]
        assert ours[0] <= mult and ours[1] <= add, first


def test_codegen_writes_python_that_equals_newton_euler(tmp_path, capsys):
    import numpy as np

    import dyn_plugin as dp
    out = tmp_path / "scara_id.py"
    assert main(["codegen", "scara", "--lang", "python", "--out", str(out)]) == 0
    namespace = {}
    exec(compile(out.read_text(), str(out), "exec"), namespace)
    model = dp.load_robot("scara")
    q, qd, qdd = np.random.default_rng(5).normal(size=(3, 7, model.n))
    expected = dp.get_backend("newton_euler", model).inverse_dynamics(q, qd, qdd)
    got = namespace["inverse_dynamics"](q, qd, qdd)
    assert np.max(np.abs(got - expected) / np.maximum(1.0, np.abs(expected))) <= 1e-12
    assert "wrote" in capsys.readouterr().err


def test_codegen_and_equations_name_bad_input(capsys):
    assert main(["codegen", "nosuchbot"]) == 2
    assert "puma560" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["codegen", "scara", "--lang", "fortran"])
    assert exit_info.value.code == 2


def test_equations_prints_the_scara_closed_forms(capsys):
    """Schilling's SCARA closed form (notes O3): M[1,1] = a + b cos q2, G only on the
    vertical prismatic joint, m g with the bundled SCARA's moving mass below joint 3."""
    import dyn_plugin as dp
    assert main(["equations", "scara"]) == 0
    text = capsys.readouterr().out
    assert "M[1,1] = " in text and "C₂" in text.split("M[1,1] = ")[1].splitlines()[0]
    model = dp.load_robot("scara")
    weight = 9.81 * model.masses[2:].sum()
    assert f"G[3] = -{weight:.6g}" in text
    assert main(["equations", "scara", "--latex", "--symbols", "masses"]) == 0
    assert "\\begin{align*}" in capsys.readouterr().out
    assert main(["equations", "scara", "--symbols", "colours"]) == 2
    assert "colours" in capsys.readouterr().err
