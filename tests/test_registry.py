"""The backend registry: built-ins, run-time registration, the entry-point group."""

import sys
import textwrap

import numpy as np
import pytest

import dyn_plugin as dp
from dyn_plugin.backends import registry


def test_builtin_backends_listed():
    assert dp.list_backends()[:8] == ["newton_euler", "lagrange_euler", "newton_euler_friction",
                                      "lagrange_euler_friction", "symbolic", "symbolic_numba", "pinocchio", "pybullet"]


def test_ours_do_not_import_the_references():
    """Our backends and the generated ones must not call pinocchio or pybullet (checked in a
    fresh interpreter)."""
    import subprocess

    code = ("import sys, dyn_plugin as dp; from dyn_plugin.backends.registry import backends; "
            "m = dp.load_robot('puma560'); "
            "ours = backends(('ours', 'generated')); "
            "[dp.get_backend(b, m).inverse_dynamics([0.1]*6, [0.2]*6, [0.3]*6) for b in ours]; "
            "print(len(ours), sorted(k for k in ('pinocchio', 'pybullet') if k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    count, imported = out.strip().split(" ", 1)
    assert int(count) >= 6 and imported == "[]"


def test_lists_of_backends_come_from_what_each_declares():
    """kind and capabilities, declared by each backend class, are the only source of the lists."""
    def builtin(names):   # installed third-party backends, if any, are left out of the comparison
        return [name for name in names if name in registry._BUILTIN]

    assert builtin(registry.backends("ours", cannot=("friction",))) == ["newton_euler", "lagrange_euler"]
    assert builtin(registry.backends(can=("friction",))) == ["newton_euler_friction", "lagrange_euler_friction"]
    assert builtin(registry.backends("generated")) == ["symbolic", "symbolic_numba"]
    assert builtin(registry.backends("reference")) == ["pinocchio", "pybullet"]
    assert registry.backends(("ours", "generated", "reference")) == registry.backends()
    assert builtin(registry.backends()) == builtin(dp.list_backends())
    for name in dp.list_backends():
        cls = registry.backend_class(name)
        assert cls.can() and cls.can(*cls.capabilities)
        assert cls.can("stepping") == (name in registry.backends(can=("stepping",)))
    assert registry.backend_class("newton_euler_friction").can("friction", "stepping")
    assert not registry.backend_class("pinocchio").can("friction")
    with pytest.raises(dp.BackendError, match="unknown backend kind 'mine'"):
        registry.backends("mine")
    with pytest.raises(dp.BackendError, match="unknown capability 'flying'"):
        registry.backends(can=("flying",))


class Doubled(dp.Backend):
    """A toy backend: Newton-Euler with every torque doubled."""

    def _batch_inverse_dynamics(self, q, qd, qdd):
        return 2 * dp.get_backend("newton_euler", self.model)._batch_inverse_dynamics(q, qd, qdd)

    def _batch_mass_matrix(self, q):
        return 2 * dp.get_backend("newton_euler", self.model)._batch_mass_matrix(q)


def test_register_at_run_time():
    model = dp.load_robot("scara")
    dp.register_backend("doubled", Doubled)
    try:
        assert "doubled" in dp.list_backends()
        be = dp.get_backend("doubled", model)
        q = np.full(model.n, 0.1)
        np.testing.assert_allclose(be.inverse_dynamics(q, q, q),
                                   2 * dp.get_backend("newton_euler", model).inverse_dynamics(q, q, q), rtol=1e-14)
        # the default forward dynamics of a new backend is consistent with its own M and τ
        np.testing.assert_allclose(be.forward_dynamics(q, q, be.inverse_dynamics(q, q, q)), q, rtol=1e-10)
        with pytest.raises(dp.BackendError, match="already registered"):
            dp.register_backend("doubled", Doubled)
    finally:
        dp.unregister_backend("doubled")
    assert "doubled" not in dp.list_backends()


def test_unknown_backend_lists_available():
    with pytest.raises(dp.BackendError, match="newton_euler"):
        dp.get_backend("no_such_backend", dp.load_robot("scara"))


def test_entry_point_group(tmp_path, monkeypatch):
    """An installed package that declares a `dyn_plugin.backends` entry point is found."""
    (tmp_path / "toy_backend.py").write_text(textwrap.dedent("""
        from dyn_plugin.backends.newton_euler_backend import NewtonEulerBackend

        class ToyBackend(NewtonEulerBackend):
            name = "toy"
            description = "a third-party backend"
    """))
    dist = tmp_path / "toy_backend-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-backend\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[dyn_plugin.backends]\ntoy = toy_backend:ToyBackend\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_entry_points_loaded", False)
    monkeypatch.setattr(registry, "_factories", dict(registry._BUILTIN))
    assert "toy" in dp.list_backends()
    be = dp.get_backend("toy", dp.load_robot("scara"))
    assert type(be).__name__ == "ToyBackend"


def test_a_registered_backend_joins_the_suites_by_its_declaration():
    """CONTRIBUTING's backend recipe: registering a backend is all it takes for the default
    validation suite (and every registry-derived list) to include it."""
    from dyn_plugin.backends.newton_euler_backend import NewtonEulerBackend
    from dyn_plugin.tools.validate import load_suite

    class Toy(NewtonEulerBackend):
        name = "toy_newton_euler"

    dp.register_backend("toy_newton_euler", Toy)
    try:
        assert "toy_newton_euler" in load_suite("default").backends
        assert "toy_newton_euler" in load_suite("quick").backends           # ours, without friction
        assert "toy_newton_euler" not in load_suite("default").references
        Toy.kind = "reference"
        assert "toy_newton_euler" in load_suite("default").references
    finally:
        dp.unregister_backend("toy_newton_euler")
    assert "toy_newton_euler" not in load_suite("default").backends
