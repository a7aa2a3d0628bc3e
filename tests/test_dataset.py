"""dp.dataset run serially: layout, seeding, trajectories, resuming, refusals and bad input.
(On a cluster, and against pinocchio: tests/test_dask.py.)"""

import numpy as np
import pytest

pytest.importorskip("zarr")

import zarr  # noqa: E402

import dyn_plugin as dp  # noqa: E402
from dyn_plugin.dataset import read_dataset  # noqa: E402
from dyn_plugin.sampling import position_bounds  # noqa: E402


def _run(out, robot="scara", states=2000, **kwargs):
    kwargs = {"chunk": 500, "progress": False, **kwargs}
    return dp.dataset(robot, states, out=out, **kwargs)


def test_layout_attributes_and_dynamics(tmp_path):
    summary = _run(tmp_path / "d.zarr", states=1800, seed=2, mass_matrix=True)
    assert (summary.chunks, summary.computed, summary.skipped, summary.states) == (4, 4, 0, 1800)
    assert summary.states_per_second > 0
    group = zarr.open_group(str(tmp_path / "d.zarr"), mode="r")
    assert group["tau"].shape == (1800, 4) and group["tau"].chunks == (500, 4)
    assert group["M"].shape == (1800, 4, 4) and group["done"].chunks == (1,)
    data = read_dataset(tmp_path / "d.zarr")
    attributes = data["attributes"]
    assert attributes["robot"] == "scara" and attributes["backend"] == "newton_euler"
    assert (attributes["seed"], attributes["chunk"], attributes["states"]) == (2, 500, 1800)
    assert attributes["complete"] and attributes["library_version"] == dp.__version__
    assert len(attributes["model_digest"]) == len(attributes["urdf_digest"]) == 64
    model = dp.load_robot("scara")
    lower, upper = position_bounds(model)
    assert np.all(data["q"] >= lower) and np.all(data["q"] <= upper)
    assert np.abs(data["qd"]).max() <= 2.0 and np.abs(data["qdd"]).max() <= 5.0
    be = dp.get_backend("newton_euler", model)
    assert np.array_equal(data["tau"], be.inverse_dynamics(data["q"], data["qd"], data["qdd"]))
    assert np.array_equal(data["M"], be.mass_matrix(data["q"]))


def test_each_chunk_has_its_own_seed(tmp_path):
    """Chunk c depends on (seed, robot, c) only: a shorter run is a prefix of a longer one,
    another seed or another robot gives other states."""
    long = read_dataset(_made(tmp_path / "long.zarr", states=2000))
    short = read_dataset(_made(tmp_path / "short.zarr", states=1000))
    for name in ("q", "qd", "qdd", "tau"):
        assert np.array_equal(short[name], long[name][:1000]), name
    other = read_dataset(_made(tmp_path / "other.zarr", states=1000, seed=1))
    assert not np.any(other["q"] == short["q"])
    assert not np.array_equal(long["q"][:500], long["q"][500:1000])


def _made(out, **kwargs):
    _run(out, **kwargs)
    return out


def test_trajectories_are_rest_to_rest_quintics_within_the_limits(tmp_path):
    data = read_dataset(_made(tmp_path / "t.zarr", robot="puma560", states=1000, trajectories=True))
    model = dp.load_robot("puma560")
    lower, upper = position_bounds(model)
    assert np.all(data["q"] >= lower) and np.all(data["q"] <= upper)
    assert np.abs(data["qd"]).max() <= 2.0 + 1e-12 and np.abs(data["qdd"]).max() <= 5.0 + 1e-12
    k, t = data["trajectory"], data["t"]
    assert list(np.unique(k)) == list(range(10))            # 5 per chunk of 500, numbered on
    for index in (0, 7):
        one = k == index
        q, qd, qdd, tt = data["q"][one], data["qd"][one], data["qdd"][one], t[one]
        assert tt[0] == 0 and np.all(np.diff(tt) > 0)
        assert np.abs(qd[[0, -1]]).max() < 1e-12 and np.abs(qdd[[0, -1]]).max() < 1e-12   # rest to rest
        step = np.diff(tt)[:, None]                          # trapezoid rule: q̇ and q̈ integrate to q and q̇
        assert np.allclose(np.diff(q, axis=0), 0.5 * step * (qd[1:] + qd[:-1]), atol=2e-4)
        assert np.allclose(np.diff(qd, axis=0), 0.5 * step * (qdd[1:] + qdd[:-1]), atol=2e-4)


def test_quantities_and_friction(tmp_path):
    _run(tmp_path / "q.zarr", quantities=("q", "tau"))
    assert set(zarr.open_group(str(tmp_path / "q.zarr"), mode="r").array_keys()) == {"q", "tau", "done"}
    friction = dp.FrictionModel.create(dp.load_robot("scara"), viscous=0.4, coulomb=0.3)
    data = read_dataset(_made(tmp_path / "f.zarr", backend="newton_euler_friction", friction=friction))
    rigid = dp.get_backend("newton_euler", dp.load_robot("scara"))
    tau_rigid = rigid.inverse_dynamics(data["q"], data["qd"], data["qdd"])
    assert np.allclose(data["tau"] - data["tau_friction"], tau_rigid, rtol=0, atol=1e-12)
    expected = 0.4 * data["qd"] + 0.3 * np.sign(data["qd"])
    assert np.allclose(data["tau_friction"], expected, rtol=0, atol=1e-12)


def test_an_interrupted_run_resumes_with_the_missing_chunks_only(tmp_path):
    fresh = read_dataset(_made(tmp_path / "fresh.zarr", states=3000))

    class Interrupt(Exception):
        pass

    def stop_after_two(done, total):
        if done == 2:
            raise Interrupt

    with pytest.raises(Interrupt):
        _run(tmp_path / "cut.zarr", states=3000, progress=stop_after_two)
    with pytest.raises(dp.InputError, match="incomplete: 4 of 6 chunks missing"):
        read_dataset(tmp_path / "cut.zarr")
    assert not zarr.open_group(str(tmp_path / "cut.zarr"), mode="r").attrs["complete"]
    summary = _run(tmp_path / "cut.zarr", states=3000)
    assert (summary.computed, summary.skipped) == (4, 2)
    again = _run(tmp_path / "cut.zarr", states=3000)
    assert (again.computed, again.skipped) == (0, 6)
    resumed = read_dataset(tmp_path / "cut.zarr")
    for name in ("q", "qd", "qdd", "tau"):
        assert np.array_equal(resumed[name], fresh[name]), name


def test_a_store_for_other_settings_is_refused_unless_overwrite(tmp_path):
    out = _made(tmp_path / "d.zarr")
    with pytest.raises(dp.InputError, match=r"robot: 'scara' in the store, 'puma560' asked.*overwrite=True"):
        _run(out, robot="puma560")
    with pytest.raises(dp.InputError, match=r"seed: 0 in the store, 1 asked"):
        _run(out, seed=1)
    with pytest.raises(dp.InputError, match=r"backend: 'newton_euler' in the store, 'lagrange_euler' asked"):
        _run(out, backend="lagrange_euler")
    with pytest.raises(dp.InputError, match=r"states: 2000 in the store, 1000 asked; chunk"):
        _run(out, states=1000, chunk=250)
    summary = _run(out, robot="puma560", overwrite=True)
    assert summary.computed == 4 and read_dataset(out)["attributes"]["robot"] == "puma560"


def test_other_directories_are_never_replaced(tmp_path):
    precious = tmp_path / "mine"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(dp.InputError, match="not a dyn_plugin dataset; it is left alone"):
        _run(precious, overwrite=True)
    assert (precious / "notes.txt").read_text() == "keep me"
    (tmp_path / "file").write_text("x")
    with pytest.raises(dp.InputError, match="not a directory"):
        _run(tmp_path / "file")


@pytest.mark.parametrize("kwargs, message", [
    (dict(states=0), "states must be a positive whole number, got 0"),
    (dict(states=-5), "states must be a positive whole number"),
    (dict(states=2.5), "states must be a positive whole number"),
    (dict(chunk=0), "chunk must be a positive whole number, got 0"),
    (dict(states=100, chunk=500), r"chunk \(500 states\) must not exceed states \(100\)"),
    (dict(seed=-1), "seed must be a non-negative integer"),
    (dict(quantities=("q", "torque")), "quantities must be distinct names among q, qd, qdd, tau"),
    (dict(friction="urdf"), "backend 'newton_euler' has no friction model"),
])
def test_bad_input_is_refused_before_anything_is_written(tmp_path, kwargs, message):
    with pytest.raises(dp.InputError, match=message):
        _run(tmp_path / "d.zarr", **kwargs)
    assert not (tmp_path / "d.zarr").exists()


def test_unknown_robot_and_backend(tmp_path):
    with pytest.raises(dp.UnknownRobotError, match="nosuchbot"):
        _run(tmp_path / "d.zarr", robot="nosuchbot")
    with pytest.raises(dp.BackendError, match="unknown backend 'nope'"):
        _run(tmp_path / "d.zarr", backend="nope")


def test_dp_dataset_is_the_function_and_the_module(tmp_path):
    import dyn_plugin.dataset as module

    assert callable(dp.dataset) and dp.dataset is module
    assert "states" in str(__import__("inspect").signature(dp.dataset))
    assert module.dataset("scara", 4, out=tmp_path / "d.zarr", chunk=4, progress=False).computed == 1


def test_a_floating_robot_with_spherical_joints_stores_nq_and_nv_columns(tmp_path):
    """q has nq columns and q̇, q̈, τ, M have nv (a floating base and spherical and planar
    joints: nq ≠ nv ≠ n); the stored τ and M are the backend's at the stored states, and
    the trajectories rest to rest (the store kept n columns before, and zarr wrote what fit)."""
    from urdf_factory import random_tree_urdf

    model = dp.load_urdf_string(random_tree_urdf(12, 6, multi_dof=("spherical", "planar"), name="kinds"),
                                floating_base=True)
    assert len({model.nq, model.nv, model.n}) == 3
    data = read_dataset(_made(tmp_path / "k.zarr", robot=model, states=600, chunk=300, trajectories=True,
                              mass_matrix=True))
    assert data["q"].shape == (600, model.nq) and data["tau"].shape == data["qdd"].shape == (600, model.nv)
    assert data["M"].shape == (600, model.nv, model.nv)
    assert data["attributes"]["coordinate_names"] == list(model.configuration_names)
    be = dp.get_backend("newton_euler", model)
    assert np.array_equal(data["tau"], be.inverse_dynamics(data["q"], data["qd"], data["qdd"]))
    assert np.array_equal(data["M"], be.mass_matrix(data["q"]))
    first = data["trajectory"] == 0
    assert np.abs(data["qd"][first][[0, -1]]).max() < 1e-12
