"""Every route of the dynamics on every feature, against pinocchio, on random trees.

The Newton-Euler recursion is stated in three places on purpose (see CONTRIBUTING.md,
"One statement of each recursion"): the readable numpy reference
(dyn_plugin.algorithms), the compiled kernels (dyn_plugin.compiled, whose recursion the
symbolic derivation also runs), and the customised generator (dyn_plugin.symbolic,
codegen).  This file is the mechanical check that keeps them one: each route, derived
from the registry (every backend that is ours or generated, the numpy reference with
``compiled=False``, friction wrappers with friction off, and the symbolic closed forms),
is compared with pinocchio on each feature.  A new backend or a new feature joins the
matrix by declaring itself; nothing here names a backend.

Tolerance: |route − pinocchio| ≤ 1e-9 · max(1, |pinocchio|), entry by entry.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import dyn_plugin as dp  # noqa: E402
from dyn_plugin.backends.registry import backend_class, backends  # noqa: E402
from test_random_trees import CASES, IDS, assert_close, tree  # noqa: E402

TREES = [2, 4, 6]             # a 6-joint chain, a 4-joint tree, an 8-joint tree (prismatic and continuous joints)


def _route_factories() -> dict:
    """name -> factory(model): every backend of ours or generated, and the extra routes."""
    routes = {}
    for name in backends(("ours", "generated")):
        if backend_class(name).can("friction"):
            routes[f"{name}[friction none]"] = functools.partial(dp.get_backend, name, friction="none")
        else:
            routes[name] = functools.partial(dp.get_backend, name)
    routes["newton_euler[numpy reference]"] = functools.partial(dp.get_backend, "newton_euler", compiled=False)
    return routes


ROUTES = _route_factories()


@functools.lru_cache(maxsize=None)
def route(case: int, name: str):
    return ROUTES[name](tree(case).model)


def _wrench_references(t):
    """pinocchio's joint wrenches (N, n, 3) force and moment, each in its joint frame."""
    pd = t.pm.createData()
    f, moment = np.empty(t.qd.shape + (3,)), np.empty(t.qd.shape + (3,))
    for k, (q, qd, qdd) in enumerate(zip(t.q, t.qd, t.qdd)):
        pin.rnea(t.pm, pd, t.pin_q(q), t.pin_v(qd), t.pin_v(qdd))
        for i, j in enumerate(t.jid):
            f[k, i], moment[k, i] = pd.f[j].linear, pd.f[j].angular
    return f, moment


FEATURES = {
    "inverse_dynamics": lambda be, t: (be.inverse_dynamics(t.q, t.qd, t.qdd), t.ref["tau"]),
    "inverse_dynamics (one state)": lambda be, t: (be.inverse_dynamics(t.q[3], t.qd[3], t.qdd[3]), t.ref["tau"][3]),
    "mass_matrix": lambda be, t: (be.mass_matrix(t.q), t.ref["M"]),
    "gravity_torques": lambda be, t: (be.gravity_torques(t.q), t.ref["g"]),
    "bias_forces": lambda be, t: (be.bias_forces(t.q, t.qd), t.ref["bias"]),
    "velocity terms (C q̇)": lambda be, t: (np.einsum("nij,nj->ni", be.coriolis_matrix(t.q, t.qd), t.qd), t.ref["Cqd"]),
    "forward_dynamics": lambda be, t: (be.forward_dynamics(t.q, t.qd, t.tau), t.ref["qdd_fd"]),
    "forward_dynamics (one state)": lambda be, t: (be.forward_dynamics(t.q[5], t.qd[5], t.tau[5]), t.ref["qdd_fd"][5]),
    "joint_wrenches": lambda be, t: (np.stack(be.joint_wrenches(t.q, t.qd, t.qdd)), np.stack(_wrench_references(t))),
}
NEEDS = {"joint_wrenches": "joint_wrenches"}      # feature -> capability it needs


@pytest.mark.parametrize("feature", list(FEATURES))
@pytest.mark.parametrize("name", list(ROUTES))
@pytest.mark.parametrize("case", TREES, ids=[IDS[c] for c in TREES])
def test_route_against_pinocchio(case, name, feature):
    be = route(case, name)
    if feature in NEEDS and not type(be).can(NEEDS[feature]):
        assert not hasattr(be, feature), f"{name} has {feature} but does not declare {NEEDS[feature]!r}"
        return
    ours, reference = FEATURES[feature](be, tree(case))
    assert_close(ours, reference, f"{name} {feature} on {IDS[case]}")


def test_every_route_is_checked():
    """The matrix covers the registry: a backend that is ours or generated cannot be left out."""
    named = {name.split("[")[0] for name in ROUTES}
    assert named == set(backends(("ours", "generated")))
    assert len(CASES) > max(TREES)


@pytest.mark.parametrize("case", [1], ids=[IDS[1]])
def test_symbolic_closed_forms_against_pinocchio(case):
    """The symbolic derivation (closed forms by Newton-Euler, evaluated numerically)."""
    from dyn_plugin.symbolic import lambdify_closed_form, newton_euler, symbolic_model

    t = tree(case)
    numeric = lambdify_closed_form(newton_euler(symbolic_model(t.model)))
    assert_close(numeric.inverse_dynamics(t.q, t.qd, t.qdd), t.ref["tau"], "symbolic newton_euler τ")
    assert_close(numeric.mass_matrix(t.q), t.ref["M"], "symbolic newton_euler M")
    assert_close(numeric.gravity_torques(t.q), t.ref["g"], "symbolic newton_euler g")


def _armature_routes() -> list:
    """(name, options) of every backend of ours whose factory takes ``armature=``, each
    way it can run (compiled and the numpy reference, where it offers ``compiled=``)."""
    import inspect

    routes = []
    for name in backends(("ours", "generated")):
        parameters = inspect.signature(backend_class(name)).parameters
        if "armature" in parameters:
            routes += [(name, {})] + ([(name, {"compiled": False})] if "compiled" in parameters else [])
    return routes


@pytest.mark.parametrize("name, options", _armature_routes(), ids=lambda x: str(x) if x else "default")
def test_armature_against_pinocchio(name, options):
    """Rotor inertia on M's diagonal (pinocchio's model.armature): τ, M and q̈."""
    t = tree(6)
    armature = np.linspace(0.05, 0.4, t.n)
    ours = dp.get_backend(name, t.model, armature=armature, **options)
    reference = dp.get_backend("pinocchio", t.model, armature=armature)
    for method, args in (("inverse_dynamics", (t.q, t.qd, t.qdd)), ("mass_matrix", (t.q,)),
                         ("forward_dynamics", (t.q, t.qd, t.tau)), ("forward_dynamics", (t.q[2], t.qd[2], t.tau[2]))):
        assert_close(getattr(ours, method)(*args), getattr(reference, method)(*args), f"{name} {method} with armature")
