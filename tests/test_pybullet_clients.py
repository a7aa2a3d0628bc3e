"""The drop-ins answer for the right pybullet client: pybullet's positional ``flags``, a
BulletClient over a module-level swap, several clients connected (issue: silent wrong
numbers).  The reference is pybullet's own answer for the client the call is for."""

import numpy as np
import pybullet_data
import pytest
from pybullet_utils import bullet_client

import dyn_plugin as dp
from dyn_plugin import pybullet_bridge as dpb
from dyn_plugin.backends.pybullet_backend import c_level_output_silenced, import_pybullet
from dyn_plugin.robots import robot_path

p = import_pybullet()
KUKA = f"{pybullet_data.getDataPath()}/kuka_iiwa/model.urdf"


def load(client, path):
    with c_level_output_silenced():
        body = p.loadURDF(path, useFixedBase=True, flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
    p.setGravity(0, 0, -9.81, physicsClientId=client)
    return body


def rel(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    return float(np.max(np.abs(ours - theirs) / np.maximum(1.0, np.abs(theirs))))


@pytest.fixture
def two_clients():
    """Two clients whose body 0 are different robots: the PUMA-560 (6 joints) and a
    7-joint kuka_iiwa with the first six joints' state the same length prefix."""
    first, second = p.connect(p.DIRECT), p.connect(p.DIRECT)
    bodies = load(first, str(robot_path("puma560"))), load(second, str(robot_path("stanford")))
    yield (first, second), bodies
    for client in (first, second):
        p.disconnect(physicsClientId=client)


@pytest.fixture
def swapped(monkeypatch):
    """pybullet's module with our drop-ins swapped in (restored after the test)."""
    for name in dpb.DROP_INS:
        monkeypatch.setattr(p, name, getattr(dpb, name), raising=False)
    return p


def test_fifth_positional_argument_is_flags_as_in_pybullet(two_clients):
    (first, second), (puma, stanford) = two_clients
    q, qd, qdd = [0.3] * 6, [0.2] * 6, [0.1] * 6
    theirs = p.calculateInverseDynamics(stanford, q, qd, qdd, 0, second)
    assert rel(dpb.calculateInverseDynamics(stanford, q, qd, qdd, 0, second), theirs) <= 1e-9
    assert rel(dpb.calculateMassMatrix(stanford, q, 0, second), p.calculateMassMatrix(stanford, q, 0, second)) <= 1e-9
    # flags=1 is pybullet's multi-DOF layout (7 padded base entries first): never read as a client id
    layout = [0.0] * 7 + q
    M1 = np.array(dpb.calculateMassMatrix(stanford, layout, 1, second))
    assert M1.shape == (13, 13) and rel(M1[7:, 7:], p.calculateMassMatrix(stanford, q, 0, second)) <= 1e-9
    tau = dpb.calculateInverseDynamics(stanford, layout, [0.0] * 7 + qd, [0.0] * 7 + qdd, 1, second)
    assert rel(tau[7:], theirs) <= 1e-9 and tau[:7] == (0.0,) * 7
    with pytest.raises(dp.InputError, match="clients are connected"):
        dpb.calculateInverseDynamics(stanford, layout, [0.0] * 7 + qd, [0.0] * 7 + qdd, 1)


def test_call_without_client_id_is_refused_when_several_are_connected(two_clients, swapped):
    (first, second), (puma, stanford) = two_clients
    client = bullet_client.BulletClient.__new__(bullet_client.BulletClient)   # wrap the second client
    client._client, client._shapes, client._pid = second, {}, None
    with pytest.raises(dp.InputError, match="pass physicsClientId"):
        client.calculateMassMatrix(stanford, [0.3] * 6)       # a plain swap cannot know the client
    with pytest.raises(dp.InputError, match="pass physicsClientId"):
        swapped.calculateInverseDynamics(puma, [0.3] * 6, [0.0] * 6, [0.0] * 6)


def test_install_on_a_bullet_client_answers_for_that_client(two_clients):
    (first, second), (puma, stanford) = two_clients
    native = {}
    for client_id, body in ((first, puma), (second, stanford)):
        native[client_id] = (p.calculateMassMatrix(body, [0.3] * 6, physicsClientId=client_id),
                             p.calculateInverseDynamics(body, [0.3] * 6, [0.2] * 6, [0.1] * 6, physicsClientId=client_id))
    for client_id, body in ((first, puma), (second, stanford)):
        client = bullet_client.BulletClient.__new__(bullet_client.BulletClient)
        client._client, client._shapes, client._pid = client_id, {}, None
        dpb.install(client)
        M = client.calculateMassMatrix(body, [0.3] * 6)
        tau = client.calculateInverseDynamics(body, [0.3] * 6, [0.2] * 6, [0.1] * 6)
        assert rel(M, native[client_id][0]) <= 1e-9
        assert rel(tau, native[client_id][1]) <= 1e-9
        assert client.calculateGravity(body, [0.3] * 6) == dpb.calculateGravity(body, [0.3] * 6, client_id)


ONE_CLIENT = """
import numpy as np, pybullet as p, pybullet_data
import dyn_plugin as dp
from dyn_plugin import pybullet_bridge as dpb
native = p.calculateMassMatrix
p.calculateMassMatrix = dpb.calculateMassMatrix
placeholder = p.connect(p.DIRECT)
client = p.connect(p.DIRECT)
p.disconnect(physicsClientId=placeholder)          # the one connected client is not client 0
assert dpb.connected_clients() == (client,) and client != 0
body = p.loadURDF(pybullet_data.getDataPath() + "/kuka_iiwa/model.urdf", useFixedBase=True,
                  flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
q = list(np.linspace(-0.5, 0.7, 7))
ours = np.array(p.calculateMassMatrix(body, q))    # the swapped function, no client id
theirs = np.array(native(body, q, physicsClientId=client))
print(float(np.max(np.abs(ours - theirs) / np.maximum(1.0, np.abs(theirs)))))
for call in (lambda: dpb.calculateMassMatrix(body, q, 0, "1"),
             lambda: (p.disconnect(physicsClientId=client), dpb.calculateMassMatrix(0, [0.0] * 7))):
    try:
        call()
    except dp.InputError as exc:
        print("refused:", exc)
"""


def test_the_one_connected_client_is_used_whatever_its_id():
    """In a process of its own, so that no other test's client is connected."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", ONE_CLIENT], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    assert float(lines[0]) <= 1e-9
    assert "physicsClientId must be a pybullet client id" in lines[1]
    assert "no pybullet client is connected" in lines[2]
