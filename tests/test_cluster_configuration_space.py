"""dyn_plugin.cluster's lazy dynamics on models whose coordinates are not one per joint.

A floating base (q (N, nq), nq = n + 7, v (N, nv), nv = n + 6), mimic joints in reduced
coordinates (nq = nv < n), both, and a spherical joint (nq = nv + 1): every lazy function
takes q (N, nq) and the others (N, nv), gives (N, nv) or (N, nv, nv), and equals the
serial backend bit for bit on the session's 2-process cluster (tests/conftest.py); a
wrong width is refused naming the expected one.
"""

import numpy as np
import pytest

pytest.importorskip("distributed")

import dask.array as da  # noqa: E402

import dyn_plugin as dp  # noqa: E402
import dyn_plugin.cluster as dpc  # noqa: E402
from dyn_plugin.sampling import random_states  # noqa: E402
from test_dask import OPS  # noqa: E402  (operation: the random_states fields it takes)
from test_mimic import MIMIC_URDF  # noqa: E402
from urdf_factory import random_tree_urdf  # noqa: E402

MODELS = {  # name: model (the bundled robots' floating bases are massless: their M is singular)
    "floating": lambda: dp.load_urdf_string(random_tree_urdf(3, 4, name="flyer"), floating_base=True),
    "mimic": lambda: dp.load_urdf_string(MIMIC_URDF, mimic=True),
    "mimic_floating": lambda: dp.load_urdf_string(MIMIC_URDF, mimic=True, floating_base=True),
    "spherical": lambda: dp.load_urdf_string(random_tree_urdf(5, 4, multi_dof=("spherical",), name="ball")),
}


@pytest.fixture
def client(dask_client):
    """The session's 2-process cluster (tests/conftest.py)."""
    return dask_client


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request):
    model = MODELS[request.param]()
    assert model.nq != model.n or model.nv != model.n     # what this file is about
    return model


def test_lazy_dynamics_take_q_of_nq_and_the_rest_of_nv(client, model):
    be = dp.get_backend("newton_euler", model)
    s = random_states(model, 5, seed=7)
    assert s.q.shape == (5, model.nq) and s.qd.shape == s.qdd.shape == s.tau.shape == (5, model.nv)
    direct = {op: getattr(be, op)(*(getattr(s, f) for f in fields)) for op, fields in OPS.items()}
    # q in chunks of 2 states; q̇ chunked otherwise (its coordinate axis split too): realigned to q's
    lazy = {"q": da.from_array(s.q, chunks=(2, -1)), "qd": da.from_array(s.qd, chunks=(3, 2)),
            "qdd": s.qdd, "tau": s.tau}
    for op, fields in OPS.items():
        result = getattr(dpc, op)(be, *(lazy[f] for f in fields))
        width = (model.nv, model.nv) if op == "mass_matrix" else (model.nv,)
        assert result.shape == (5,) + width and result.chunks[0] == (2, 2, 1), op
        computed = result.compute()
        assert direct[op].shape == (5,) + width, op
        assert np.array_equal(computed, direct[op]), op


def test_a_wrong_width_names_nq_for_q_and_nv_for_the_others(model):
    be = dp.get_backend("newton_euler", model)
    s = random_states(model, 5, seed=8)
    joints = np.zeros((5, model.n))                         # one column per joint: wrong for this model
    with pytest.raises(dp.InputError, match=rf"q must have shape \(N, {model.nq}\), got \(5, {model.n}\)"):
        dpc.mass_matrix(be, joints)
    with pytest.raises(dp.InputError, match=rf"qd must have shape \(N, {model.nv}\), got \(5, {model.n}\)"):
        dpc.inverse_dynamics(be, s.q, joints, s.qdd)
    with pytest.raises(dp.InputError, match=rf"tau must have shape \(N, {model.nv}\), got \(5, {model.n}\)"):
        dpc.forward_dynamics(be, s.q, s.qd, joints)
    if model.nq != model.nv:                                # q̇ where q belongs, and q where q̇ belongs
        with pytest.raises(dp.InputError, match=rf"q must have shape \(N, {model.nq}\), got \(5, {model.nv}\)"):
            dpc.gravity_torques(be, s.qd)
        with pytest.raises(dp.InputError, match=rf"qd must have shape \(N, {model.nv}\), got \(5, {model.nq}\)"):
            dpc.bias_forces(be, s.q, s.q)
