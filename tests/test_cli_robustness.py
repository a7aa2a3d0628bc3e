"""Random command lines: whatever the arguments, ``dyn-plugin`` ends with exit code 0, 1
or 2, never a traceback, and a refusal (2) is one line on stderr.

The argument vectors mix valid and invalid option values (absurd numbers, missing or
wrong paths, names rich would read as markup, robots without moving joints or with an
inertia pybullet zeroes) on small, fast runs: validate starts from the quick suite on the
SCARA with two states, so that even an example that passes every check takes well under
a second.
"""

import contextlib
import io
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dyn_plugin as dp
from dyn_plugin.tools.cli import main

from test_cli import FIXED_ONLY, MARKUP, TRIANGLE


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A scratch folder, also the working directory of every example."""
    path = tmp_path_factory.mktemp("cli_robustness")
    for name, text in (("fixed.urdf", FIXED_ONLY), ("markup.urdf", MARKUP), ("tri.urdf", TRIANGLE),
                       ("broken.toml", "robots = ["), ("plain.txt", ""),
                       ("partial.toml", 'robots = ["scara"]\nbackends = {kind = 3}\n')):
        (path / name).write_text(text)
    (path / "binary.toml").write_bytes(bytes(range(256)))
    return path


NUMBERS = st.one_of(
    st.integers(-5, 40).map(str),
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e12", "100001", "1e1", "0.5", "2.5", "", "x", "-0", "1e-9", "nan", "-inf", "[/]"]),
)
PATHS = st.sampled_from(["-", "", "/", ".", "plain.txt", "missing/out.json", "/no/such/folder/out.png",
                         "out.json", "out.md", "out.xyz", "[/].json"])
ROBOTS = st.sampled_from(["scara", "nosuchbot", "", "/", ".", "fixed.urdf", "markup.urdf", "tri.urdf",
                          "plain.txt", "binary.toml", "[/]"])
JUNK = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6).filter(
    lambda text: not text.startswith("-") and "\x00" not in text)


def option(name, values):
    return st.tuples(st.just(name), values).map(list)


VALIDATE = st.lists(st.one_of(
    option("--samples", NUMBERS), option("--seed", NUMBERS), option("--rtol", NUMBERS), option("--dt", NUMBERS),
    option("--robot", ROBOTS),
    option("--backend", st.sampled_from(["newton_euler", "lagrange_euler", "warp_drive", "", "pinocchio"])),
    option("--against", st.sampled_from(["pinocchio", "pybullet", "warp_drive", "newton_euler"])),
    option("--quantity", st.sampled_from(["tau", "qdd", "step", "traj_zero", "colour", ""])),
    option("--suite", st.sampled_from(["quick", "default", "nosuch", "broken.toml", "binary.toml", "/",
                                       "partial.toml"])),
    option("--json", PATHS), option("--report", PATHS),
    option("--plots", st.sampled_from(["plain.txt", "missing/deeper/plots", "/no/such/plots"])),
    JUNK.map(lambda text: [text]),
), max_size=4).map(lambda options: ["validate", "--suite", "quick", "--robot", "scara", "--backend",
                                    "newton_euler", "--samples", "2"] + sum(options, []))

FRICTION = st.lists(st.one_of(
    option("--samples", NUMBERS), option("--duration", NUMBERS), option("--at", NUMBERS),
    option("--backend", st.sampled_from(["newton_euler_friction", "lagrange_euler_friction", "newton_euler", ""])),
    option("--friction", st.sampled_from(["none", "urdf", "nosuch.toml", "binary.toml", "broken.toml", "plain.txt",
                                          "partial.toml", "/"])),
    option("--profile", st.sampled_from(["corke", "dhanaraj", "x"])),
    option("--json", PATHS), option("--plot", PATHS),
), max_size=4).map(lambda options: ["friction", "scara", "--samples", "3"] + sum(options, []))

OTHERS = st.one_of(
    st.tuples(st.just("info"), ROBOTS).map(list),
    st.tuples(st.sampled_from(["info", "robots", "backends", "--version", "validate", "friction", "equations"]),
              JUNK).map(list),
    st.lists(JUNK, max_size=3),
)


@contextlib.contextmanager
def working_directory(path):   # contextlib.chdir needs Python 3.11
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
@given(argv=st.one_of(VALIDATE, FRICTION, OTHERS))
def test_any_command_line_ends_in_0_1_or_2_without_a_traceback(argv, folder):
    out, err = io.StringIO(), io.StringIO()
    with working_directory(folder), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:   # argparse: --help, --version, usage errors
            code = exc.code
    stderr = err.getvalue()
    assert code in (0, 1, 2), (argv, code, stderr)
    assert "Traceback" not in stderr, (argv, stderr)
    if code == 2:
        lines = [line for line in stderr.splitlines() if line and not line.startswith(("dyn-plugin: warning:",
                                                                                        "validate: "))]
        assert len(lines) == 1 and lines[0].startswith("dyn-plugin"), (argv, stderr)


def test_a_suite_that_compares_nothing_is_refused(capsys):
    """A friction backend's τ against pinocchio alone is no comparison at all: exit 2 with
    one line, not '0 comparisons, all passed' and exit 0."""
    code = main(["validate", "--robot", "scara", "--backend", "newton_euler_friction", "--against", "pinocchio",
                 "--quantity", "tau", "--samples", "4"])
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("validate: ")]
    assert code == 2 and len(err) == 1 and "compares nothing" in err[0]      # after the progress lines


def test_a_floating_robot_with_a_singular_mass_matrix_is_a_one_line_error(capsys):
    """The PUMA-560's base link has no mass: freed, its base's turn about z and joint 1's
    cancel, and M is singular.  One line saying so (the message named a joint by a velocity
    index into the joint names: IndexError, exit 3)."""
    code = main(["validate", "--robot", "puma560", "--floating-base", "--backend", "newton_euler", "--samples", "4"])
    err = [line for line in capsys.readouterr().err.strip().splitlines() if line.startswith("dyn-plugin: error")]
    assert code == 2 and len(err) == 1 and "singular" in err[0]


def test_an_overflow_on_a_floating_base_names_the_velocity_entry():
    """_overflow named entry k of an (N, nv) result by joint_names[k]: an IndexError for the
    base's entries 6 + n - 1 and beyond, and the wrong joint for the others."""
    import numpy as np

    import dyn_plugin as dp
    from dyn_plugin.arrays import _overflow

    model = dp.load_robot("scara", floating_base=True)
    result = np.zeros((1, model.nv))
    result[0, model.nv - 1] = np.inf
    error = _overflow("forward_dynamics", result, model, True, {"q": np.ones((1, model.nq)),
                                                                 "tau": np.ones((1, model.nv))})
    assert f"joint {model.velocity_names[-1]!r} (index {model.nv - 1})" in str(error)


def _one_error_line(capsys) -> str:
    lines = [line for line in capsys.readouterr().err.strip().splitlines() if line.startswith("dyn-plugin: error")]
    assert len(lines) == 1
    return lines[0]


def test_csv_logs_with_a_byte_order_mark_or_a_column_named_twice(tmp_path, capsys):
    """A spreadsheet's "CSV UTF-8" starts with a byte-order mark: its first column, t, was
    read as '\\ufefft' ("no column t", or t dropped).  A column named twice was read from
    its last occurrence (a q2 in degrees beside the one in rad: held-out RMS 0.246 against
    5e-5, exit 0).  Now the mark is not part of the name, and a name given twice is refused."""
    t = np.linspace(0.0, 2.0, 201)
    qd = np.sin(3 * t) + 0.3 * np.sin(7 * t)
    tau = 0.8 * np.sign(qd) + 0.3 * qd
    rows = "\n".join(f"{float(a)!r},{float(b)!r},{float(c)!r}" for a, b, c in zip(t, qd, tau))
    marked = tmp_path / "marked.csv"
    marked.write_text("t,qd,tau\n" + rows + "\n", encoding="utf-8-sig")
    plain = tmp_path / "plain.csv"
    plain.write_text("t,qd,tau\n" + rows + "\n", encoding="utf-8")
    fits = []
    for path in (marked, plain):
        assert main(["fit-friction", str(path), "--law", "dahl", "--json", str(tmp_path / "fit.json")]) == 0
        fits.append((tmp_path / "fit.json").read_text())
    assert fits[0].replace(str(marked), "") == fits[1].replace(str(plain), "")
    twice = tmp_path / "twice.csv"
    twice.write_text("t,qd,tau,qd\n" + "\n".join(f"{r},{100 * float(b)!r}" for r, b in zip(rows.splitlines(), qd)) + "\n")
    assert main(["fit-friction", str(twice)]) == 2
    assert "column 'qd' appears twice in the header (columns 2 and 4)" in _one_error_line(capsys)


def test_identify_refuses_sample_times_that_do_not_match_the_samples(tmp_path, capsys):
    """--data with t of another length than q: --plot crashed (exit 3, 'x and y must have
    same first dimension'); without --plot, t was ignored."""
    model = dp.load_robot("scara")
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-1, 1, (3, 400, model.n))
    tau = dp.get_backend("newton_euler", model).inverse_dynamics(q, qd, qdd)
    np.savez(tmp_path / "data.npz", t=np.linspace(0, 1, 10), q=q, qd=qd, qdd=qdd, tau=tau)
    for extra in ([], ["--plot", str(tmp_path / "fit.png")]):
        assert main(["identify", "scara", "--data", str(tmp_path / "data.npz"), *extra]) == 2
        assert "t must be 400 finite times, one per sample of q (shape (400,)), got shape (10,)" in _one_error_line(capsys)
