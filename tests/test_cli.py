"""The command line: a real (small) validation run, and one-line errors with exit code 2."""

import json
import re
import subprocess
import sys
from importlib.metadata import version

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.tools.cli import main

BALL = """<robot name="baller"><link name="world"/><link name="body">
<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="free" type="ball"><parent link="world"/><child link="body"/></joint></robot>"""


def test_validate_quick_suite_passes_and_writes_json(tmp_path, capsys):
    out = tmp_path / "report.json"
    code = main(["validate", "--suite", "quick", "--samples", "5", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["passed"] is True
    results = report["results"]
    assert {r["robot"] for r in results} == set(dp.list_robots())      # the suite says robots = "bundled"
    assert {r["quantity"] for r in results} == {"tau", "M", "bias", "gravity", "Cqd", "qdd", "dtau", "dqdd"}
    assert all(r["max_rel"] <= 1e-9 and r["samples"] == 5 for r in results)
    assert "all passed" in capsys.readouterr().out


def test_validate_fails_with_exit_1_when_tolerance_exceeded(capsys):
    """An impossible tolerance must fail: the comparison is real, not a formality."""
    assert main(["validate", "--robot", "puma560", "--against", "pinocchio", "--quantity", "tau", "M", "--samples", "3",
                 "--rtol", "1e-300"]) == 1
    assert "FAIL" in capsys.readouterr().out


@pytest.mark.parametrize("argv, fragment", [
    (["validate", "--robot", "nosuchbot"], "puma560"),
    (["validate", "--robot", "/no/such/file.urdf"], "does not exist"),
    (["validate", "--backend", "warp_drive"], "--backend: unknown backend 'warp_drive'; backends: newton_euler"),
    (["validate", "--samples", "0"], "from 1 to"),
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


def test_an_unknown_joint_type_is_a_one_line_error(tmp_path):
    path = tmp_path / "baller.urdf"
    path.write_text(BALL)
    proc = subprocess.run([sys.executable, "-m", "dyn_plugin.tools.cli", "validate", "--robot", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "'free'" in proc.stderr and "'ball'" in proc.stderr and "spherical" in proc.stderr


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


def test_codegen_derivatives_counts_and_source(tmp_path, capsys):
    """The generated derivative code's counts (exact: tests/test_derivative_code.py checks them
    against its operators) and its source, which computes pinocchio's derivatives."""
    assert main(["codegen", "puma560", "--derivatives", "--counts"]) == 0
    assert "∂τ/∂q and ∂τ/∂q̇, 923 multiplications, 707 additions, 10 sin/cos (τ alone: 184" in capsys.readouterr().out
    out = tmp_path / "d.py"
    assert main(["codegen", "scara", "--derivatives", "--out", str(out)]) == 0
    namespace = {}
    exec(out.read_text(), namespace)
    model = dp.load_robot("scara")
    q, qd, qdd = np.full(4, 0.3), np.full(4, -0.7), np.full(4, 1.1)
    for ours, ref in zip(namespace["inverse_dynamics_derivatives"](q, qd, qdd),
                         dp.get_backend("pinocchio", model).inverse_dynamics_derivatives(q, qd, qdd)):
        np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)
    assert run(["codegen", "scara", "--derivatives", "--mass-matrix"]) == 2


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


# -- bad input: one line on stderr, exit code 2, before any work ---------------------------

LINK = ('<link name="{name}"><inertial><mass value="1"/>'
        '<inertia ixx="{ixx}" iyy="1" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial></link>')
REVOLUTE = ('<joint name="{name}" type="revolute"><parent link="base"/><child link="{child}"/><axis xyz="0 0 1"/>'
            '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')
FIXED_ONLY = ('<robot name="statue"><link name="base"/>' + LINK.format(name="arm", ixx=1, izz=1)
              + '<joint name="weld" type="fixed"><parent link="base"/><child link="arm"/></joint></robot>')
# Names that rich would read as markup ([/] closes nothing: MarkupError) or as an emoji code.
MARKUP = ('<robot name="[bold]bot"><link name="base"/>' + LINK.format(name="[/]", ixx=1, izz=1)
          + REVOLUTE.format(name="[red]j:thumbs_up:", child="[/]") + "</robot>")
# izz = 5 > ixx + iyy = 2: accepted with a warning; pybullet zeroes that inertia, its M is singular.
TRIANGLE = ('<robot name="tri"><link name="base"/>' + LINK.format(name="arm", ixx=1, izz=5)
            + REVOLUTE.format(name="j1", child="arm") + "</robot>")
FAST = ["--backend", "newton_euler", "--samples", "2"]


def urdf(tmp_path, text, name="robot.urdf") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def one_line_error(capsys, *fragments) -> str:
    """The single error line on stderr (warnings aside), checked for ``fragments``."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("dyn-plugin: warning:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("dyn-plugin") and all(f in lines[0] for f in fragments), lines[0]
    return lines[0]


def test_robot_without_moving_joints_is_refused_by_validate_and_noted_by_info(tmp_path, capsys):
    path = urdf(tmp_path, FIXED_ONLY)
    assert run(["validate", "--robot", path, *FAST]) == 2
    one_line_error(capsys, "'statue'", "no moving joint", "nothing to compare")
    assert run(["info", path]) == 0
    assert "statue has no moving joint" in capsys.readouterr().out
    assert run(["info", path, "--floating-base"]) == 0              # its base moves: validate compares it
    assert "nothing to compare" not in capsys.readouterr().out


def test_names_are_printed_verbatim_not_as_markup(tmp_path, capsys):
    path = urdf(tmp_path, MARKUP)
    assert run(["info", path]) == 0
    out = capsys.readouterr().out
    assert "[bold]bot" in out and "[/]" in out and "[red]j:thumbs_up:" in out, out
    assert run(["friction", path, "--samples", "3", "--at", "0"]) == 0
    out = capsys.readouterr().out
    assert "[bold]bot" in out and "[red]j:thumbs_up:" in out, out
    assert run(["validate", "--robot", path, *FAST, "--against", "pinocchio", "--quantity", "tau"]) == 0
    assert "[bold]bot vs pinocchio" in capsys.readouterr().out


def test_inertia_breaking_the_triangle_inequality_is_a_one_line_error(tmp_path, capsys):
    """pybullet zeroes the inertia: its mass matrix is singular (numpy's LinAlgError before)."""
    assert run(["validate", "--robot", urdf(tmp_path, TRIANGLE), *FAST]) == 2
    one_line_error(capsys, "tri: pybullet", "mass matrix is singular", "joints moving no mass or inertia: 'j1'", "link 'arm' breaks the triangle inequality")


@pytest.mark.parametrize("option, value, fragment", [
    ("--seed", "-1", "at least 0"),
    ("--samples", "1e12", "from 1 to 100000"),
    ("--samples", "100001", "from 1 to 100000"),
    ("--samples", "2.5", "not a whole number"),
    ("--rtol", "inf", "finite positive"),
    ("--rtol", "nan", "finite positive"),
    ("--rtol", "0", "finite positive"),
    ("--rtol", "-0.5", "finite positive"),
    ("--rtol", "1e300", "below 1"),
    ("--dt", "0", "finite positive"),
    ("--dt", "inf", "finite positive"),
    ("--dt", "2", "at most the trajectory duration"),
    ("--dt", "1e-9", "at most 100000 trajectory steps"),
])
def test_absurd_numbers_are_refused_up_front(option, value, fragment, capsys):
    assert run(["validate", "--robot", "scara", *FAST, option, value]) == 2
    one_line_error(capsys, fragment)


def test_samples_in_exponent_notation_are_accepted(capsys):
    assert run(["validate", "--robot", "scara", "--backend", "newton_euler", "--against", "pinocchio",
                "--quantity", "tau", "--samples", "1e1", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["suite"]["samples"] == 10


def test_dt_sets_the_time_step_of_the_stepping_comparisons(capsys):
    assert run(["validate", "--robot", "scara", *FAST, "--against", "pybullet", "--quantity", "step",
                "--dt", "0.002", "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["suite"]["dt"] == 0.002 and [r["quantity"] for r in report["results"]] == ["step"]


@pytest.mark.parametrize("at", ["nan", "inf", "1e9", "-0.1", "2.01"])
def test_friction_table_time_must_lie_within_the_trajectory(at, capsys):
    assert run(["friction", "scara", "--samples", "3", "--at", at]) == 2
    one_line_error(capsys, "--at")


def test_friction_of_a_trajectory_shorter_than_the_table_time(capsys):
    """--duration 0.5: the default --at (Dhanaraj's 0.6 s) was refused, naming an option the
    user never gave; now the table is at the same share of the trajectory, 0.3 × 0.5 s."""
    assert run(["friction", "scara", "--samples", "11", "--duration", "0.5", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["time"] == pytest.approx(0.15)


def test_friction_json_on_stdout_still_writes_the_plot(tmp_path, capsys):
    """--json - --plot: the plot was silently not written (and so for --monte-carlo)."""
    for extra in ([], ["--monte-carlo", "3"]):
        plot = tmp_path / f"f{len(extra)}.png"
        assert run(["friction", "scara", "--samples", "5", "--json", "-", "--plot", str(plot), *extra]) == 0
        captured = capsys.readouterr()
        json.loads(captured.out)                           # stdout is the JSON alone
        assert plot.stat().st_size > 1000 and f"wrote {plot}" in captured.err


def test_friction_table_time_out_of_range_names_the_range(capsys):
    assert run(["friction", "scara", "--samples", "3", "--duration", "1.5", "--at", "1e9"]) == 2
    one_line_error(capsys, "from 0 to 1.5 s")


@pytest.mark.parametrize("argv, fragment", [
    (["validate", "--robot", "scara", "--json", "{missing}/r.json"], "does not exist"),
    (["validate", "--robot", "scara", "--report", "{missing}/r.md"], "does not exist"),
    (["validate", "--robot", "scara", "--report", "{folder}"], "is a folder"),
    (["validate", "--robot", "scara", "--plots", "{file}"], "is a file"),
    (["validate", "--robot", "scara", "--plots", "{missing}/plots"], "does not exist"),
    (["friction", "scara", "--json", "{missing}/f.json"], "does not exist"),
    (["friction", "scara", "--plot", "{missing}/f.png"], "does not exist"),
    (["friction", "scara", "--plot", "{folder}/f.xyz"], "unknown image format 'xyz'"),
    (["codegen", "scara", "--out", "{missing}/id.py"], "does not exist"),
    (["codegen", "scara", "--out", "{folder}"], "is a folder"),
])
def test_unwritable_outputs_fail_before_any_work(argv, fragment, tmp_path, monkeypatch, capsys):
    import dyn_plugin.studies.friction_study
    import dyn_plugin.symbolic.codegen
    import dyn_plugin.tools.validate

    def work(*args, **kwargs):
        raise AssertionError("the work started before the outputs were checked")
    for module, name in ((dyn_plugin.tools.validate, "run"), (dyn_plugin.studies.friction_study, "run_study"),
                         (dyn_plugin.symbolic.codegen, "generate")):
        monkeypatch.setattr(module, name, work)
    (tmp_path / "file.txt").write_text("")
    paths = {"missing": tmp_path / "missing", "folder": tmp_path, "file": tmp_path / "file.txt"}
    assert run([arg.format(**paths) for arg in argv]) == 2
    one_line_error(capsys, fragment)


# -- output: the summary fits 80 columns, progress in a pipe, help, version -----------------

def test_validate_summary_fits_80_columns_and_reports_progress(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert run(["validate", "--robot", "scara", "--backend", "newton_euler", "lagrange_euler_friction",
                "--samples", "2", "--dt", "0.005"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert max(len(line) for line in lines) <= 80, captured.out
    rows = [line.split() for line in lines if line.startswith(("newton_euler ", "lagrange_euler_friction "))]
    # the names whole, on one line; the last row: the friction backend's dynamic-friction checks
    assert [len(row) for row in rows] == [7, 7, 7, 7, 3, 3, 4, 4, 5], captured.out
    assert "dynamic friction vs physics" in captured.out
    figures = [cell for row in rows for cell in row[1:] if cell != "–"]
    assert len(figures) == 2 * 6 + 2 * 4 + 2 * 2 + 2 * 3 + 3 and all(re.fullmatch(r"\d\.\de[-+]\d\d", f) for f in figures), figures
    assert re.search(r"1/3 done, scara / states 1-2\b", captured.err), captured.err
    assert re.search(r"2/3 done, scara / trajectories\b", captured.err), captured.err
    assert re.search(r"3/3 done, scara / dynamic friction\b", captured.err), captured.err


@pytest.mark.parametrize("command, fragments", [
    ("validate", ["default, quick", "(default: the suite's; 1000 in the default suite)", "--dt",
                  "0.001 in the default suite", "traj_gravity"]),
    ("friction", ["(default 0.6 s, Dhanaraj's Table 3.5;", "(default: 201)", "(default: 2.0)",
                  "(default: newton_euler_friction)"]),
    ("codegen", ["(default: python)"]),
    ("equations", ["(default: newton_euler)"]),
    ("bench", ["(default"]),
])
def test_help_shows_defaults(command, fragments, capsys):
    assert run([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())   # argparse wraps lines
    assert all(fragment in text for fragment in fragments), text


def test_version(capsys):
    assert run(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"dyn-plugin {version('dyn_plugin')}"


def test_usage_error_is_one_line(capsys):
    assert run(["validate", "--quantity", "colour"]) == 2
    one_line_error(capsys, "--quantity", "colour", "--help")


@pytest.mark.parametrize("argv, fragment", [
    (["info", "FOLDER"], "is a folder; give the URDF file in it"),
    (["info", ""], "no robot given"),
    (["friction", "puma560", "--friction", "BINARY"], "TOML is UTF-8 text, and byte 0 is not"),
])
def test_folders_empty_names_and_binary_data_files_are_one_line_errors(argv, fragment, tmp_path, capsys):
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe[x]")
    argv = [str(tmp_path) if a == "FOLDER" else str(tmp_path / "binary.toml") if a == "BINARY" else a for a in argv]
    assert run(argv) == 2
    one_line_error(capsys, fragment)


SPHERICAL = ('<robot name="ball"><link name="base"/>' + LINK.format(name="arm", ixx=1, izz=1)
             + '<joint name="js" type="spherical"><parent link="base"/><child link="arm"/></joint></robot>')
TWICE_J1 = ('<robot name="twice"><link name="base"/>' + LINK.format(name="a", ixx=1, izz=1)
            + LINK.format(name="b", ixx=1, izz=1) + REVOLUTE.format(name="j1", child="a")
            + REVOLUTE.format(name="j1", child="b") + "</robot>")


@pytest.mark.parametrize("argv, fragment", [
    # codegen and schedule turned a spherical joint into one prismatic joint, exit 0
    (["codegen", "{spherical}"], "joint 'js' of robot 'ball' is spherical"),
    (["schedule", "{spherical}"], "joint 'js' of robot 'ball' is spherical"),
    (["identify", "{spherical}", "--simulate", "--samples", "50"], "joint 'js' of robot 'ball' is spherical"),
    (["info", "{twice}"], "joint name 'j1' is used more than once"),                   # was accepted
    (["bench", "--robot", "{fixed}", "--quick"], "has no moving joint"),                # was a traceback
    (["validate", "--robot", "scara", "--report", "/proc/dyn-plugin-test.md"], "cannot be written"),  # after the work
])
def test_refusals_found_on_user_files(argv, fragment, tmp_path, capsys):
    paths = {}
    for key, text in (("spherical", SPHERICAL), ("twice", TWICE_J1), ("fixed", FIXED_ONLY)):
        paths[key] = tmp_path / f"{key}.urdf"
        paths[key].write_text(text)
    assert main([arg.format(**paths) for arg in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0], err


def test_a_utf16_urdf_with_a_byte_order_mark_loads_as_its_utf8_text(tmp_path):
    """lxml reads UTF-16 with a BOM; the text kept for the reference engines was decoded as
    UTF-8 ("a file given is not UTF-8 text", no file named)."""
    text = ('<?xml version="1.0"?>' + TRIANGLE.replace('izz="5"', 'izz="1"'))
    utf8, utf16 = tmp_path / "r8.urdf", tmp_path / "r16.urdf"
    utf8.write_text(text, encoding="utf-8")
    utf16.write_bytes(text.replace('<?xml version="1.0"?>', "").encode("utf-16"))
    a, b = dp.load_robot(str(utf8)), dp.load_robot(str(utf16))
    q = np.full(a.nq, 0.3)
    assert np.array_equal(dp.get_backend("newton_euler", a).mass_matrix(q), dp.get_backend("newton_euler", b).mass_matrix(q))
    assert np.allclose(dp.get_backend("pinocchio", b).mass_matrix(q), dp.get_backend("newton_euler", b).mass_matrix(q),
                       rtol=1e-13, atol=1e-13)


def test_identify_refuses_a_negative_seed(capsys):
    """identify --simulate --seed -1: numpy's 'expected non-negative integer', exit 3, before."""
    assert run(["identify", "scara", "--simulate", "--seed", "-1"]) == 2
    one_line_error(capsys, "--seed", "at least 0")


def test_files_with_the_same_robot_name_are_reported_apart(tmp_path, capsys):
    """Two files, both <robot name="r">: their comparisons were merged under one robot (six
    samples 'of 3 per robot', a failure not traceable to its file).  Each is now named with
    the end of its path that tells them apart."""
    from test_mimic import MIMIC_URDF

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = urdf(tmp_path / "a", MIMIC_URDF, "arm.urdf"), urdf(tmp_path / "b", MIMIC_URDF, "arm.urdf")
    assert run(["validate", "--robot", first, second, *FAST, "--against", "pinocchio", "--quantity", "tau",
                "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    robots = sorted({r["robot"] for r in report["results"]})
    assert robots == ["mimicry (a/arm.urdf)", "mimicry (b/arm.urdf)"], robots
    assert all(r["samples"] == 2 for r in report["results"])


def test_a_reader_that_stops_early_ends_the_command_quietly(monkeypatch, capsys):
    """``dyn-plugin robots | head -1``: the closed pipe gave 'error: [Errno 32] Broken pipe'
    and exit 2, as if the input were wrong.  Now exit 0, nothing on stderr."""
    import io

    class ClosedPipe(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert run(["robots"]) == 0
    assert "Broken pipe" not in capsys.readouterr().err
