"""Customised generated code (dyn_plugin.symbolic.codegen) and the symbolic backend.

* the generated Python, C (compiled with gcc, called through ctypes) and numba code equal
  the newton_euler backend to 1e-12 (|ours − ref| / max(1, |ref|)) on every bundled robot,
  a two-link planar arm and (Python) a random branched URDF tree;
* the operation counts meet the published counts (ANCHORS below) and equal the
  operators actually present in the emitted source;
* the backend's M(q) and forward dynamics equal newton_euler's; its on-disk cache is hit
  on the second construction and a corrupt or stale file is regenerated.
"""

from __future__ import annotations

import ast
import ctypes
import dataclasses
import os
import re
import shutil
import subprocess
import time

import numpy as np
import pytest

import dyn_plugin as dp
from conftest import rel_err
from dyn_plugin.backends.symbolic_backend import SymbolicBackend
from dyn_plugin.symbolic import code_cache
from dyn_plugin.sampling import random_states
from dyn_plugin.symbolic import codegen
from urdf_factory import random_tree_urdf

TOL = 1e-12
ROBOTS = dp.list_robots()

# Published counts of customised inverse dynamics (per τ, mult / add)
ANCHORS = {
    "two_link": (30, 17),    # Macsyma, H. Jack's 1990 thesis, App. B.7
    "puma560": (208, 152),   # Dhanaraj Table 2.10, method I
    "stanford": (183, 140),  # Dhanaraj Table 2.10, method I
}


def two_link_model():
    """The planar arm of H. Jack's 1990 thesis, App. B: two uniform rods (inertia only
    about the joint axes, a 1e-9 thickness keeps them physically valid) and a point
    payload at the tip, merged into link 2; gravity in the plane of motion."""
    m1, m2, mp, l1, l2 = 1.3, 0.7, 0.4, 0.9, 0.6
    i1 = m1 * l1 ** 2 / 12
    m = m2 + mp
    c2 = (m2 * l2 / 2 + mp * l2) / m                   # from joint 2, along the link
    i2 = m2 * l2 ** 2 / 12 + m2 * (l2 / 2 - c2) ** 2 + mp * (l2 - c2) ** 2
    rows = [dp.DHRow("revolute", alpha=0.0, a=l1, d=0.0, theta=0.0, mass=m1, com=(-l1 / 2, 0, 0),
                     inertia=(1e-9, i1, i1, 0, 0, 0)),
            dp.DHRow("revolute", alpha=0.0, a=l2, d=0.0, theta=0.0, mass=m, com=(c2 - l2, 0, 0),
                     inertia=(1e-9, i2, i2, 0, 0, 0))]
    return dp.model_from_dh(rows, "standard", gravity=(0.0, -9.81, 0.0), name="two_link")


def tree_model():
    xml = random_tree_urdf(np.random.default_rng(31), 6, branched=True, name="codegen_tree")
    return dp.load_urdf_string(xml)


MODELS = {name: (lambda name=name: dp.load_robot(name)) for name in ROBOTS}
MODELS["two_link"] = two_link_model


@pytest.fixture(scope="module")
def models():
    return {name: build() for name, build in MODELS.items()}


def reference(model, count=6, seed=3):
    s = random_states(model, count, seed=seed)
    return s, dp.get_backend("newton_euler", model).inverse_dynamics(s.q, s.qd, s.qdd)


def run_python(source, function="inverse_dynamics"):
    namespace = {}
    exec(compile(source, "<generated>", "exec"), namespace)
    return namespace[function]


# -- equality with newton_euler -------------------------------------------------------------

@pytest.mark.parametrize("name", list(MODELS))
def test_python_equals_newton_euler(models, name):
    model = models[name]
    s, ref = reference(model)
    tau = run_python(codegen.generate(model, "python").source)(s.q, s.qd, s.qdd)
    assert tau.shape == ref.shape and rel_err(tau, ref) <= TOL


def test_python_equals_newton_euler_on_random_tree():
    """Branched, with prismatic, continuous and fixed joints, general axes and full
    inertia tensors."""
    model = tree_model()
    assert len(set(model.parents.tolist())) < model.n and not model.is_revolute.all()
    s, ref = reference(model, count=10)
    code = codegen.generate(model, "python", mass_matrix=True)
    assert rel_err(run_python(code.source)(s.q, s.qd, s.qdd), ref) <= TOL
    M_ref = dp.get_backend("newton_euler", model).mass_matrix(s.q)
    assert rel_err(run_python(code.source, "mass_matrix")(s.q), M_ref) <= TOL


@pytest.mark.parametrize("name", ["puma560", "scara", "tree"])
def test_python_takes_one_state_as_well_as_a_batch(models, name):
    """The generated Python accepts (n,) as well as (N, n): one state gives τ
    (n,) and M (n, n), equal to newton_euler's; lists and ints are fine too."""
    model = tree_model() if name == "tree" else models[name]
    s, ref = reference(model, count=4)
    code = codegen.generate(model, "python", mass_matrix=True)
    tau_f, mass_f = run_python(code.source), run_python(code.source, "mass_matrix")
    M_ref = dp.get_backend("newton_euler", model).mass_matrix(s.q)
    for k in range(len(s.q)):
        tau = tau_f(s.q[k], s.qd[k], s.qdd[k])
        M = mass_f(s.q[k])
        assert tau.shape == (model.n,) and rel_err(tau, ref[k]) <= TOL
        assert M.shape == (model.n, model.n) and rel_err(M, M_ref[k]) <= TOL
    assert tau_f(s.q, s.qd, s.qdd).shape == (len(s.q), model.n)
    assert rel_err(tau_f(list(s.q[0]), list(s.qd[0]), list(s.qdd[0])), ref[0]) <= TOL
    zero = [0] * model.n
    assert rel_err(tau_f(zero, zero, zero), dp.get_backend("newton_euler", model).inverse_dynamics(
        np.zeros(model.n), np.zeros(model.n), np.zeros(model.n))) <= TOL


def test_python_refuses_bad_shapes_and_non_finite_input(models):
    model = models["scara"]
    n = model.n
    f = run_python(codegen.generate(model, "python").source)
    z = np.zeros(n)
    nan = z.copy()
    nan[1] = np.nan
    for args in ((np.zeros(n + 1), np.zeros(n + 1), np.zeros(n + 1)), (z, z, np.zeros((2, n))),
                 (np.zeros((2, 2, n)),) * 3, (np.float64(0.0),) * 3, (z, nan, z), (z, z, z + np.inf)):
        with pytest.raises(dp.InputError):
            f(*args)


def test_cli_python_takes_one_state(capsys):
    """``dyn-plugin codegen ROBOT --lang python``'s output, run, for one state."""
    from dyn_plugin.tools.cli import main
    assert main(["codegen", "stanford", "--lang", "python"]) == 0
    source = capsys.readouterr().out
    model = dp.load_robot("stanford")
    s, ref = reference(model, count=2)
    tau = run_python(source)(s.q[1], s.qd[1], s.qdd[1])
    assert tau.shape == (model.n,) and rel_err(tau, ref[1]) <= TOL


@pytest.fixture(scope="module")
def c_library(models, tmp_path_factory):
    """All models' generated C (τ and M) compiled into one shared library."""
    if shutil.which("gcc") is None:
        pytest.fail("gcc is needed to compile the generated C")
    directory = tmp_path_factory.mktemp("generated_c")
    sources = []
    for name, model in models.items():
        path = directory / f"{name}.c"
        path.write_text(codegen.generate(model, "c", mass_matrix=True).source)
        sources.append(str(path))
    lib = directory / "libgenerated.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib), *sources, "-lm"], check=True)
    return ctypes.CDLL(str(lib))


def _pointer(array):
    return array.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


@pytest.mark.parametrize("name", list(MODELS))
def test_c_equals_newton_euler(models, c_library, name):
    model = models[name]
    s, ref = reference(model)
    ident = codegen.c_identifier(model.name)
    q, qd, qdd = (np.ascontiguousarray(a) for a in (s.q, s.qd, s.qdd))
    tau = np.zeros_like(q)
    getattr(c_library, f"{ident}_inverse_dynamics_batch")(
        ctypes.c_long(len(q)), _pointer(q), _pointer(qd), _pointer(qdd), _pointer(tau))
    assert rel_err(tau, ref) <= TOL
    one = np.zeros(model.n)                            # the single-state function too
    getattr(c_library, f"{ident}_inverse_dynamics")(_pointer(q[0]), _pointer(qd[0]), _pointer(qdd[0]), _pointer(one))
    assert rel_err(one, ref[0]) <= TOL
    M = np.zeros((len(q), model.n, model.n))
    getattr(c_library, f"{ident}_mass_matrix_batch")(ctypes.c_long(len(q)), _pointer(q), _pointer(M))
    assert rel_err(M, dp.get_backend("newton_euler", model).mass_matrix(q)) <= TOL


def test_numba_backend_equals_newton_euler(monkeypatch, tmp_path):
    """numba compiles slowly: one robot, through the backend (its cached file); the
    generated module's own entry points also take one state (n,), read-only arrays, and
    refuse non-finite input (a refused state is never returned as numbers)."""
    monkeypatch.setenv("DYN_PLUGIN_CACHE", str(tmp_path))
    model = dp.load_robot("stanford")
    be = SymbolicBackend(model, lang="numba")
    s, ref = reference(model)
    assert rel_err(be.inverse_dynamics(s.q, s.qd, s.qdd), ref) <= TOL
    M_ref = dp.get_backend("newton_euler", model).mass_matrix(s.q)
    assert rel_err(be.mass_matrix(s.q), M_ref) <= TOL
    assert "@njit" in be.cache_path.read_text()
    module = be._module
    one = module.inverse_dynamics(s.q[0], s.qd[0], s.qdd[0])
    assert one.shape == (model.n,) and rel_err(one, ref[0]) <= TOL
    assert module.mass_matrix(s.q[0]).shape == (model.n, model.n) and rel_err(module.mass_matrix(s.q[0]), M_ref[0]) <= TOL
    frozen = [np.array(a) for a in (s.q, s.qd, s.qdd)]
    for a in frozen:
        a.setflags(write=False)
    assert rel_err(module.inverse_dynamics(*frozen), ref) <= TOL
    bad = s.qd.copy()
    bad[2, 1] = np.nan
    for call in (lambda: module.inverse_dynamics(s.q, bad, s.qdd), lambda: module.bias_forces(s.q, bad),
                 lambda: module.forward_dynamics(s.q, bad, s.tau), lambda: module.inverse_dynamics(s.q, s.qd[:, :2], s.qdd)):
        with pytest.raises(dp.InputError):
            call()


def test_every_free_choice_leaves_tau_unchanged(models):
    """Origin shifts along the axes, partial regrouping and both formula forms, drawn at
    random, give the same τ (the search only picks the cheapest of them)."""
    rng = np.random.default_rng(7)
    for model in (models["puma560"], models["stanford"], tree_model()):
        raw, base_acc = codegen._raw_links(model)
        s, ref = reference(model, count=4)
        for _ in range(5):
            choices = [codegen.Choice(
                shift=float(rng.uniform(-0.5, 0.5)) if rng.random() < 0.5 else 0.0,
                moves=frozenset(m for m in (codegen.REVOLUTE_MOVES if link.revolute else codegen.PRISMATIC_MOVES)
                                if link.parent >= 0 and rng.random() < 0.6),
                gyro=str(rng.choice(["lambda", "cross"])), lam=str(rng.choice(["plain", "prime"])))
                for link in raw]
            program = codegen._id_program(codegen.Graph(), codegen._variant(raw, choices), base_acc)
            source = codegen._emit_python(codegen._Printer(program, "python"), "f", ["q", "qd", "qdd"], "tau",
                                          program.outputs, "q.shape", "")
            prelude = f"import numpy as np\nInputError = ValueError\nN_JOINTS = {model.n}\n" + codegen._AS_STATES
            assert rel_err(run_python(prelude + source, "f")(s.q, s.qd, s.qdd), ref) <= TOL


def test_rounding_in_the_urdf_is_snapped(models):
    """The PUMA URDF's rest rotations hold 6.1e-17 for cos(π/2): the generated code has
    no such constant (it is 0), and τ still equals newton_euler's (tests above)."""
    assert np.any((np.abs(models["puma560"].joint_rotations) > 0) & (np.abs(models["puma560"].joint_rotations) < 1e-12))
    source = codegen.generate(models["puma560"], "python").source
    assert not re.search(r"e-1[5-9]", source)


# -- operation counts ----------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ANCHORS))
def test_counts_meet_the_literature(models, name):
    counts = codegen.operation_counts(models[name])
    mult, add = ANCHORS[name]
    assert counts["multiplications"] <= mult and counts["additions"] <= add, counts


def test_two_link_is_near_the_raibert_horn_minimum(models):
    """Raibert-Horn's minimum for a 2-link arm is 20 mult / 14 add (Brady et al., Robot
    Motion, 1982, p. 78, as quoted in H. Jack's 1990 thesis, App. B.7)."""
    counts = codegen.operation_counts(models["two_link"])
    assert counts["multiplications"] + counts["additions"] <= 20 + 14


def python_operators(source, function="inverse_dynamics"):
    """Binary * and +/- and sin/cos calls in one function of the Python source; the numba
    code's ``s, c = sin_cos(q)`` counts as the sine and cosine it names (``_``: unused)."""
    tree = ast.parse(source)
    body = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == function)
    counts = {"multiplications": 0, "additions": 0, "trig": 0}
    for node in ast.walk(body):
        if isinstance(node, ast.BinOp):
            kind = {ast.Mult: "multiplications", ast.Add: "additions", ast.Sub: "additions"}.get(type(node.op))
            assert kind is not None, ast.dump(node)
            counts[kind] += 1
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("sin", "cos"):
            counts["trig"] += 1
        elif isinstance(node, ast.Assign) and getattr(node.value, "func", None) is not None \
                and getattr(node.value.func, "id", None) == "sin_cos":
            counts["trig"] += sum(target.id != "_" for target in node.targets[0].elts)
    return counts


def c_operators(source, function):
    """The same for a C function: numeric literals are removed first (``1e-05``), then a
    ``+``/``-`` after an operand is binary, any other is a sign change."""
    start = source.index(f"void {function}(")
    body = source[source.index("{", start):source.index("\n}", start)]
    body = re.sub(r"(?<![\w.])(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", "K", body)
    binary = re.findall(r"[\w)\]]\s*([-+*])", body)
    return {"multiplications": binary.count("*"),
            "additions": binary.count("+") + binary.count("-"),
            "trig": len(re.findall(r"\b(?:sin|cos)\(", body))}


@pytest.mark.parametrize("name", list(MODELS))
def test_counts_equal_the_operators_in_the_source(models, name):
    model = models[name]
    python = codegen.generate(model, "python", mass_matrix=True)
    c = codegen.generate(model, "c")
    numba = codegen.generate(model, "numba")
    counts = codegen.operation_counts(model)
    assert python.counts == c.counts == numba.counts == counts
    assert python_operators(python.source) == counts
    assert python_operators(numba.source, "inverse_dynamics_state") == counts
    assert python_operators(python.source, "mass_matrix") == python.mass_matrix_counts
    assert c_operators(c.source, f"{codegen.c_identifier(model.name)}_inverse_dynamics") == counts
    header = python.source.split("\n\n")[0]
    assert f"{counts['multiplications']} multiplications, {counts['additions']} additions" in header
    assert model.name in header


def test_sign_changes_are_free_and_only_outermost(models):
    """A unary minus never feeds another operation (so not counting it is fair)."""
    source = codegen.generate(models["puma560"], "python").source
    body = ast.parse(source)
    for node in ast.walk(body):
        if isinstance(node, (ast.BinOp, ast.Call)):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.UnaryOp):
                    assert isinstance(child.operand, ast.Constant), ast.unparse(node)


def test_generation_is_fast():
    model = dp.load_robot("puma560")
    codegen._PREPARED.clear()
    start = time.perf_counter()
    code = codegen.generate(model, "c")
    assert time.perf_counter() - start < 20.0          # about 1 s; the machine is shared
    assert code.functions["inverse_dynamics"] == "puma560_inverse_dynamics"


def test_bad_language_is_refused(models):
    with pytest.raises(ValueError, match="lang"):
        codegen.generate(models["scara"], "fortran")
    with pytest.raises(dp.BackendError, match="lang"):
        SymbolicBackend(models["scara"], lang="fortran")


# -- the backend ---------------------------------------------------------------------------

@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("DYN_PLUGIN_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("name", ROBOTS)
def test_backend_mass_matrix_and_forward_dynamics(cache, name):
    model = dp.load_robot(name)
    be, ref = SymbolicBackend(model), dp.get_backend("newton_euler", model)
    s = random_states(model, 8, seed=11)
    assert rel_err(be.inverse_dynamics(s.q, s.qd, s.qdd), ref.inverse_dynamics(s.q, s.qd, s.qdd)) <= TOL
    assert rel_err(be.mass_matrix(s.q), ref.mass_matrix(s.q)) <= TOL
    assert rel_err(be.forward_dynamics(s.q, s.qd, s.tau), ref.forward_dynamics(s.q, s.qd, s.tau)) <= 1e-9
    assert rel_err(be.gravity_torques(s.q[0]), ref.gravity_torques(s.q[0])) <= TOL
    assert be.inverse_dynamics(s.q[0], s.qd[0], s.qdd[0]).shape == (model.n,)
    assert be.name == "symbolic" and be.description


def test_backend_gravity_option(cache):
    model = dp.load_robot("stanford")
    g = (1.5, -2.0, -9.0)
    be, ref = SymbolicBackend(model, gravity=g), dp.get_backend("newton_euler", model, gravity=g)
    s = random_states(model, 5, seed=2)
    assert rel_err(be.inverse_dynamics(s.q, s.qd, s.qdd), ref.inverse_dynamics(s.q, s.qd, s.qdd)) <= TOL
    assert be.cache_path != SymbolicBackend(model).cache_path        # gravity is in the key


def test_cache_hit_then_corrupt_and_stale_files_are_regenerated(cache):
    model = dp.load_robot("scara")
    first = SymbolicBackend(model)
    path = first.cache_path
    assert not first.cache_hit and path.parent == cache and path.exists()
    stamp = path.stat().st_mtime_ns
    os.utime(path, ns=(stamp - 10**9, stamp - 10**9))  # an old file: a rewrite would show
    stamp = path.stat().st_mtime_ns
    second = SymbolicBackend(model)
    assert second.cache_hit and second.cache_path == path and path.stat().st_mtime_ns == stamp
    s, ref = reference(model)

    for damage in ("this is ( not python\n",                            # corrupt
                   path.read_text().replace("GENERATOR_KEY = '", "GENERATOR_KEY = 'x"),  # stale key
                   path.read_text().replace("0.325", "0.3251")):       # imports, wrong numbers
        path.write_text(damage)
        again = SymbolicBackend(model)
        assert not again.cache_hit and again.cache_path == path
        assert rel_err(again.inverse_dynamics(s.q, s.qd, s.qdd), ref) <= TOL
        assert SymbolicBackend(model).cache_hit


def test_cache_directory_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("DYN_PLUGIN_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert code_cache.cache_dir() == tmp_path / "dyn_plugin" / "symbolic"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert code_cache.cache_dir() == tmp_path / "home" / ".cache" / "dyn_plugin" / "symbolic"
    monkeypatch.setenv("DYN_PLUGIN_CACHE", str(tmp_path / "mine"))
    assert code_cache.cache_dir() == tmp_path / "mine"


def test_key_covers_every_parameter(models):
    model = models["puma560"]
    keys = {codegen.model_key(model)}
    for field, change in (("masses", lambda a: a * 1.01), ("coms", lambda a: a + 1e-6),
                          ("inertias", lambda a: a * 1.01), ("joint_positions", lambda a: a + 1e-6),
                          ("gravity", lambda a: a * 0.5)):
        keys.add(codegen.model_key(dataclasses.replace(model, **{field: change(getattr(model, field))})))
    keys.add(codegen.model_key(model, "numba"))
    assert len(keys) == 7
