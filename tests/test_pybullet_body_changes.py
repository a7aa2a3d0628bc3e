"""The drop-ins and the stepper follow the scene as it changes: another body at a removed
body's id, a client id taken again after a disconnect, ``setGravity`` and ``changeDynamics``
after a stepper was made; and names with XML's special characters.  The reference is
pybullet's own answer for the scene as it is (inertia from file, damping and motors off:
../shared/REFERENCE.md, "The reference engines, configured fairly")."""

import numpy as np
import pybullet_data
import pytest
from pybullet_utils import bullet_client

from dyn_plugin import pybullet_bridge as dpb
from dyn_plugin.backends.pybullet_backend import c_level_output_silenced, import_pybullet
from dyn_plugin.errors import InputError

p = import_pybullet()
KUKA = f"{pybullet_data.getDataPath()}/kuka_iiwa/model.urdf"
PANDA = f"{pybullet_data.getDataPath()}/franka_panda/panda.urdf"
Q, QD, QDD = [0.4, -0.3], [0.5, 0.2], [0.1, -0.2]
TOL = 1e-12


def arm(axis: str, joint: str = "j1", link: str = "l1") -> str:
    """A two-link arm; ``axis`` of its first joint, whose name and child link's are given
    (XML-escaped as they stand in the file)."""
    inertia = 'ixy="0" ixz="0" iyz="0"'
    limit = '<limit lower="-3" upper="3" effort="10" velocity="10"/>'
    return f"""<robot name="arm">
 <link name="base"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" {inertia}/></inertial></link>
 <link name="{link}"><inertial><origin xyz="0.3 0 0"/><mass value="2"/>
  <inertia ixx="0.1" iyy="0.2" izz="0.3" {inertia}/></inertial></link>
 <link name="l2"><inertial><origin xyz="0.2 0 0"/><mass value="1"/>
  <inertia ixx="0.05" iyy="0.06" izz="0.07" {inertia}/></inertial></link>
 <joint name="{joint}" type="revolute"><parent link="base"/><child link="{link}"/><origin xyz="0 0 0.5"/>
  <axis xyz="{axis}"/>{limit}</joint>
 <joint name="j2" type="revolute"><parent link="{link}"/><child link="l2"/><origin xyz="0.6 0 0"/>
  <axis xyz="0 0 1"/>{limit}</joint>
</robot>"""


def load(path, client, **kwargs):
    """``path`` loaded fixed in ``client``, whose gravity is set to (0, 0, −9.81)."""
    p.setGravity(0, 0, -9.81, physicsClientId=client)
    with c_level_output_silenced():
        return p.loadURDF(str(path), useFixedBase=True, flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client,
                          **kwargs)


def rel(ours, theirs) -> float:
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    return float(np.max(np.abs(ours - theirs) / np.maximum(1.0, np.abs(theirs))))


def pybullet_answer(path) -> tuple:
    """pybullet's (ID, M) at Q, QD, QDD for the URDF at ``path``, loaded alone in a client
    of its own: pybullet's own inverse dynamics keeps a model per body in memory that a
    body loaded after ``removeBody`` can be given again (seen here: the removed arm's τ)."""
    c = p.connect(p.DIRECT)
    try:
        body = load(path, c)
        return (p.calculateInverseDynamics(body, Q, QD, QDD, physicsClientId=c),
                p.calculateMassMatrix(body, Q, physicsClientId=c))
    finally:
        p.disconnect(physicsClientId=c)


def agree(body, client, path) -> tuple:
    """(ID, M) errors of ours for ``body`` at Q, QD, QDD against pybullet's for ``path``."""
    tau, M = pybullet_answer(path)
    return (rel(dpb.calculateInverseDynamics(body, Q, QD, QDD, physicsClientId=client), tau),
            rel(dpb.calculateMassMatrix(body, Q, physicsClientId=client), M))


@pytest.fixture
def arms(tmp_path):
    """Two arms alike in names, masses and inertias, their first joints about y and x."""
    paths = tmp_path / "arm_y.urdf", tmp_path / "arm_x.urdf"
    for path, axis in zip(paths, ("0 1 0", "1 0 0")):
        path.write_text(arm(axis))
    return paths


@pytest.fixture
def client():
    c = p.connect(p.DIRECT)
    yield c
    if p.isConnected(physicsClientId=c):
        p.disconnect(physicsClientId=c)


def test_a_body_loaded_at_a_removed_bodys_id_is_described_anew(arms, client):
    first = load(arms[0], client)
    assert max(agree(first, client, arms[0])) <= TOL
    p.removeBody(first, physicsClientId=client)
    second = load(arms[1], client)
    assert second == first                           # pybullet gives the id again
    assert max(agree(second, client, arms[1])) <= TOL        # 11.9 N·m off before: the first arm's model


def test_a_turning_base_is_answered_with_its_gravity_and_a_bounded_number_of_backends(arms, client):
    """A fixed base turned before each call (resetBasePositionAndOrientation) feels gravity
    elsewhere in its frame each time.  The reference: pybullet's τ for the arm upright in a
    client whose gravity is that one (pybullet's own answer for the turned base ignores the
    turn: bullet3 issue #2876).  The body keeps at most BACKENDS_KEPT backends (one was
    built and kept for every gravity: 24 after 24 calls)."""
    from dyn_plugin.pybullet_bodies import BACKENDS_KEPT, body_dynamics

    body = load(arms[0], client)
    upright = p.connect(p.DIRECT)
    try:
        reference = load(arms[0], upright)
        worst = 0.0
        for k in range(3 * BACKENDS_KEPT):
            turn = p.getQuaternionFromEuler([0.1 * k, -0.05 * k, 0.02 * k])
            p.resetBasePositionAndOrientation(body, [0, 0, 0], turn, physicsClientId=client)
            R = np.array(p.getMatrixFromQuaternion(turn)).reshape(3, 3)
            p.setGravity(*(R.T @ [0, 0, -9.81]), physicsClientId=upright)
            theirs = p.calculateInverseDynamics(reference, Q, QD, QDD, physicsClientId=upright)
            worst = max(worst, rel(dpb.calculateInverseDynamics(body, Q, QD, QDD, physicsClientId=client), theirs))
    finally:
        p.disconnect(physicsClientId=upright)
    assert worst <= TOL
    assert len(body_dynamics(body, client).backends) == BACKENDS_KEPT


def test_a_client_id_taken_again_after_a_disconnect_is_described_anew(arms):
    first = p.connect(p.DIRECT)
    body = load(arms[0], first)
    assert max(agree(body, first, arms[0])) <= TOL
    p.disconnect(physicsClientId=first)
    again = p.connect(p.DIRECT)
    try:
        assert again == first and load(arms[1], again) == body
        assert max(agree(body, again, arms[1])) <= TOL
    finally:
        p.disconnect(physicsClientId=again)


def test_installed_drop_ins_of_a_disconnected_bullet_client_refuse_as_pybullets_own(arms):
    old = dpb.install(bullet_client.BulletClient(connection_mode=p.DIRECT))
    load(arms[0], old._client)
    old.disconnect()
    new = p.connect(p.DIRECT)           # takes the old client's id
    try:
        load(arms[1], new)
        with pytest.raises(p.error):
            old.getNumJoints(0)                 # pybullet's own methods refuse
        for name in ("calculateInverseDynamics", "calculateMassMatrix"):
            args = (0, Q, QD, QDD) if name == "calculateInverseDynamics" else (0, Q)
            with pytest.raises(InputError, match="client -1"):
                getattr(old, name)(*args)
        assert max(agree(0, new, arms[1])) <= TOL
    finally:
        p.disconnect(physicsClientId=new)


def test_names_with_xml_special_characters(tmp_path, client):
    path = tmp_path / "names.urdf"
    path.write_text(arm("0 1 0", joint="shoulder&lt;1&gt;&quot;", link="upper&amp;lower'"))
    body = load(path, client)
    assert p.getJointInfo(body, 0, physicsClientId=client)[1] == b'shoulder<1>"'
    assert max(agree(body, client, path)) <= TOL
    assert "upper&amp;lower'" in dpb.body_urdf(body, client)


def kuka_scene(client, gravity=(0.0, 0.0, 0.0)):
    """pybullet_data's kuka_iiwa, fixed, damping and motors off, at a bent pose."""
    body = load(KUKA, client)
    p.setGravity(*gravity, physicsClientId=client)      # after load's
    for j in range(-1, 7):
        p.changeDynamics(body, j, linearDamping=0, angularDamping=0, jointDamping=0, physicsClientId=client)
    for j, angle in enumerate(np.linspace(0.3, 2.1, 7) * (-1) ** np.arange(7)):
        p.setJointMotorControl2(body, j, p.VELOCITY_CONTROL, force=0, physicsClientId=client)
        p.resetJointState(body, j, angle, 0.1 * j, physicsClientId=client)
    return body


def pybullet_step(change, gravity=(0.0, 0.0, 0.0)) -> np.ndarray:
    """q̇⁺ of pybullet's own step, zero torques, after ``change(client, body)``."""
    c = p.connect(p.DIRECT)
    try:
        body = kuka_scene(c, gravity)
        change(c, body)
        p.setJointMotorControlArray(body, list(range(7)), p.TORQUE_CONTROL, forces=[0.0] * 7, physicsClientId=c)
        p.stepSimulation(physicsClientId=c)
        return np.array([s[1] for s in p.getJointStates(body, list(range(7)), physicsClientId=c)])
    finally:
        p.disconnect(physicsClientId=c)


def stepper_step(change, gravity=(0.0, 0.0, 0.0)) -> np.ndarray:
    """q̇⁺ of our stepper made before ``change(client, body)``, zero torques (damping 0, as
    pybullet's after changeDynamics(jointDamping=0), which getJointInfo does not show)."""
    c = p.connect(p.DIRECT)
    try:
        body = kuka_scene(c, gravity)
        stepper = dpb.DynamicsStepper(body, backend="newton_euler", physicsClientId=c, damping=[0.0] * 7)
        change(c, body)
        return np.array(stepper.step([0.0] * 7)[1])
    finally:
        p.disconnect(physicsClientId=c)


@pytest.mark.parametrize("what", ["setGravity", "changeDynamics mass", "base moved"])
def test_the_stepper_follows_the_scene_changed_after_it_was_made(what):
    change, gravity = {
        "setGravity": (lambda c, b: p.setGravity(0, 0, -9.81, physicsClientId=c), (0.0, 0.0, 0.0)),
        "changeDynamics mass": (lambda c, b: p.changeDynamics(b, 6, mass=20.0, physicsClientId=c), (0, 0, -9.81)),
        "base moved": (lambda c, b: p.resetBasePositionAndOrientation(b, [0, 0, 0.2], p.getQuaternionFromEuler(
            [0.4, -0.3, 0.2]), physicsClientId=c), (0, 0, -9.81)),
    }[what]
    before = stepper_step(lambda c, b: None, gravity)
    ours, theirs = stepper_step(change, gravity), pybullet_step(change, gravity)
    assert rel(before, theirs) > 1e-3                  # the change matters
    assert rel(ours, theirs) <= TOL


def test_the_stepper_refuses_a_body_replaced_under_it(client):
    body = kuka_scene(client)
    stepper = dpb.DynamicsStepper(body, backend="newton_euler", physicsClientId=client)
    stepper.step([0.0] * 7)
    p.removeBody(body, physicsClientId=client)
    assert load(PANDA, client) == body
    with pytest.raises(InputError, match="not the body this stepper was made for"):
        stepper.step([0.0] * 7)
