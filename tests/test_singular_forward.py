"""Forward dynamics where M(q) is singular — to rounding, not only exactly — is refused by
every backend with a ModelError that names the motion moving no mass, one state or a
batch; and an ill-conditioned but regular M is solved.  The reference is M's spectrum
from pinocchio's crba (λ_min ≤ SINGULAR λ_max: singular), and for the regular case the
residual of M q̈ = τ − bias."""

import numpy as np
import pinocchio as pin
import pybullet_data
import pytest

import dyn_plugin as dp
from dyn_plugin.arrays import SINGULAR
from dyn_plugin.backends.pinocchio_backend import PinocchioBackend
from dyn_plugin.sampling import random_states

INERTIA = 'ixy="0" ixz="0" iyz="0"'
LIMIT = '<limit lower="-3" upper="3" effort="1" velocity="1"/>'


def two_joints(middle: str, tip: str, origin: str = 'xyz="0 0 0.2" rpy="0 0 0.7"') -> str:
    """base —j1 (z)→ mid —j2 (z)→ tip: ``middle`` and ``tip`` the links' inertials."""
    return f"""<robot name="two_joints">
 <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" {INERTIA}/></inertial></link>
 <link name="mid">{middle}</link>
 <link name="tip">{tip}</link>
 <joint name="j1" type="revolute"><parent link="base"/><child link="mid"/><origin xyz="0 0 0.1"/>
  <axis xyz="0 0 1"/>{LIMIT}</joint>
 <joint name="j2" type="revolute"><parent link="mid"/><child link="tip"/><origin {origin}/>
  <axis xyz="0 0 1"/>{LIMIT}</joint>
</robot>"""


ARM = ('<inertial><origin xyz="0.3 0.1 0.05" rpy="0.2 0.1 0.3"/><mass value="2"/>'
       '<inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial>')


def singular_robots(tmp_path):
    """Robots whose M is singular at every state, most only to rounding."""
    coaxial = tmp_path / "coaxial.urdf"
    coaxial.write_text(two_joints("", ARM, 'xyz="0 0 0.2" rpy="0 0 0.7"'))   # a massless link between coaxial joints
    return {"coaxial": dp.load_robot(str(coaxial)),
            # a massless base: turning it about joint1's axis with joint1 turned back moves nothing
            "puma560 floating": dp.load_robot("puma560", floating_base=True),
            "cartpole floating": dp.load_robot(f"{pybullet_data.getDataPath()}/cartpole.urdf", floating_base=True)}


def spectrum_ratio(model, q) -> np.ndarray:
    """λ_min / λ_max of pinocchio's M at each state."""
    M = PinocchioBackend(model).mass_matrix(q)
    eigenvalues = np.linalg.eigvalsh(M)
    return eigenvalues[:, 0] / eigenvalues[:, -1]


BACKENDS = [("newton_euler", {}), ("newton_euler", {"compiled": False}), ("lagrange_euler", {}),
            ("newton_euler_friction", {"friction": "none"}), ("pinocchio", {})]
BACKEND_IDS = ["newton_euler", "newton_euler-numpy", "lagrange_euler", "newton_euler_friction", "pinocchio"]


@pytest.fixture(scope="module")
def robots(tmp_path_factory):
    return singular_robots(tmp_path_factory.mktemp("singular"))


@pytest.mark.parametrize("name,options", BACKENDS, ids=BACKEND_IDS)
@pytest.mark.parametrize("robot", ["coaxial", "puma560 floating", "cartpole floating"])
@pytest.mark.parametrize("N", [1, 40, 3000])        # one state, the lanes, the parallel loop
def test_forward_dynamics_of_a_singular_mass_matrix_is_refused(robots, robot, name, options, N):
    model = robots[robot]
    states = random_states(model, N, seed=3)
    assert np.all(spectrum_ratio(model, states.q[:5]) <= SINGULAR)     # the reference: singular
    be = dp.get_backend(name, model, **options)
    single = N == 1
    q, qd, tau = (states.q[0], states.qd[0], states.qdd[0]) if single else (states.q, states.qd, states.qdd)
    with pytest.raises(dp.ModelError, match="is undefined" + ("" if single else " at state 0") + ": the mass matrix is singular"):
        be.forward_dynamics(q, qd, tau)


@pytest.mark.parametrize("N", [1, 40])
def test_the_generated_backend_refuses_it_too(robots, N):
    model = robots["coaxial"]
    states = random_states(model, N, seed=3)
    be = dp.get_backend("symbolic_numba", model)
    with pytest.raises(dp.ModelError, match="mass matrix is singular"):
        be.forward_dynamics(states.q[0] if N == 1 else states.q, states.qd[0] if N == 1 else states.qd,
                            states.qdd[0] if N == 1 else states.qdd)


def test_the_message_names_the_motion_that_moves_nothing(robots):
    model = robots["puma560 floating"]
    states = random_states(model, 1, seed=3)
    with pytest.raises(dp.ModelError) as caught:
        dp.get_backend("newton_euler", model).forward_dynamics(states.q[0], states.qd[0], states.qdd[0])
    motion = str(caught.value).split("moves no mass or inertia: ")[1]
    assert set(motion.replace(",", "").split()[::2]) == {"base_wz", "joint1"}      # wz and joint1, opposite
    assert sorted(motion.replace(",", "").split()[1::2]) == ["+1", "-1"]


@pytest.mark.parametrize("name,options", BACKENDS, ids=BACKEND_IDS)
def test_an_ill_conditioned_regular_mass_matrix_is_solved(tmp_path, name, options):
    """A 1e-11 kg·m² rotor on the axis after a 2 kg arm: λ_min / λ_max ≈ 1e-11 > SINGULAR."""
    path = tmp_path / "rotor.urdf"
    rotor = f'<inertial><mass value="0"/><inertia ixx="1e-11" iyy="1e-11" izz="1e-11" {INERTIA}/></inertial>'
    path.write_text(two_joints(ARM, rotor, 'xyz="0.3 0 0.2"'))
    model = dp.load_robot(str(path))
    states = random_states(model, 40, seed=4)
    ratio = spectrum_ratio(model, states.q)
    assert np.all((ratio > 100 * SINGULAR) & (ratio < 1e-9))
    be = dp.get_backend(name, model, **options)
    for N in (1, 40):
        q, qd, tau = (states.q[:N], states.qd[:N], states.qdd[:N])
        qdd = be.forward_dynamics(q, qd, tau)
        M = PinocchioBackend(model).mass_matrix(q)
        residual = np.einsum("nij,nj->ni", M, qdd) - (tau - be.bias_forces(q, qd))
        backward = np.abs(residual).max(axis=1) / (np.abs(M).max(axis=(1, 2)) * np.abs(qdd).max(axis=1))
        assert backward.max() <= 1e-12


def test_pinocchio_itself_answers_a_singular_state_with_rounding_error(robots):
    """Why the pinocchio backend checks too: its aba returns ~1e35 where M is singular."""
    model = robots["cartpole floating"]
    be = PinocchioBackend(model)
    states = random_states(model, 1, seed=1)
    qdd = pin.aba(be.pin_model, be.data, be._pin_q(states.q)[0], be.to_pin_v(states.qd)[0], be.to_pin_v(states.qdd)[0])
    assert np.abs(qdd).max() > 1e30
