"""Generated ∂τ/∂q and ∂τ/∂q̇ (dyn_plugin/symbolic/derivative_code.py): forward mode over the
code generator's expression DAG, printed by its emitters.

* the Python code equals pinocchio's computeRNEADerivatives to 1e-12
  (|ours − ref| / max(1, |ref|)) on every bundled robot and two random branched URDF
  trees (prismatic, continuous and fixed joints, general axes); numba on one robot (it
  compiles slowly), C (gcc, ctypes) on one;
* the operation counts equal the operators in the emitted source, are positive, and stay
  within forward mode's bound (every τ product costs at most 2 multiplications + 1 addition
  per variable, a sum 1 addition) and, for puma560 and stanford, within 1.5·n·τ.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pinocchio as pin
import pytest

import dyn_plugin as dp
from conftest import rel_err
from dyn_plugin.sampling import random_states
from dyn_plugin.symbolic import codegen
from dyn_plugin.symbolic.derivative_code import STACKED, derivative_code, derivative_operation_counts
from test_codegen import c_operators, python_operators
from urdf_factory import random_tree_urdf

TOL = 1e-12
TREES = {"tree_a": (7, 6), "tree_b": (12, 7)}        # name: (seed, joints) of random_tree_urdf


def _model(name):
    if name in TREES:
        seed, joints = TREES[name]
        xml = random_tree_urdf(np.random.default_rng(seed), joints, branched=True, name=name)
        return dp.urdf.load_urdf_string(xml)
    return dp.load_robot(name)


NAMES = [*dp.list_robots(), *TREES]


@pytest.fixture(scope="module")
def models():
    return {name: _model(name) for name in NAMES}


@pytest.fixture(scope="module")
def python_code(models):
    return {name: derivative_code(model, "python") for name, model in models.items()}


def pinocchio_derivatives(model, s):
    """pinocchio's (∂τ/∂q, ∂τ/∂v) in our joint order (pinocchio_backend.py's mapping)."""
    be = dp.get_backend("pinocchio", model)
    pm, data = be.pin_model, be.pin_model.createData()
    ix = np.ix_(be._idx_v, be._idx_v)
    dq, dv = [], []
    for q, qd, qdd in zip(s.q, s.qd, s.qdd):
        a, b, _ = pin.computeRNEADerivatives(pm, data, be.to_pin_q(q), be.to_pin_v(qd), be.to_pin_v(qdd))
        dq.append(a[ix].copy())
        dv.append(b[ix].copy())
    return np.array(dq), np.array(dv)


# -- equality with pinocchio -------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_python_equals_pinocchio(models, python_code, name):
    model = models[name]
    s = random_states(model, 8, seed=5)
    ref_q, ref_v = pinocchio_derivatives(model, s)
    dq, dv = python_code[name].function(s.q, s.qd, s.qdd)
    assert dq.shape == dv.shape == (8, model.n, model.n)
    assert rel_err(dq, ref_q) <= TOL and rel_err(dv, ref_v) <= TOL
    one_q, one_v = python_code[name].function(s.q[3], s.qd[3], s.qdd[3])      # one state (n,)
    assert one_q.shape == (model.n, model.n) and np.array_equal(one_q, dq[3]) and np.array_equal(one_v, dv[3])


def test_trees_are_branched_with_prismatic_joints(models):
    for name in TREES:
        model = models[name]
        assert len(set(model.parents.tolist())) < model.n and not model.is_revolute.all()


def test_numba_equals_pinocchio_and_python(models, python_code, monkeypatch, tmp_path):
    """One robot (the SCARA: numba compiles the PUMA-560's in ~15 s, which every robot's
    bench and validate runs do): compiled into a signed file of the (temporary) symbolic cache."""
    monkeypatch.setenv("DYN_PLUGIN_CACHE", str(tmp_path))
    model = models["scara"]
    code = derivative_code(model, "numba")
    assert code.counts == python_code["scara"].counts and "@njit" in code.source
    s = random_states(model, 37, seed=6)                # not a multiple of the lanes
    dq, dv = code.function(s.q, s.qd, s.qdd)
    ref_q, ref_v = pinocchio_derivatives(model, s)
    assert dq.shape == (37, model.n, model.n) and rel_err(dq, ref_q) <= TOL and rel_err(dv, ref_v) <= TOL
    py_q, py_v = python_code["scara"].function(s.q, s.qd, s.qdd)
    assert rel_err(dq, py_q) <= 1e-13 and rel_err(dv, py_v) <= 1e-13
    assert len(list(tmp_path.glob("scara_numba_derivatives_*.py"))) == 1


def test_c_equals_pinocchio(models, tmp_path):
    if shutil.which("gcc") is None:
        pytest.fail("gcc is needed to compile the generated C")
    model = models["stanford"]
    code = derivative_code(model, "c")
    (tmp_path / "d.c").write_text(code.source)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(tmp_path / "d.so"), str(tmp_path / "d.c"), "-lm"],
                   check=True)
    lib = ctypes.CDLL(str(tmp_path / "d.so"))
    s = random_states(model, 5, seed=7)
    q, qd, qdd = (np.ascontiguousarray(a) for a in (s.q, s.qd, s.qdd))
    D = np.zeros((5, 2, model.n, model.n))
    pointer = [a.ctypes.data_as(ctypes.POINTER(ctypes.c_double)) for a in (q, qd, qdd, D)]
    getattr(lib, f"{codegen.c_identifier(model.name)}_inverse_dynamics_derivatives_batch")(ctypes.c_long(5), *pointer)
    ref_q, ref_v = pinocchio_derivatives(model, s)
    assert rel_err(D[:, 0], ref_q) <= TOL and rel_err(D[:, 1], ref_v) <= TOL


def test_constant_folding_leaves_structural_zeros(python_code):
    """PUMA-560's first axis is along gravity: ∂τ/∂q₁ ≡ 0 is emitted as literal zeros."""
    source = python_code["puma560"].source
    assert all(f"D[:, 0, {i}, 0] = 0.0\n" in source for i in range(6))


def test_bad_language_is_refused(models):
    with pytest.raises(ValueError, match="lang"):
        derivative_code(models["scara"], "fortran")


# -- operation counts ----------------------------------------------------------------------

def _total(counts):
    return counts["multiplications"] + counts["additions"]


@pytest.mark.parametrize("name", NAMES)
def test_counts_equal_the_operators_in_the_source(models, python_code, name):
    code = python_code[name]
    assert derivative_operation_counts(models[name]) == code.counts
    assert code.tau_counts == codegen.operation_counts(models[name])
    assert python_operators(code.source, STACKED) == code.counts
    if name == "scara":
        c = derivative_code(models[name], "c")
        function = f"{codegen.c_identifier(models[name].name)}_inverse_dynamics_derivatives"
        assert c.counts == code.counts and c_operators(c.source, function) == code.counts


@pytest.mark.parametrize("name", NAMES)
def test_counts_are_within_forward_modes_bound(models, python_code, name, record_property):
    """2n variables; per variable a τ product costs ≤ 2 multiplications + 1 addition, a sum
    ≤ 1 addition, a sine/cosine ≤ 1 multiplication; the τ nodes needed are at most τ's."""
    n, d, t = models[name].n, python_code[name].counts, python_code[name].tau_counts
    print(f"{name}: tau {t}; (dtau/dq, dtau/dqd) {d}; (mult+add) ratio {_total(d) / _total(t):.2f} (n = {n})")
    record_property("tau_counts", t)
    record_property("derivative_counts", d)
    assert min(d.values()) > 0 and min(t.values()) > 0
    assert d["multiplications"] <= t["multiplications"] + 2 * n * (2 * t["multiplications"] + t["trig"])
    assert d["additions"] <= t["additions"] + 2 * n * (t["multiplications"] + t["additions"])
    assert d["trig"] <= 2 * int(models[name].is_revolute.sum())


@pytest.mark.parametrize("name", ["puma560", "stanford"])
def test_counts_stay_below_one_and_a_half_n_tau(python_code, name):
    """Sharing keeps forward mode far below its bound: PUMA-560 923 multiplications + 707
    additions (τ: 184 + 140), Stanford 734 + 516 (τ: 131 + 95), about 0.85·n·τ and
    0.9·n·τ; 1.5·n·τ would catch a blow-up."""
    d, t = python_code[name].counts, python_code[name].tau_counts
    for kind in ("multiplications", "additions"):
        assert d[kind] <= 1.5 * 6 * t[kind], (kind, d, t)
    assert d["trig"] == t["trig"]
