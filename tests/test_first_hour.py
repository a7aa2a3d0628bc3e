"""What a new user meets in the first hour (issue #32, second pass): defaults that fit
small runs, bad files refused in one line, messages in the caller's language, a clean
Ctrl-C, and summaries instead of array dumps."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.tools import validate
from dyn_plugin.tools.cli import main


def run(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:   # argparse: usage errors
        return exc.code


def one_line_error(capsys) -> str:
    """The single stderr line of a refusal, checked to be one line without a traceback."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# -- 1. a dataset smaller than the default chunk ------------------------------------------------

def test_a_small_dataset_takes_one_chunk_of_all_its_states(tmp_path):
    pytest.importorskip("zarr")
    import pinocchio as pin

    from dyn_plugin.dataset import read_dataset

    summary = dp.dataset("puma560", 40, out=tmp_path / "d.zarr", progress=False)
    assert (summary.states, summary.chunks) == (40, 1)
    data = read_dataset(tmp_path / "d.zarr")
    assert data["attributes"]["chunk"] == 40
    ours = dp.load_robot("puma560")
    model = pin.buildModelFromUrdf(str(ours.source_path))
    model.gravity.linear = ours.gravity
    reference = np.array([pin.rnea(model, model.createData(), q, qd, qdd)
                          for q, qd, qdd in zip(data["q"], data["qd"], data["qdd"])])
    assert np.abs(data["tau"] - reference).max() <= 1e-9 * max(1.0, np.abs(reference).max())


def test_dataset_cli_without_chunk_runs_below_the_default_chunk(tmp_path, capsys):
    pytest.importorskip("zarr")
    assert run(["dataset", "scara", "--states", "30", "--out", str(tmp_path / "s.zarr")]) == 0
    assert "30 states in 1 chunks" in capsys.readouterr().out



# -- 5. each message speaks the language of its caller --------------------------------------------

def test_argument_is_the_keyword_in_python_and_the_option_on_the_command_line():
    from dyn_plugin.errors import argument, arguments_spelled

    assert (argument("out"), argument("overwrite", True)) == ("out", "overwrite=True")
    with arguments_spelled({"out": "--out", "overwrite": "--overwrite"}):
        assert (argument("out"), argument("overwrite", True)) == ("--out", "--overwrite")
        assert argument("mimic", True) == "mimic=True (Python API)"     # no such option here
    assert argument("out") == "out"


def test_an_explicit_chunk_above_states_names_the_options(tmp_path, capsys):
    pytest.importorskip("zarr")
    assert run(["dataset", "scara", "--states", "30", "--chunk", "50", "--out", str(tmp_path / "s.zarr")]) == 2
    assert "--chunk (50 states) must not exceed --states (30)" in one_line_error(capsys)
    with pytest.raises(dp.InputError, match=r"^chunk \(50 states\) must not exceed states \(30\)"):
        dp.dataset("scara", 30, chunk=50, out=tmp_path / "s.zarr", progress=False)


def test_a_store_of_other_settings_names_overwrite_and_out_as_the_caller_spells_them(tmp_path, capsys):
    pytest.importorskip("zarr")
    store = str(tmp_path / "s.zarr")
    assert run(["dataset", "scara", "--states", "10", "--out", store]) == 0
    capsys.readouterr()
    assert run(["dataset", "scara", "--states", "10", "--seed", "1", "--out", store]) == 2
    line = one_line_error(capsys)
    assert "pass --overwrite to replace it, or choose another --out" in line and "=True" not in line
    with pytest.raises(dp.InputError, match="pass overwrite=True to replace it, or choose another out$"):
        dp.dataset("scara", 10, seed=1, out=store, progress=False)


def test_an_output_in_a_missing_folder_is_named_by_its_option(capsys):
    assert run(["dataset", "scara", "--states", "10", "--out", "/nonexistent/d.zarr"]) == 2
    assert one_line_error(capsys).endswith("--out /nonexistent/d.zarr: folder /nonexistent does not exist")


def test_the_mimic_warning_names_the_option_on_the_command_line(tmp_path, capsys):
    from test_mimic import MIMIC_URDF

    from dyn_plugin.errors import URDFWarning

    path = tmp_path / "mimicry.urdf"
    path.write_text(MIMIC_URDF)
    with pytest.warns(URDFWarning, match=r"load with mimic=True for reduced"):
        dp.load_robot(str(path))
    with warnings.catch_warnings():                  # shown as the command line shows it, whatever pytest's filter
        warnings.simplefilter("default", URDFWarning)
        assert run(["validate", "--robot", str(path), "--backend", "newton_euler", "--quantity", "tau",
                    "--samples", "2", "--against", "pinocchio"]) == 0
    warning = [line for line in capsys.readouterr().err.splitlines() if "mimic joints" in line]
    assert warning and all("load with --mimic for reduced" in line for line in warning), warning


def test_an_unknown_reference_lists_the_references(capsys):
    assert run(["validate", "--against", "pinochio"]) == 2
    line = one_line_error(capsys)
    assert "--against: unknown backend 'pinochio'; references: pinocchio, pybullet" in line
    assert "newton_euler" not in line


# -- 2. a bad file a user names is refused in one line that names it -----------------------------

SUITE = 'robots = ["scara"]\nbackends = ["newton_euler"]\nreferences = ["pinocchio"]\nquantities = ["tau"]\n'
BAD_SUITES = {
    "no quantities": (SUITE.replace('quantities = ["tau"]\n', ""), "missing quantities"),
    "robots as text": (SUITE.replace('["scara"]', '"scara"'), "robots must be a non-empty list of names"),
    "backends a number": (SUITE.replace('["newton_euler"]', "3"), "backends must be a non-empty list"),
    "quantity unknown": (SUITE.replace('"tau"', '"torque"'), "quantities: unknown 'torque'"),
    "samples as text": (SUITE + 'samples = "two"\n', "samples must be a whole number"),
    "description a number": (SUITE + "description = 5\n", "description must be text"),
    "mimic as text": (SUITE + 'mimic = "yes"\n', "mimic must be true or false"),
    "unknown key": (SUITE + "colour = 1\n", "unknown keys ['colour']"),
    "selection kind a number": (SUITE.replace('["newton_euler"]', "{kind = 3}"), "backends.kind must be a name"),
    "selection unknown key": (SUITE.replace('["newton_euler"]', "{sort = 3}"), "unknown keys ['sort']"),
    "unknown backend": (SUITE.replace('"newton_euler"', '"newton_eular"'), "backends: unknown backend 'newton_eular'"),
    "not TOML": ("robots = [\n", "not a valid suite file (TOML)"),
    "TOML of something else": ("[1, 2]\n", "not a valid suite file (TOML)"),
}


def refused_in_one_line(argv, fragment, capsys) -> str:
    assert run(argv) == 2
    line = one_line_error(capsys)
    assert line.startswith("dyn-plugin") and fragment in line, line
    return line


@pytest.mark.parametrize("text, fragment", BAD_SUITES.values(), ids=BAD_SUITES.keys())
def test_a_bad_suite_file_is_refused_in_one_line_naming_it(text, fragment, tmp_path, capsys):
    path = tmp_path / "mine.toml"
    path.write_text(text)
    line = refused_in_one_line(["validate", "--suite", str(path)], fragment, capsys)
    assert str(path) in line
    with pytest.raises(dp.DynPluginError, match=re.escape(fragment)):
        validate.load_suite(str(path))


def test_a_suite_that_is_binary_a_folder_or_missing_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "binary.toml").write_bytes(bytes(range(256)))
    (tmp_path / "folder.toml").mkdir()
    for name, fragment in (("binary.toml", "TOML is UTF-8 text"), ("folder.toml", "is a folder; give a suite file"),
                           ("missing.toml", "does not exist")):
        assert str(tmp_path / name) in refused_in_one_line(["validate", "--suite", str(tmp_path / name)], fragment,
                                                           capsys)
    refused_in_one_line(["validate", "--suite", "nosuch"], "unknown suite 'nosuch'; available: default", capsys)


FRICTION = 'default_profile = "a"\n[profiles.a]\n'
BAD_FRICTION = {
    "no profiles": ('robot = "puma560"\n', "needs [profiles.NAME] tables"),
    "profile not a table": ('default_profile = "a"\nprofiles = {a = 3}\n', "needs [profiles.NAME] tables"),
    "no default profile": ("[profiles.a]\nviscous = 1.0\n", "has no default_profile: set one, or choose one of its "
                                                           "profiles (a) with "),   # --profile, where there is one
    "default profile unknown": ('default_profile = "b"\n[profiles.a]\n', "has no profile 'b'"),
    "viscous as text": (FRICTION + 'viscous = "lots"\n', "'viscous' must be a number"),
    "bearing a number": (FRICTION + "bearing = 5\n", "bearing must be a table [profiles.a.bearing]"),
    "bearing without mu": (FRICTION + '[profiles.a.bearing]\nkind = "journal"\n', "[bearing]: missing mu"),
    "bearing kind a number": (FRICTION + "[profiles.a.bearing]\nkind = 5\nmu = 0.1\n", "bearing kinds must be"),
    "efficiency as text": (FRICTION + "[profiles.a.transmission]\nrated_torque = 1.0\n"
                           "efficiency = {load_ratio = [0, 1], efficiency = ['a', 0.5]}\n",
                           "efficiency curve tables must be numbers"),
    "with_curve as text": (FRICTION + "[profiles.a.transmission]\nrated_torque = 1.0\nwith_curve = 'yes'\n"
                           "efficiency = {load_ratio = [0, 1], efficiency = [0.5, 0.9]}\n",
                           "with_curve must be true or false per joint"),
    "robot_table without robot": (FRICTION + 'armature = "robot_table"\n', "must name a bundled robot"),
    "source a list": (FRICTION + 'source = ["x"]\n', "source must be text"),
    "not TOML": ("viscous = [\n", "not a valid friction data file (TOML)"),
}


@pytest.mark.parametrize("verb", ["friction", "dataset"])
@pytest.mark.parametrize("text, fragment", BAD_FRICTION.values(), ids=BAD_FRICTION.keys())
def test_a_bad_friction_file_is_refused_in_one_line_naming_it(verb, text, fragment, tmp_path, capsys):
    path = tmp_path / "mine_friction.toml"
    path.write_text(text)
    argv = {"friction": ["friction", "puma560", "--samples", "3"],
            "dataset": ["dataset", "puma560", "--states", "3", "--backend", "newton_euler_friction",
                        "--out", str(tmp_path / "d.zarr")]}[verb]
    line = refused_in_one_line([*argv, "--friction", str(path)], fragment, capsys)
    assert path.name in line


def test_a_friction_file_that_is_a_folder_or_missing_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "folder.toml").mkdir()
    for name, fragment in (("folder.toml", "is a folder"), ("missing.toml", "does not exist")):
        refused_in_one_line(["friction", "puma560", "--friction", str(tmp_path / name)], fragment, capsys)


def test_an_uncertainty_table_that_does_not_fit_the_robot_names_the_file(tmp_path, capsys):
    path = tmp_path / "mine_friction.toml"
    path.write_text(FRICTION + 'viscous = 1.0\n[uncertainty]\nsource = "a guess"\nviscous = [0.1, 0.2]\n')
    refused_in_one_line(["friction", "puma560", "--samples", "3", "--monte-carlo", "2", "--friction", str(path)],
                        "mine_friction.toml, [uncertainty]: uncertainty of 'viscous' must be one number", capsys)


# -- 3. get_backend takes a robot's name or URDF path; anything else is a TypeError ---------------

@pytest.mark.parametrize("robot", ["puma560", "urdf path"])
def test_get_backend_loads_a_robot_given_by_name_or_path(robot):
    import pinocchio as pin

    path = dp.load_robot("puma560").source_path
    backend = dp.get_backend("newton_euler", path if robot == "urdf path" else robot)
    model = pin.buildModelFromUrdf(str(path))
    model.gravity.linear = backend.model.gravity
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.uniform(-1, 1, (3, 6))
    reference = pin.rnea(model, model.createData(), q, qd, qdd)
    assert backend.model.name == "puma560"
    assert np.abs(backend.inverse_dynamics(q, qd, qdd) - reference).max() <= 1e-9 * max(1, np.abs(reference).max())


@pytest.mark.parametrize("model, given", [(None, "got None"), (3, "got int"), ("pin.Model", "got pinocchio.Model")])
def test_get_backend_asks_for_a_robot_model_for_anything_else(model, given):
    import pinocchio as pin

    model = pin.Model() if model == "pin.Model" else model
    with pytest.raises(TypeError, match=rf"get_backend needs a RobotModel: dp\.load_robot\('puma560'\).*{given}$"):
        dp.get_backend("newton_euler", model)


# -- 7. Ctrl-C: exit 130, one line that says how to resume, no asyncio noise -----------------------

def test_ctrl_c_in_dataset_exits_130_and_says_how_to_resume(tmp_path):
    """SIGINT to the whole process group (what a terminal's Ctrl-C sends) once the first
    chunks are written: zarr's asyncio tasks must not be left pending ("Task was destroyed")."""
    pytest.importorskip("zarr")
    import os
    import signal
    import subprocess
    import sys

    from dyn_plugin.dataset import read_dataset

    store = tmp_path / "big.zarr"
    command = [sys.executable, "-m", "dyn_plugin.tools.cli", "dataset", "puma560", "--states", "500000",
               "--chunk", "1000", "--out", str(store)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    first = process.stderr.readline()          # the first progress line: 50 of 500 chunks written
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert first.startswith("dataset: "), first + err
    assert process.returncode == 130, err
    assert "Task was destroyed" not in err and "Traceback" not in err and "never awaited" not in err, err
    assert err.strip().splitlines()[-1] == (f"dyn-plugin: interrupted; the chunks done are kept in {store}: run the "
                                            "same command again to resume (it computes only the missing chunks)")
    with pytest.raises(dp.InputError, match="incomplete"):
        read_dataset(store)


# -- 9. continuous joints: one coordinate here, (cos, sin) in pinocchio -----------------------------

WHEEL = """<robot name="wheel"><link name="base"/>
<link name="a"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="b"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="spin" type="continuous"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/></joint>
<joint name="arm" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0.1 0 0"/><axis xyz="0 1 0"/>
<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""


def test_info_shows_continuous_joints_and_both_configuration_lengths(tmp_path, capsys):
    import pinocchio as pin

    path = tmp_path / "wheel.urdf"
    path.write_text(WHEEL)
    assert run(["info", str(path)]) == 0
    out = capsys.readouterr().out
    rows = {line.split("│")[2].strip(): line.split("│")[3].strip() for line in out.splitlines() if line.count("│") > 5}
    assert rows == {"spin": "continuous", "arm": "revolute"}
    reference = pin.buildModelFromUrdf(str(path))
    assert (dp.load_robot(str(path)).nq, reference.nq) == (2, 3)
    assert f"nq = 2 here, {reference.nq} in pinocchio" in " ".join(out.split())


# -- 11. what is written is said; summaries, not array dumps; aligned tables ---------------------

def test_validate_says_each_file_it_writes(tmp_path, capsys):
    paths = {"--json": tmp_path / "r.json", "--report": tmp_path / "r.md", "--plots": tmp_path / "plots"}
    paths["--plots"].mkdir()
    argv = ["validate", "--suite", "quick", "--robot", "scara", "--backend", "newton_euler", "--samples", "2"]
    assert run([*argv, *(str(x) for pair in paths.items() for x in pair)]) == 0
    said = [line.split(" (")[0].removeprefix("wrote ") for line in capsys.readouterr().out.splitlines()
            if line.startswith("wrote ")]
    plots = sorted(str(p) for p in paths["--plots"].iterdir())
    assert plots and said == [str(paths["--json"]), str(paths["--report"]), *plots]


def test_a_trajectory_prints_as_a_summary():
    backend = dp.get_backend("newton_euler", "puma560")
    trajectory = dp.simulate(backend, np.zeros(6), np.zeros(6), np.zeros(6), duration=0.05, dt=1e-3, integrator="rk4")
    text = repr(trajectory)
    assert str(trajectory) == text and len(text) < 400 and "array(" not in text and "\n" not in text
    energy = trajectory.kinetic + trajectory.potential
    for fragment in ("Trajectory(puma560: 51 samples over 0.05 s", "dt 0.001 s", "rk4", "nq 6, nv 6",
                     f"energy {energy[0]:.6g} -> {energy[-1]:.6g} J"):
        assert fragment in text, text


def test_the_backends_table_has_aligned_columns(capsys):
    from dyn_plugin.backends.registry import list_backends

    assert run(["backends"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.split(" ")[0] in list_backends()]
    assert len(rows) == len(list_backends())
    kind_at = {line.index(" ours ") if " ours " in line else line.index(" generated ") if " generated " in line
               else line.index(" reference ") for line in rows}
    assert len(kind_at) == 1, rows                       # every kind starts in the same column


def test_locking_a_mimic_follower_names_mimic_as_the_caller_spells_it(tmp_path, capsys):
    from test_mimic import MIMIC_URDF

    path = tmp_path / "mimicry.urdf"
    path.write_text(MIMIC_URDF)
    line = refused_in_one_line(["validate", "--robot", str(path), "--mimic", "--lock", "b_1", "--quantity", "tau"],
                               "cannot be locked while 'a_2' moves", capsys)
    assert line.endswith("or load the robot without --mimic")
    with pytest.raises(dp.InputError, match=r"or load the robot without mimic=True$"):
        dp.load_robot(str(path), mimic=True, lock=["b_1"])
